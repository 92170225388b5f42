package service

import (
	"testing"
	"time"
)

// TestReserve: the pacing rules of D16 on the brand's time line, by table.
func TestReserve(t *testing.T) {
	t0 := time.Date(2025, 6, 10, 17, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, c := range []struct {
		name      string
		now, next time.Time
		rate      float64
		want      int
		single    bool
		start     time.Time
		n         int
		wait      time.Duration
	}{
		{"campaign, line free: a tenth of a second's worth", t0, time.Time{}, 100, 500, false, t0, 10, 0},
		{"campaign, fewer wanted", t0, t0.Add(-time.Second), 100, 3, false, t0, 3, 0},
		{"campaign, line busy: wait, reserve nothing", t0, t0.Add(ms(40)), 100, 500, false, time.Time{}, 0, ms(40)},
		{"campaign, cut at the second's end", t0.Add(ms(950)), time.Time{}, 100, 500, false, t0.Add(ms(950)), 5, 0},
		{"campaign, no room before the second's end", t0.Add(ms(995)), time.Time{}, 100, 500, false, time.Time{}, 0, ms(5)},
		{"slow rate: one message, no cut", t0.Add(ms(900)), time.Time{}, 0.5, 500, false, t0.Add(ms(900)), 1, 0},
		{"single, line busy within the lookahead: reserve after it", t0, t0.Add(ms(60)), 100, 1, true, t0.Add(ms(60)), 1, ms(60)},
		{"single, too far ahead: wait", t0, t0.Add(ms(300)), 100, 1, true, time.Time{}, 0, ms(200)},
		{"single at the second's end: the next second", t0.Add(ms(900)), t0.Add(ms(950)), 10, 1, true, t0.Add(time.Second), 1, ms(100)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := reserve(c.now, c.next, c.rate, c.want, c.single)
			if !r.start.Equal(c.start) || r.n != c.n || r.wait != c.wait {
				t.Errorf("reserve = %v n=%d wait=%v; want %v n=%d wait=%v", r.start, r.n, r.wait, c.start, c.n, c.wait)
			}
		})
	}
}

// TestReserveNeverExceedsRate: reservations made back to back, at odd
// rates and odd starting instants, never put more than rate sends in one
// clock second (D16).
func TestReserveNeverExceedsRate(t *testing.T) {
	for _, rate := range []float64{1, 3, 7, 15, 20, 33.3, 100, 1000} {
		now := time.Date(2025, 6, 10, 17, 0, 0, 123456000, time.UTC)
		var next time.Time
		perSecond := map[int64]int{}
		for range 2000 {
			r := reserve(now, next, rate, 1<<20, false)
			if r.n == 0 {
				now = now.Add(r.wait)
				continue
			}
			perSecond[r.start.Unix()] += r.n
			next = r.start.Add(span(r.n, rate))
			now = next
		}
		for s, n := range perSecond {
			if float64(n) > rate {
				t.Errorf("rate %v: %d sends in second %d", rate, n, s)
			}
		}
	}
}
