package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is time that moves only when a worker sleeps or a fake request
// takes its service time, so schedules are exact.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestOpenLoopLatencyIncludesQueueing: one connection, arrivals every
// 10 ms, a server that takes 15 ms. The run does not slow down to the
// server's pace: arrival i waits for the connection, and its latency counts
// from its due time, 10·i ms, so it grows by 5 ms a request (15, 20, …,
// 60 ms). A closed loop on the same server sees 15 ms every time.
func TestOpenLoopLatencyIncludesQueueing(t *testing.T) {
	c := newFakeClock()
	var h Histogram
	var started atomic.Int64
	calls := 0
	do := func(int) bool { calls++; c.Sleep(15 * time.Millisecond); return true }
	elapsed, unsent := drive(context.Background(), c, plan{workers: 1, rate: 100, duration: 100 * time.Millisecond}, do, &h, &started)
	if calls != 10 || unsent != 0 {
		t.Fatalf("%d requests, %d unsent; want all 10 arrivals of 100 ms at 100/s sent", calls, unsent)
	}
	if elapsed != 150*time.Millisecond {
		t.Errorf("elapsed %v, want 150ms (10 × 15 ms back to back)", elapsed)
	}
	s := h.Snapshot()
	if got := time.Duration(s.Max); got != 60*time.Millisecond {
		t.Errorf("max latency %v, want 60ms: the last arrival was due at 90 ms and answered at 150 ms", got)
	}
	if got, want := s.Quantile(0.5), 35*time.Millisecond; absDiff(got, want) > want/halfSub {
		t.Errorf("p50 %v, want %v (the 5th of 15, 20, …, 60 ms)", got, want)
	}
	if got := s.Mean(); got != 37500*time.Microsecond {
		t.Errorf("mean %v, want 37.5ms", got)
	}

	// Closed loop on the same server: each request starts when the
	// previous one ends, so the queueing is invisible.
	c, h = newFakeClock(), Histogram{}
	calls = 0
	elapsed, _ = drive(context.Background(), c, plan{workers: 1, duration: 100 * time.Millisecond}, do, &h, &started)
	if calls != 7 || elapsed != 105*time.Millisecond {
		t.Errorf("closed loop: %d requests in %v, want 7 (at 0, 15, …, 90 ms) in 105ms", calls, elapsed)
	}
	if s := h.Snapshot(); s.Max != uint64(15*time.Millisecond) {
		t.Errorf("closed loop max %v, want 15ms", time.Duration(s.Max))
	}
}

// TestOpenLoopSendsEachArrivalOnce: every arrival of the schedule is sent
// exactly once, whatever the number of connections.
func TestOpenLoopSendsEachArrivalOnce(t *testing.T) {
	c := newFakeClock()
	var h Histogram
	var started, calls atomic.Int64
	do := func(int) bool { calls.Add(1); return true }
	_, unsent := drive(context.Background(), c, plan{workers: 8, rate: 1000, duration: time.Second}, do, &h, &started)
	if calls.Load() != 1000 || started.Load() != 1000 || unsent != 0 || h.Snapshot().N != 1000 {
		t.Errorf("%d calls, %d started, %d unsent, %d recorded; want 1000 arrivals, each once",
			calls.Load(), started.Load(), unsent, h.Snapshot().N)
	}
}

// TestOpenLoopGivesUpOnHopelessBacklog: arrivals still waiting a whole
// duration after the end are not sent, and are reported as unsent.
func TestOpenLoopGivesUpOnHopelessBacklog(t *testing.T) {
	c := newFakeClock()
	var h Histogram
	var started atomic.Int64
	do := func(int) bool { c.Sleep(100 * time.Millisecond); return true }
	_, unsent := drive(context.Background(), c, plan{workers: 1, rate: 100, duration: 100 * time.Millisecond}, do, &h, &started)
	// Sent at 0 and 100 ms; at 200 ms (= duration + duration) the run stops.
	if started.Load() != 2 || unsent != 8 {
		t.Errorf("%d sent, %d unsent; want 2 and 8", started.Load(), unsent)
	}
}

// TestFailedRequestsAreNotTimed: latency covers 2xx answers only.
func TestFailedRequestsAreNotTimed(t *testing.T) {
	c := newFakeClock()
	var h Histogram
	var started atomic.Int64
	n := 0
	do := func(int) bool { n++; c.Sleep(time.Millisecond); return n%2 == 0 }
	drive(context.Background(), c, plan{workers: 1, rate: 100, duration: time.Second}, do, &h, &started)
	if h.Snapshot().N != 50 || started.Load() != 100 {
		t.Errorf("%d timed of %d; want the 50 successes", h.Snapshot().N, started.Load())
	}
}

func absDiff(a, b time.Duration) time.Duration {
	if a > b {
		return a - b
	}
	return b - a
}

// TestInterruptedRunStops: a cancelled run starts nothing more and reports
// nothing unsent, in both modes.
func TestInterruptedRunStops(t *testing.T) {
	for _, rate := range []float64{0, 100} {
		ctx, cancel := context.WithCancel(context.Background())
		c := newFakeClock()
		var h Histogram
		var started atomic.Int64
		calls := 0
		do := func(int) bool {
			if calls++; calls == 3 {
				cancel()
			}
			c.Sleep(time.Millisecond)
			return true
		}
		_, unsent := drive(ctx, c, plan{workers: 1, rate: rate, duration: time.Second}, do, &h, &started)
		if calls != 3 || unsent != 0 {
			t.Errorf("rate %v: %d calls, %d unsent after the cancel; want 3 and 0", rate, calls, unsent)
		}
	}
}
