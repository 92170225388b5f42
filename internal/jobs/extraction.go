package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
)

// QueueExtraction carries the extraction sweep's job (D20): one job for
// the whole service, which sweeps the inbound texts for a while, then
// completes and queues its successor in one transaction, to be taken at
// once by this node or another. (A snooze would do as well, since River
// counts no attempt for one; the hand-over leaves a finished row per run,
// a record of the runs.) A job per text cost each inbound text a row in
// its transaction (the inbound p99, issue #19); one durable job reading
// the texts after a cursor kept in the database costs the texts nothing.
const QueueExtraction = "extraction"

// ExtractionSweepArgs is the extraction sweep's job.
type ExtractionSweepArgs struct{}

// Kind implements river.JobArgs.
func (ExtractionSweepArgs) Kind() string { return "extraction_sweep" }

// InsertOpts keeps one sweep job at most among those not finished: every
// worker node inserts it when it starts, and River's leader every
// extractionEnsure, which adds one only when it is gone (discarded after
// its attempts ran out, deleted by hand).
func (ExtractionSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueExtraction, MaxAttempts: 1000, UniqueOpts: river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
			rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled},
	}}
}

// ExtractionSweeper sweeps the inbound texts every interval until d has
// passed, stop is closed or ctx ends (the service implements it).
type ExtractionSweeper interface {
	RunExtractionSweeper(ctx context.Context, every, d time.Duration, stop <-chan struct{})
}

// Bounds of the sweep job.
const (
	// extractionEnsure is how often River's leader makes sure the job exists.
	extractionEnsure = 30 * time.Second
	// extractionRun is how long one run sweeps before it hands over to its
	// successor: under the rescue delay (see newExtractionWorker), and long
	// enough that the runs' finished rows stay few (one per run, deleted
	// by River after a day).
	extractionRun = 20 * time.Second
)

func extractionJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(extractionEnsure),
		func() (river.JobArgs, *river.InsertOpts) { return ExtractionSweepArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}

// stopSignal tells the sweep's run that its node is stopping; a node
// started again gets a fresh one.
type stopSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newStopSignal() *stopSignal { return &stopSignal{ch: make(chan struct{})} }

// C is closed once the node stops.
func (s *stopSignal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *stopSignal) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.ch:
	default:
		close(s.ch)
	}
}

func (s *stopSignal) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ch = make(chan struct{})
}

func newExtractionWorker(s ExtractionSweeper, every, rescueAfter time.Duration, db *sql.DB, engine string, stop *stopSignal) *extractionWorker {
	return &extractionWorker{s: s, every: every, run: min(extractionRun, rescueAfter/3), db: db, engine: engine, stop: stop}
}

type extractionWorker struct {
	river.WorkerDefaults[ExtractionSweepArgs]
	s          ExtractionSweeper
	every, run time.Duration
	db         *sql.DB // River's
	engine     string
	stop       *stopSignal
}

// Work sweeps for one run (shorter when the node stops), then hands over
// to its successor. A sweep's errors do not fail the job (the sweeper
// logs them and tries again): a failed job would wait for its retry.
func (w *extractionWorker) Work(ctx context.Context, job *river.Job[ExtractionSweepArgs]) error {
	w.s.RunExtractionSweeper(ctx, w.every, w.run, w.stop.C())
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.handOver(ctx, job)
}

// handOver completes job and queues the next sweep in one transaction:
// there is always one sweep job not finished, and never two (the next
// is unique, and this one no longer counts once completed).
func (w *extractionWorker) handOver(ctx context.Context, job *river.Job[ExtractionSweepArgs]) error {
	client, err := river.ClientFromContextSafely[*sql.Tx](ctx)
	if err != nil {
		return err
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("jobs: extraction sweep: %w", err)
	}
	defer tx.Rollback()
	if w.engine == "postgres" {
		_, err = river.JobCompleteTx[*riverdatabasesql.Driver](ctx, tx, job)
	} else {
		_, err = river.JobCompleteTx[*riversqlite.Driver](ctx, tx, job)
	}
	if err != nil {
		return fmt.Errorf("jobs: extraction sweep: complete: %w", err)
	}
	if _, err := client.InsertTx(ctx, tx, ExtractionSweepArgs{}, nil); err != nil {
		return fmt.Errorf("jobs: extraction sweep: next: %w", err)
	}
	return tx.Commit()
}

// Timeout: none from the queue. The service bounds each batch itself (a
// slow model's included), and a run that outlasts the rescue delay only
// lets a second sweeper in, which the claim in the cursor's row keeps off
// the batch being worked.
func (w *extractionWorker) Timeout(*river.Job[ExtractionSweepArgs]) time.Duration { return -1 }

// NextRetry tries a run that failed (its context ended with the node's
// shutdown, say) again at once.
func (w *extractionWorker) NextRetry(*river.Job[ExtractionSweepArgs]) time.Time { return time.Now() }
