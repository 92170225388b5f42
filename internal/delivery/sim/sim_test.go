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

// TestFlushPastAFailingReport: a report that keeps failing is put back
// for Retry and tried again after it, without holding back the reports
// due after it (issues #4, #31 item 13).
func TestFlushPastAFailingReport(t *testing.T) {
	ctx := t.Context()
	_, p := simWithDue(t, 3)
	p.Retry = 20 * time.Millisecond
	sink := &failingSink{fail: 1, calls: map[int64]int{}}
	if err := p.Flush(ctx, sink); err == nil {
		t.Error("Flush hid the failing report")
	}
	if err := p.Flush(ctx, sink); err != nil || sink.calls[1] != 1 {
		t.Errorf("a Flush within Retry: %v, message 1 tried %d times; want it left until Retry", err, sink.calls[1])
	}
	time.Sleep(p.Retry)
	if err := p.Flush(ctx, sink); err == nil {
		t.Error("the Flush after Retry hid the failing report")
	}
	if sink.calls[1] != 2 || sink.calls[2] != 1 || sink.calls[3] != 1 {
		t.Errorf("reports per message %v: want message 1 tried once per Retry, 2 and 3 reported once", sink.calls)
	}
}

// notYetSink cannot take the reports of the first stuck messages yet
// (their sends are not recorded) and takes the others.
type notYetSink struct {
	stuck    int64
	mu       sync.Mutex
	reported map[int64]int
}

func (s *notYetSink) ApplyStatus(_ context.Context, u delivery.StatusUpdate) error {
	if u.MessageID <= s.stuck {
		return delivery.ErrNotYet
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reported[u.MessageID]++
	return nil
}

func (s *notYetSink) ReceiveInbound(context.Context, delivery.Inbound) (string, error) {
	return "", nil
}

// TestFlushPastStuckRecords: more records than one read takes, due first,
// that the sink cannot take: each Flush reports every other record, and
// leaves the stuck ones unreported (issue #31 item 13).
func TestFlushPastStuckRecords(t *testing.T) {
	ctx := t.Context()
	db, p := simWithDue(t, 14)
	p.ReportBatch = 4
	sink := &notYetSink{stuck: 9, reported: map[int64]int{}}
	for range 2 {
		if err := p.Flush(ctx, sink); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(10); id <= 14; id++ {
		if sink.reported[id] != 1 {
			t.Errorf("message %d reported %d times behind 9 stuck records, want once", id, sink.reported[id])
		}
	}
	due, err := db.SimDue(ctx, time.Now(), store.SimCursor{}, 100)
	if err != nil || len(due) != 9 {
		t.Errorf("%d records left (%v), want the 9 stuck ones", len(due), err)
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
	due, err := db.SimDue(ctx, time.Now(), store.SimCursor{}, 10)
	if err != nil || len(due) != 0 {
		t.Fatalf("%d reports still due after Flush (%v)", len(due), err)
	}
}
