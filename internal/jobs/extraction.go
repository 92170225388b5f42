package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// QueueExtraction carries the extraction sweep's job (D20): one job for
// the whole service, which sweeps the inbound texts for a while, then
// snoozes for no time, to be taken again at once by this node or another
// (River counts no attempt for a snooze). A job per text cost each
// inbound text a row in its transaction (the inbound p99, issue #19); one
// durable job reading the texts after a cursor kept in the database costs
// the texts nothing.
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
	// extractionRun is how long one run sweeps before it snoozes: under
	// the rescue delay (see newExtractionWorker), so that a live sweeper is
	// never taken for a dead one, and long enough that its snoozes and
	// fetches cost the queue nothing to speak of.
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

func newExtractionWorker(s ExtractionSweeper, every, rescueAfter time.Duration, stop *stopSignal) *extractionWorker {
	return &extractionWorker{s: s, every: every, run: min(extractionRun, rescueAfter/3), stop: stop}
}

type extractionWorker struct {
	river.WorkerDefaults[ExtractionSweepArgs]
	s          ExtractionSweeper
	every, run time.Duration
	stop       *stopSignal
}

// Work sweeps for one run (shorter when the node stops), then snoozes:
// the job is available again at once, to whichever worker node fetches
// it first. A sweep's errors do not fail the job (the sweeper logs them
// and tries again): a failed job would wait for its retry.
func (w *extractionWorker) Work(ctx context.Context, job *river.Job[ExtractionSweepArgs]) error {
	w.s.RunExtractionSweeper(ctx, w.every, w.run, w.stop.C())
	if err := ctx.Err(); err != nil {
		return err
	}
	return river.JobSnooze(0)
}

// Timeout: none from the queue. The service bounds each batch itself (a
// slow model's included), and a run that outlasts the rescue delay only
// lets a second sweeper in, which the claim in the cursor's row keeps off
// the batch being worked.
func (w *extractionWorker) Timeout(*river.Job[ExtractionSweepArgs]) time.Duration { return -1 }

// NextRetry tries a run that failed (its context ended with the node's
// shutdown, say) again at once.
func (w *extractionWorker) NextRetry(*river.Job[ExtractionSweepArgs]) time.Time { return time.Now() }
