// Package jobs sets up the durable job queue (River) that carries work out of
// the request path: a change and the jobs it causes commit in one transaction.
package jobs

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/parleyhq/parley/internal/webhook"
)

// DeliverMessageArgs asks a worker to hand one outbound message to the SMS
// provider.
type DeliverMessageArgs struct {
	MessageID int64 `json:"message_id"`
	BrandID   int64 `json:"brand_id"`
}

// Kind implements river.JobArgs.
func (DeliverMessageArgs) Kind() string { return "deliver_message" }

// InsertOpts bounds the attempts to hand a message to the provider.
func (DeliverMessageArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 10} }

// DeliverWebhookArgs asks a worker to deliver one event to one endpoint.
type DeliverWebhookArgs struct {
	BrandID    int64  `json:"brand_id"`
	EventID    string `json:"event_id"`
	EndpointID int64  `json:"endpoint_id"`
}

// Kind implements river.JobArgs.
func (DeliverWebhookArgs) Kind() string { return "deliver_webhook" }

// InsertOpts puts webhooks in their own queue, so slow receivers never hold
// the workers that send messages.
func (DeliverWebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhooks, MaxAttempts: webhook.MaxAttempts}
}

// Queues and their bounds.
const (
	QueueWebhooks = "webhooks"
	// webhookWorkers bounds the webhook deliveries in flight on a node, and
	// perEndpoint those to one endpoint, so one slow endpoint cannot take
	// every webhook worker either.
	webhookWorkers = 20
	perEndpoint    = 4
)

// DefaultPollInterval is how often a worker node looks for jobs that
// another process queued. Each look is a query per queue: at 50 ms an idle
// node spent ~10 % of a core on them (issue #35).
const DefaultPollInterval = time.Second

// Queue is a River client bound to Parley's database.
type Queue struct {
	client  *river.Client[*sql.Tx]
	working bool
	// stop, set when this node runs the extraction sweep's job, ends the
	// sweep's run on Stop.
	stop *stopSignal
	// pilot keeps River's function that wakes this process's producers
	// (see Wake).
	pilot *wakePilot
}

// Deliverer makes one delivery attempt (the service implements it).
type Deliverer interface {
	Deliver(ctx context.Context, brandID, messageID int64, attempt int, final bool) error
}

// WebhookDeliverer makes one webhook delivery attempt.
type WebhookDeliverer interface {
	DeliverWebhook(ctx context.Context, brandID int64, eventID string, endpointID int64, attempt int, final bool) error
}

// WorkerConfig turns a queue into one that also works jobs.
type WorkerConfig struct {
	Deliverer Deliverer
	Webhooks  WebhookDeliverer
	// Purger, when set, is run every PurgeInterval.
	Purger Purger
	// Imports, when set, runs CSV imports of users.
	Imports ImportRunner
	// Campaigns, when set, sends campaigns (QueueCampaigns), and flows'
	// messages when it is a FlowSender too.
	Campaigns CampaignSender
	// Extractions, when set, sweeps the inbound texts every
	// ExtractionEvery (default 250 ms) in the extraction sweep's job.
	Extractions     ExtractionSweeper
	ExtractionEvery time.Duration
	// Concurrency is how many deliveries run at once on this node.
	Concurrency int
	// RescueAfter is how long a job may run before another node or a
	// restart takes it over, as after a crash; default 1 minute.
	RescueAfter time.Duration
	// PollInterval bounds how long a job queued by another process waits
	// to be noticed (River's database/sql drivers have no LISTEN/NOTIFY);
	// this process's own jobs wake its workers at once (Wake). Default
	// DefaultPollInterval.
	PollInterval time.Duration
	Logger       *slog.Logger
	// Gate, when set, holds the outcome of a job that failed for want of
	// disk space until the database takes writes again (see writeGate).
	Gate WriteGate
}

// WriteGate waits, after a write failed for want of space, until writes
// succeed again (the store implements it).
type WriteGate interface {
	AwaitWritable(ctx context.Context, err error)
}

// writeGate holds a job's failure while the disk is full. River records
// an outcome with a write, gives up after three tries in about 7 s, and
// leaves the job running until it is rescued as a crashed one, a minute
// later: sending resumed about 55 s after space came back. Held, the
// failure is recorded as soon as it can be, and the job is retried a
// second later (issue #31 item 15).
type writeGate struct {
	river.MiddlewareDefaults
	g WriteGate
}

