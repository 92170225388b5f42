package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
)

// ImportUsersArgs asks a worker to run a CSV import of users (issue #7).
type ImportUsersArgs struct {
	BrandID  int64 `json:"brand_id"`
	ImportID int64 `json:"import_id"`
}

// Kind implements river.JobArgs.
func (ImportUsersArgs) Kind() string { return "import_users" }

// QueueImports holds import jobs, so a long import never takes a worker
// that sends messages.
const QueueImports = "imports"

// importWorkers bounds the imports running at once on a node: each is a
// stream of write transactions, and SQLite has one writer.
const importWorkers = 2

// InsertOpts puts imports in their queue.
func (ImportUsersArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueImports, MaxAttempts: 10}
}

// ImportRunner runs an import until the given time; done says it ended
// (completed or failed). final says no retry follows an error.
type ImportRunner interface {
	Work(ctx context.Context, brandID, importID int64, until time.Time, final bool) (done bool, err error)
}

// importWorker runs an import in slices: a slice ends well before the job
// could be rescued as stuck, and the job snoozes to run the next one at
// once. An import of any size so never looks stuck, and one that was
// stopped (a crash, a shutdown) goes on from its last committed batch.
type importWorker struct {
	river.WorkerDefaults[ImportUsersArgs]
	r     ImportRunner
	slice time.Duration
}

func newImportWorker(r ImportRunner, rescueAfter time.Duration) *importWorker {
	return &importWorker{r: r, slice: min(15*time.Second, rescueAfter/3)}
}

func (w *importWorker) Work(ctx context.Context, job *river.Job[ImportUsersArgs]) error {
	done, err := w.r.Work(ctx, job.Args.BrandID, job.Args.ImportID, time.Now().Add(w.slice), job.Attempt >= job.MaxAttempts)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// The node is stopping: go on later without spending an attempt.
		return river.JobSnooze(0)
	case err != nil:
		return err
	case !done:
		return river.JobSnooze(0) // next slice; snoozing spends no attempt
	}
	return nil
}

// Timeout leaves the last batch of a slice time to commit, and still ends
// before the job could be rescued.
func (w *importWorker) Timeout(*river.Job[ImportUsersArgs]) time.Duration { return 2 * w.slice }

// addImports registers the import worker and its queue.
func addImports(workers *river.Workers, cfg *river.Config, r ImportRunner) {
	river.AddWorker(workers, newImportWorker(r, cfg.RescueStuckJobsAfter))
	cfg.Queues[QueueImports] = river.QueueConfig{MaxWorkers: importWorkers}
}

// EnqueueImport inserts an import's job inside tx, so the job exists if
// and only if the import does.
func (q *Queue) EnqueueImport(ctx context.Context, tx *sql.Tx, brandID, importID int64) error {
	if _, err := q.client.InsertTx(ctx, tx, ImportUsersArgs{BrandID: brandID, ImportID: importID}, nil); err != nil {
		return fmt.Errorf("jobs: enqueue import: %w", err)
	}
	return nil
}
