package service

import (
	"context"
	"math"
	"time"

	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/store"
)

// Pacing (D16): a brand's sends never exceed its send_rate. Every send —
// a campaign's batch, a single message — reserves its span of the brand's
// time line in send_pacing (n messages take n/rate seconds) in a
// transaction, so the rate holds across nodes; it goes at the start of
// its span. Two more rules make the bound exact in every whole second of
// the clock: a span never crosses a second's end (a batch is cut short
// instead), so the spans that start in a second fit in it and carry at
// most rate messages; and a campaign batch spans at most pacingWindow,
// so a single message never waits behind more than that.
//
// Single messages overtake campaigns: a campaign reserves only when the
// line is free now, while a single message may reserve up to its
// lookahead ahead and waits for its span; the campaign then waits for it.

// pacingWindow is the longest span of a campaign batch at a rate: a
// tenth of a second's worth of messages.
const pacingWindow = 100 * time.Millisecond

// reservation is a decision on the brand's time line: send n messages
// from start, or nothing now and look again after wait.
type reservation struct {
	start time.Time
	n     int
	// wait is how long from now until start (n > 0) or until a reservation
	// may be tried again (n = 0).
	wait time.Duration
}

// span is how long n messages take at rate, rounded up to the microsecond
// the store keeps.
func span(n int, rate float64) time.Duration {
	return time.Duration(math.Ceil(float64(n)*1e6/rate)) * time.Microsecond
}

// pacedBatch is the most messages a campaign batch takes at rate.
func pacedBatch(rate float64) int {
	return max(1, int(rate*pacingWindow.Seconds()))
}

// lookahead is how far ahead of now a single message may reserve.
func lookahead(rate float64) time.Duration { return max(pacingWindow, span(1, rate)) }

// reserve decides a reservation of up to want messages at now, when the
// brand's line is free from next on. single selects a single message's
// rule (it may reserve ahead; want is 1).
func reserve(now, next time.Time, rate float64, want int, single bool) reservation {
	base := now
	switch {
	case !single && next.After(now):
		return reservation{wait: next.Sub(now)}
	case single && next.After(now.Add(lookahead(rate))):
		return reservation{wait: next.Add(-lookahead(rate)).Sub(now)}
	case next.After(now):
		base = next
	}
	n := want
	if !single {
		n = min(want, pacedBatch(rate))
	}
	if rate >= 1 {
		end := base.Truncate(time.Second).Add(time.Second)
		if room := end.Sub(base); span(n, rate) > room {
			n = int(float64(room.Microseconds())*rate/1e6 + 1e-9)
			for n > 0 && span(n, rate) > room {
				n--
			}
			if n == 0 {
				if !single {
					return reservation{wait: end.Sub(now)}
				}
				base, n = end, 1
			}
		}
	}
	return reservation{start: base, n: n, wait: max(0, base.Sub(now))}
}

// paceOne reserves the slot of one single message of the brand when the
// brand has a send rate (rate > 0), and waits for it. A slot too far ahead (single
// messages queued more than the lookahead) is a *jobs.Held: the job
// snoozes and tries again then.
func (s *Service) paceOne(ctx context.Context, brandID int64, rate float64) error {
	if rate <= 0 {
		return nil
	}
	var r reservation
	if err := s.db.WithTx(ctx, func(tx *store.Tx) error {
		next, err := tx.LockPacing(ctx, brandID)
		if err != nil {
			return err
		}
		r = reserve(tx.Now(), next, rate, 1, true)
		if r.n == 0 {
			return nil
		}
		return tx.SetPacing(ctx, brandID, r.start.Add(span(r.n, rate)))
	}); err != nil {
		return err
	}
	if r.n == 0 {
		return &jobs.Held{Until: s.db.Now().Add(r.wait), Wait: r.wait}
	}
	if r.wait > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.wait):
		}
	}
	return nil
}