func (m *writeGate) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	err := doInner(ctx)
	if err != nil {
		m.g.AwaitWritable(ctx, err)
	}
	return err
}

// Held is what a Deliverer returns to put a message off until a later
// time (the sending window of D17): the job is snoozed for Wait, which
// uses no attempt, instead of failing and being retried.
type Held struct {
	Until time.Time     // when the message may go
	Wait  time.Duration // how long from now, by the Deliverer's clock
}

func (h *Held) Error() string { return "message held until " + h.Until.UTC().Format(time.RFC3339) }

type deliverWorker struct {
	river.WorkerDefaults[DeliverMessageArgs]
	d Deliverer
}

func (w *deliverWorker) Work(ctx context.Context, job *river.Job[DeliverMessageArgs]) error {
	err := w.d.Deliver(ctx, job.Args.BrandID, job.Args.MessageID, job.Attempt, job.Attempt >= job.MaxAttempts)
	if h, ok := errors.AsType[*Held](err); ok {
		return river.JobSnooze(max(h.Wait, 0))
	}
	return err
}

// Timeout bounds one attempt, provider call included.
func (w *deliverWorker) Timeout(*river.Job[DeliverMessageArgs]) time.Duration {
	return 30 * time.Second
}

// driver returns River's driver for the engine. Both take a *sql.DB, so the
// store's *sql.Tx carries jobs on either engine.
func driver(db *sql.DB, engine string) riverdriver.Driver[*sql.Tx] {
	if engine == "postgres" {
		return riverdatabasesql.New(db)
	}
	return riversqlite.New(db)
}

// Open returns a queue on db (the store's writer pool) for the engine
// ("sqlite" or "postgres"). With w nil it only inserts jobs (role api);
// otherwise Start works them.
func Open(db *sql.DB, engine string, w *WorkerConfig) (*Queue, error) {
	cfg := &river.Config{}
	var stop *stopSignal
	pilot := &wakePilot{}
	if w != nil {
		cfg.Middleware = append(cfg.Middleware, &snoozeWake{pilot: pilot})
		workers := river.NewWorkers()
		river.AddWorker(workers, &deliverWorker{d: w.Deliverer})
		river.AddWorker(workers, &webhookWorker{d: w.Webhooks, busy: map[int64]int{}})
		if w.Purger != nil {
			river.AddWorker(workers, &purgeWorker{p: w.Purger, logger: cmp.Or(w.Logger, slog.New(slog.DiscardHandler))})
			cfg.PeriodicJobs = append(cfg.PeriodicJobs, purgeJob())
		}
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: max(1, w.Concurrency)},
			QueueWebhooks:      {MaxWorkers: webhookWorkers},
		}
		cfg.RescueStuckJobsAfter = cmp.Or(w.RescueAfter, time.Minute)
		// An attempt, provider call included, ends before it could be rescued.
		cfg.JobTimeout = min(30*time.Second, cfg.RescueStuckJobsAfter)
		cfg.FetchPollInterval = cmp.Or(w.PollInterval, DefaultPollInterval)
		cfg.FetchCooldown = 5 * time.Millisecond
		cfg.Logger = w.Logger
		if w.Gate != nil {
			cfg.Middleware = append(cfg.Middleware, &writeGate{g: w.Gate})
		}
		if w.Imports != nil {
			addImports(workers, cfg, w.Imports)
		}
		if w.Extractions != nil {
			stop = newStopSignal()
			river.AddWorker(workers, newExtractionWorker(w.Extractions, cmp.Or(w.ExtractionEvery, 250*time.Millisecond),
				cfg.RescueStuckJobsAfter, stop))
			cfg.Queues[QueueExtraction] = river.QueueConfig{MaxWorkers: 1}
			cfg.PeriodicJobs = append(cfg.PeriodicJobs, extractionJob())
		}
		if w.Campaigns != nil {
			river.AddWorker(workers, newCampaignWorker(w.Campaigns, cfg.RescueStuckJobsAfter))
			// A campaign sender sends flows' messages too (D21).
			if f, ok := w.Campaigns.(FlowSender); ok {
				river.AddWorker(workers, newFlowWorker(f, cfg.RescueStuckJobsAfter))
			}
			cfg.Queues[QueueCampaigns] = river.QueueConfig{MaxWorkers: campaignWorkers}
		}
	}
	c, err := river.NewClient(&wakeDriver{Driver: driver(db, engine), pilot: pilot}, cfg)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return &Queue{client: c, working: w != nil, stop: stop, pilot: pilot}, nil
}

