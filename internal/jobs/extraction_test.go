package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type sweepRecorder struct {
	every, d time.Duration
	stopped  bool
	calls    int
}

func (r *sweepRecorder) RunExtractionSweeper(_ context.Context, every, d time.Duration, stop <-chan struct{}) {
	r.every, r.d = every, d
	select {
	case <-stop:
		r.stopped = true
	default:
	}
	r.calls++
}

// The extraction sweep's job (D20, #19): a run stays well under the
// rescue delay, so a live sweeper is not taken for a dead one; a node
// shutting down ends it with its context's error (retried at once); a
// run that ends snoozes for no time, so the job is available again at
// once; the stop signal of a node started again is fresh. It is one job
// for the service: unique among the jobs not finished. (Runs on two
// nodes: TestExtractionSweepJob in httpapi.)
func TestExtractionWorker(t *testing.T) {
	r := &sweepRecorder{}
	stop := newStopSignal()
	w := newExtractionWorker(r, 250*time.Millisecond, time.Minute, stop)
	if w.run != 20*time.Second {
		t.Errorf("rescue after 1 min: a run of %v, want 20s", w.run)
	}
	if w := newExtractionWorker(r, time.Second, 3*time.Second, stop); w.run != time.Second {
		t.Errorf("rescue after 3 s: a run of %v, want 1s", w.run)
	}
	job := &river.Job[ExtractionSweepArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 1000, State: rivertype.JobStateRunning}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Work(ctx, job); !errors.Is(err, context.Canceled) {
		t.Errorf("Work on a canceled context = %v, want context.Canceled", err)
	}
	if r.calls != 1 || r.every != 250*time.Millisecond || r.d != 20*time.Second || r.stopped {
		t.Errorf("swept %d times, every %v for %v, stopped %v; want once, every 250ms for 20s, not stopped", r.calls, r.every, r.d, r.stopped)
	}
	var snooze *rivertype.JobSnoozeError
	if err := w.Work(context.Background(), job); !errors.As(err, &snooze) || snooze.Duration != 0 {
		t.Errorf("a run that ended: Work = %v, want a snooze for no time", err)
	}
	stop.stop()
	stop.stop() // a second Stop is harmless
	w.Work(ctx, job)
	if !r.stopped {
		t.Error("the run did not see its node stop")
	}
	stop.reset()
	r.stopped = false
	w.Work(ctx, job)
	if r.stopped {
		t.Error("a node started again still tells its run to stop")
	}
	if got := time.Until(w.NextRetry(job)); got > time.Second {
		t.Errorf("a failed run is retried in %v, want at once", got)
	}
	if w.Timeout(job) != -1 {
		t.Error("the sweep job has a queue timeout; want none (the service bounds each batch)")
	}
	opts := (ExtractionSweepArgs{}).InsertOpts()
	if opts.Queue != QueueExtraction || !opts.UniqueOpts.ByArgs || len(opts.UniqueOpts.ByState) == 0 {
		t.Errorf("InsertOpts = %+v, want the extraction queue, unique by args among the unfinished", opts)
	}
}
