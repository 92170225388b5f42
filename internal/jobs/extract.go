package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"
)

// ExtractCustomDataArgs asks a worker to fill a contact's auto-collected
// custom data from the conversation up to one inbound message (D20, #19).
// The message is named by its id or, when the job is queued before the
// message is stored (MessageID 0), by its provider's id.
type ExtractCustomDataArgs struct {
	BrandID    int64  `json:"brand_id"`
	UserID     int64  `json:"user_id"`
	MessageID  int64  `json:"message_id,omitempty"`
	Provider   string `json:"provider,omitempty"`
	ProviderID string `json:"provider_id,omitempty"`
}

// Kind implements river.JobArgs.
func (ExtractCustomDataArgs) Kind() string { return "extract_custom_data" }

// QueueExtraction holds extraction jobs, so an extractor that is slow (a
// model server) never holds the workers that send messages.
const QueueExtraction = "extraction"

// extractWorkers bounds the extractions running at once on a node: each
// ends in one short write transaction, and a model server may answer slowly.
// extractFetchEvery is how often the queue looks for new jobs: seldom
// enough that the look-ups (each a write on SQLite, whose one writer the
// inbound texts need) take many jobs at once, and soon enough for D20's
// 10 s; the two bound a node to extractWorkers/extractFetchEvery = 320
// extractions a second.
const (
	extractWorkers    = 32
	extractFetchEvery = 100 * time.Millisecond
)

// InsertOpts puts extractions in their queue, behind every other job of
// it: they are never urgent (D20 allows 10 s).
func (ExtractCustomDataArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueExtraction, MaxAttempts: 5}
}

// Extraction adds the extraction that an inbound message causes.
func (p *Pending) Extraction(a ExtractCustomDataArgs) {
	p.params = append(p.params, river.InsertManyParams{Args: a})
}

// quietExtractions inserts p's extractions as scheduled jobs on
// PostgreSQL. River sends a NOTIFY with an available job (up to one per
// queue every 5 ms), and PostgreSQL commits the transactions that notify
// one at a time, with their disk flush, under one global lock: every
// inbound text's transaction would take turns there. River's scheduler
// makes a scheduled job available within 5 s, well inside D20's 10 s.
// SQLite sends no notifications, so its extractions go at once.
func (q *Queue) quietExtractions(p *Pending) {
	if q.engine != "postgres" {
		return
	}
	for i := range p.params {
		if _, ok := p.params[i].Args.(ExtractCustomDataArgs); ok && p.params[i].InsertOpts == nil {
			p.params[i].InsertOpts = &river.InsertOpts{ScheduledAt: time.Now()}
		}
	}
}

// ExtractionRunner runs one extraction; final says no retry follows an
// error. The service implements it.
type ExtractionRunner interface {
	RunExtraction(ctx context.Context, a ExtractCustomDataArgs, final bool) error
}

type extractWorker struct {
	river.WorkerDefaults[ExtractCustomDataArgs]
	r       ExtractionRunner
	timeout time.Duration
}

func (w *extractWorker) Work(ctx context.Context, job *river.Job[ExtractCustomDataArgs]) error {
	err := w.r.RunExtraction(ctx, job.Args, job.Attempt >= job.MaxAttempts)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return river.JobSnooze(0) // the node is stopping: go on later without spending an attempt
	}
	return err
}

// Timeout leaves an extractor that calls a model server time for its own
// retries, and still ends before the job could be rescued.
func (w *extractWorker) Timeout(*river.Job[ExtractCustomDataArgs]) time.Duration { return w.timeout }

// addExtraction registers the extraction worker and its queue.
func addExtraction(workers *river.Workers, cfg *river.Config, r ExtractionRunner) {
	river.AddWorker(workers, &extractWorker{r: r, timeout: min(45*time.Second, cfg.RescueStuckJobsAfter*3/4)})
	cfg.Queues[QueueExtraction] = river.QueueConfig{MaxWorkers: extractWorkers,
		FetchCooldown: extractFetchEvery, FetchPollInterval: max(extractFetchEvery, cfg.FetchPollInterval)}
}