type webhookWorker struct {
	river.WorkerDefaults[DeliverWebhookArgs]
	d WebhookDeliverer

	mu   sync.Mutex
	busy map[int64]int // deliveries in flight per endpoint
}

func (w *webhookWorker) Work(ctx context.Context, job *river.Job[DeliverWebhookArgs]) error {
	id := job.Args.EndpointID
	w.mu.Lock()
	if w.busy[id] >= perEndpoint {
		w.mu.Unlock()
		return river.JobSnooze(time.Second) // this endpoint is saturated: let others go first
	}
	w.busy[id]++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		if w.busy[id]--; w.busy[id] == 0 {
			delete(w.busy, id)
		}
		w.mu.Unlock()
	}()
	return w.d.DeliverWebhook(ctx, job.Args.BrandID, job.Args.EventID, id, job.Attempt, job.Attempt >= job.MaxAttempts)
}

// NextRetry follows the webhook schedule (D11): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h.
func (w *webhookWorker) NextRetry(job *river.Job[DeliverWebhookArgs]) time.Time {
	d, _ := webhook.NextRetry(job.Attempt)
	return time.Now().Add(d)
}

// Start begins working jobs; a queue opened without workers does nothing.
func (q *Queue) Start(ctx context.Context) error {
	if !q.working {
		return nil
	}
	if q.stop != nil {
		q.stop.reset() // before any run of this start reads it
	}
	if err := q.client.Start(ctx); err != nil {
		return err
	}
	q.pilot.start()
	if q.stop != nil {
		// At once, not when River's leader is elected (seconds after a
		// start): the job is unique, so every node may insert it.
		if _, err := q.client.Insert(ctx, ExtractionSweepArgs{}, nil); err != nil {
			return fmt.Errorf("jobs: extraction sweep: %w", err)
		}
	}
	return nil
}

// Stop lets running jobs finish (until ctx ends) and stops working. The
// extraction sweep's run ends after its batch in flight.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.working {
		return nil
	}
	q.pilot.stop()
	if q.stop != nil {
		q.stop.stop()
	}
	return q.client.Stop(ctx)
}

// Migrate creates or upgrades River's tables.
func Migrate(ctx context.Context, db *sql.DB, engine string) error {
	m, err := rivermigrate.New(driver(db, engine), nil)
	if err != nil {
		return fmt.Errorf("jobs: migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	// Extraction jobs, one per inbound text, were replaced by the sweep
	// (#19, D20): no worker would take those left from before.
	if _, err := db.ExecContext(ctx, `DELETE FROM river_job WHERE kind = 'extract_custom_data'`); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	return nil
}

// Pending collects the jobs a transaction causes, for Insert to queue with
// one statement: the messages of a group commit cost one insert between
// them, not one each.
type Pending struct {
	params []river.InsertManyParams
}

// Delivery adds the delivery of a message.
func (p *Pending) Delivery(brandID, messageID int64) {
	p.params = append(p.params, river.InsertManyParams{Args: DeliverMessageArgs{MessageID: messageID, BrandID: brandID}})
}

// Webhook adds the delivery of an event to an endpoint.
func (p *Pending) Webhook(brandID int64, eventID string, endpointID int64) {
	p.params = append(p.params, river.InsertManyParams{Args: DeliverWebhookArgs{BrandID: brandID, EventID: eventID, EndpointID: endpointID}})
}

// Insert queues p's jobs inside tx, so they exist if and only if the
// change that caused them commits, and empties p.
func (q *Queue) Insert(ctx context.Context, tx *sql.Tx, p *Pending) error {
	if len(p.params) == 0 {
		return nil
	}
	if _, err := q.client.InsertManyFastTx(ctx, tx, p.params); err != nil {
		return fmt.Errorf("jobs: enqueue: %w", err)
	}
	p.params = p.params[:0]
	return nil
}
