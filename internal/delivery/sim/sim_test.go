package sim_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/delivery/sim"
	"github.com/parleyhq/parley/internal/store"
)

// failingSink refuses the reports of one message and counts every call.
type failingSink struct {
	mu    sync.Mutex
	fail  int64
	calls map[int64]int
}

func (s *failingSink) ApplyStatus(_ context.Context, u delivery.StatusUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[u.MessageID]++
	if u.MessageID == s.fail {
		return errors.New("database busy")
	}
	return nil
}

func (s *failingSink) ReceiveInbound(context.Context, delivery.Inbound) (string, error) {
	return "", nil
}

// simWithDue returns a simulator on a fresh database holding n sent
// messages (ids 1…n) whose reports are due now.
func simWithDue(t *testing.T, n int64) (*store.DB, *sim.Provider) {
	t.Helper()
	db, err := app.OpenDB(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "p.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := sim.New(db)
	p.Delay = 0
	for id := int64(1); id <= n; id++ {
		if _, err := p.Send(t.Context(), delivery.Message{ID: id, To: "+14155552671", Body: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	return db, p
}

// TestFlushPastAFailingReport: a report that keeps failing is retried on
// the next tick without holding back the reports due after it (issue #4).
func TestFlushPastAFailingReport(t *testing.T) {
	ctx := t.Context()
	_, p := simWithDue(t, 3)
	sink := &failingSink{fail: 1, calls: map[int64]int{}}
	if err := p.Flush(ctx, sink); err == nil {
		t.Error("Flush hid the failing report")
	}
	if err := p.Flush(ctx, sink); err == nil {
		t.Error("the second Flush hid the failing report")
	}
	if sink.calls[1] != 2 || sink.calls[2] != 1 || sink.calls[3] != 1 {
		t.Errorf("reports per message %v: want message 1 tried on each flush, 2 and 3 reported once", sink.calls)
	}
}

// barrierSink answers a report only once want reports are in flight at once.
type barrierSink struct {
	want    int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (s *barrierSink) ApplyStatus(ctx context.Context, _ delivery.StatusUpdate) error {
	s.mu.Lock()
	if s.arrived++; s.arrived == s.want {
		close(s.all)
	}
	s.mu.Unlock()
	select {
	case <-s.all:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("reports were applied one at a time")
	}
}

func (s *barrierSink) ReceiveInbound(context.Context, delivery.Inbound) (string, error) {
	return "", nil
}

// TestFlushReportsConcurrently: reports are applied Reporters at a time, as
// a carrier's callbacks arrive, so one report's commit does not hold back
// the next (issue #4's speed on PostgreSQL).
func TestFlushReportsConcurrently(t *testing.T) {
	ctx := t.Context()
	db, p := simWithDue(t, 8)
	p.Reporters = 4
	if err := p.Flush(ctx, &barrierSink{want: 4, all: make(chan struct{})}); err != nil {
		t.Fatal(err)
	}
	due, err := db.SimDue(ctx, time.Now(), 10)
	if err != nil || len(due) != 0 {
		t.Fatalf("%d reports still due after Flush (%v)", len(due), err)
	}
}
