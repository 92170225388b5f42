package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
)

// PurgeInterval is how often expired replay-protection signatures and
// idempotency keys are deleted.
const PurgeInterval = time.Minute

// PurgeExpiredArgs asks a worker to delete expired signatures and
// idempotency keys (D2, D13). River's leader inserts it periodically, so
// one node runs it however many there are.
type PurgeExpiredArgs struct{}

// Kind implements river.JobArgs.
func (PurgeExpiredArgs) Kind() string { return "purge_expired" }

// Purger deletes what has expired.
type Purger interface {
	PurgeExpired(ctx context.Context) (int64, error)
}

type purgeWorker struct {
	river.WorkerDefaults[PurgeExpiredArgs]
	p      Purger
	logger *slog.Logger
}

func (w *purgeWorker) Work(ctx context.Context, job *river.Job[PurgeExpiredArgs]) error {
	n, err := w.p.PurgeExpired(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		w.logger.LogAttrs(ctx, slog.LevelDebug, "purged expired signatures and idempotency keys", slog.Int64("rows", n))
	}
	return nil
}

func purgeJob() *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(PurgeInterval),
		func() (river.JobArgs, *river.InsertOpts) { return PurgeExpiredArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
