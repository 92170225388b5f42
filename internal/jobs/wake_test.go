package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/store"
)

func TestMain(m *testing.M) { apitest.Main(m) }

// recorder works deliveries: it holds a message once (a snooze of 0) if
// told to, and reports each delivery it lets through.
type recorder struct {
	mu   sync.Mutex
	hold map[int64]bool
	done chan int64
}

func (r *recorder) Deliver(_ context.Context, _, messageID int64, _ int, _ bool) error {
	r.mu.Lock()
	hold := r.hold[messageID]
	delete(r.hold, messageID)
	r.mu.Unlock()
	if hold {
		return &jobs.Held{Until: time.Now(), Wait: 0}
	}
	r.done <- messageID
	return nil
}

// TestWorkersWakeWithoutPolling (issue #35): workers poll rarely, so a job
// this process queues must wake them itself. With a poll of an hour, a
// job inserted in a transaction is worked once it commits and the queue
// is woken, and a job snoozed briefly is worked again when due; either
// left to the poll would wait an hour, and the test fail at its deadline.
func TestWorkersWakeWithoutPolling(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Migrate(ctx, db.Writer(), db.Engine()); err != nil {
		t.Fatal(err)
	}
	r := &recorder{hold: map[int64]bool{3: true}, done: make(chan int64, 4)}
	q, err := jobs.Open(db.Writer(), db.Engine(), &jobs.WorkerConfig{Deliverer: r, Concurrency: 4, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer q.Stop(ctx)

	queue := func(id int64) {
		p := &jobs.Pending{}
		p.Delivery(1, id)
		queues := p.Queues()
		tx, err := db.Writer().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Insert(ctx, tx, p); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		q.Wake(queues)
	}
	worked := func(id int64, why string) {
		t.Helper()
		select {
		case got := <-r.done:
			if got != id {
				t.Fatalf("worked message %d, want %d", got, id)
			}
		case <-time.After(time.Minute):
			t.Fatalf("message %d not worked within a minute (the poll is an hour): %s", id, why)
		}
	}
	// The first may be found by the fetch every start makes; the others
	// come after it. Four workers: a fetch that fills every worker would
	// fetch again when one is done (River), and find the next job without
	// a wake.
	queue(1)
	worked(1, "the start's fetch or the wake")
	queue(2)
	worked(2, "the commit's wake did not reach the worker")
	queue(3)
	worked(3, "the snooze's wake did not reach the worker")
}
