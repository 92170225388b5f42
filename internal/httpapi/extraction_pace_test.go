package httpapi_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/rules"
)

// slowExtractor runs the rules extractor after holding each call for a
// while, and records the calls' spans.
type slowExtractor struct {
	hold  time.Duration
	mu    sync.Mutex
	spans [][2]time.Time // start, end
}

func (x *slowExtractor) Extract(ctx context.Context, r extract.Request) ([]extract.Value, error) {
	start := time.Now()
	time.Sleep(x.hold)
	v, err := rules.Extractor{}.Extract(ctx, r)
	x.mu.Lock()
	x.spans = append(x.spans, [2]time.Time{start, time.Now()})
	x.mu.Unlock()
	return v, err
}

// most is how many calls ran at once at most.
func (x *slowExtractor) most() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, a := range x.spans {
		at := 0
		for _, b := range x.spans {
			if !b[0].After(a[0]) && b[1].After(a[0]) {
				at++
			}
		}
		n = max(n, at)
	}
	return n
}

// inProcessExtractor is slowExtractor marked as the node's own CPU work.
type inProcessExtractor struct{ *slowExtractor }

func (inProcessExtractor) InProcess() {}

// TestExtractionSweepPacing: a sweep runs an in-process extractor's calls
// (the rules) one at a time, each followed by a pause, so the node's
// requests find a core free (#19: inbound p99); a model server's calls
// run many at once (D20).
func TestExtractionSweepPacing(t *testing.T) {
	t.Parallel()
	const contacts = 6
	for _, tc := range []struct {
		name      string
		inProcess bool
	}{{"InProcess", true}, {"ModelServer", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := &slowExtractor{hold: 20 * time.Millisecond}
			var ex extract.Extractor = x
			if tc.inProcess {
				ex = inProcessExtractor{x}
			}
			e := apitest.New(t, noSweeper, func(c *app.Config) { c.Extractor = ex })
			exSizeField(t, e, e.BrandA.ID)
			var last int64
			for i := range contacts {
				last = simMessage(t, simInbound(t, e, "+1415555267"+string(rune('0'+i)), "I'm a size M")).ID
			}
			exSweep(t, e, last)
			x.mu.Lock()
			calls := len(x.spans)
			x.mu.Unlock()
			if calls != contacts {
				t.Fatalf("%d extractor calls, want %d (one per contact)", calls, contacts)
			}
			most := x.most()
			if tc.inProcess {
				if most != 1 {
					t.Errorf("%d in-process extractions ran at once, want 1", most)
				}
				x.mu.Lock()
				defer x.mu.Unlock()
				for i := 1; i < len(x.spans); i++ {
					// The pause is as long as the call, up to 10 ms; timers
					// never fire early.
					if gap := x.spans[i][0].Sub(x.spans[i-1][1]); gap < 10*time.Millisecond {
						t.Errorf("call %d started %v after the one before ended, want a pause of 10 ms", i, gap)
					}
				}
			} else if most < 2 {
				t.Errorf("a model server's extractions ran one at a time, want several at once")
			}
		})
	}
}
