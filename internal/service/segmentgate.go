package service

import (
	"context"
	"sync"
	"time"

	"github.com/parleyhq/parley"
)

// Segment queries (count, users, preview — the console's live count
// calls the same) read every contact of a brand; a few at once held the
// database for every brand (issue #31 item 2). Each node lets a brand run
// at most SegmentQueries of them at once; one more waits up to
// SegmentQueryWait for a slot, then is refused with rate_limited and
// Retry-After. The store, in turn, gives all segment queries together at
// most half of its reader connections, so other reads always find one.

// Defaults of the segment query bound (SetSegmentQueries).
const (
	DefaultSegmentQueries   = 2
	DefaultSegmentQueryWait = 2 * time.Second
)

// segmentGate holds one semaphore per brand.
type segmentGate struct {
	per  int
	wait time.Duration

	mu    sync.Mutex
	slots map[int64]chan struct{}
	peak  map[int64]int // the most held at once, for tests
}

// SetSegmentQueries sets how many segment queries a brand runs at once on
// this node (0: DefaultSegmentQueries) and how long one more waits for a
// slot before rate_limited (0: DefaultSegmentQueryWait).
func (s *Service) SetSegmentQueries(perBrand int, wait time.Duration) {
	s.segGate = newSegmentGate(perBrand, wait)
}

func newSegmentGate(per int, wait time.Duration) *segmentGate {
	if per <= 0 {
		per = DefaultSegmentQueries
	}
	if wait <= 0 {
		wait = DefaultSegmentQueryWait
	}
	return &segmentGate{per: per, wait: wait, slots: map[int64]chan struct{}{}, peak: map[int64]int{}}
}

func (s *Service) segmentGate() *segmentGate {
	s.segGateOnce.Do(func() {
		if s.segGate == nil {
			s.segGate = newSegmentGate(0, 0)
		}
	})
	return s.segGate
}

// enter takes one of the brand's slots, waiting up to g.wait, and returns
// how to give it back. ctx ending while it waits is ctx's error.
func (g *segmentGate) enter(ctx context.Context, brandID int64) (func(), error) {
	g.mu.Lock()
	sem := g.slots[brandID]
	if sem == nil {
		sem = make(chan struct{}, g.per)
		g.slots[brandID] = sem
	}
	g.mu.Unlock()
	release := func() { <-sem }
	select {
	case sem <- struct{}{}:
		g.held(brandID, sem)
		return release, nil
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		g.held(brandID, sem)
		return release, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, &parley.RetryLater{After: time.Second, Err: parley.Errorf(parley.ERateLimited,
			"Too many segment queries (count, users, preview) of this brand at once: at most %d run together. Retry after 1 s.", g.per)}
	}
}

func (g *segmentGate) held(brandID int64, sem chan struct{}) {
	g.mu.Lock()
	g.peak[brandID] = max(g.peak[brandID], len(sem))
	g.mu.Unlock()
}

// EnterSegmentQuery takes one of the brand's segment query slots, as
// count, users and preview do, and returns how to give it back: a caller
// that evaluates the brand's segments in the background (flows'
// segment_entered checks, D21) takes its turn with the rest.
// ERateLimited after SegmentQueryWait.
func (s *Service) EnterSegmentQuery(ctx context.Context, brandID int64) (func(), error) {
	return s.segmentGate().enter(ctx, brandID)
}

// SegmentQueryPeak is the most segment queries of the brand that ran at
// once on this node: tests check the bound with it.
func (s *Service) SegmentQueryPeak(brandID int64) int {
	g := s.segmentGate()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak[brandID]
}
