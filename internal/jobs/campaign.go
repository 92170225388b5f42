package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// QueueCampaigns carries the campaign send jobs (D16), one per campaign,
// apart from the default queue where single messages (conversational,
// transactional, API marketing) go. A draining campaign occupies at most
// campaignWorkers of a node's workers and never a default one, so a
// single message queued behind a 100,000-message campaign waits for no
// campaign job, only for the database writes of one batch. Queues, not
// River priorities: a priority orders the jobs waiting to be fetched, but
// a campaign is one long-running job per campaign, which a priority would
// not keep off the default queue's workers.
const QueueCampaigns = "campaigns"

// campaignWorkers bounds the campaigns sending at once on a node. Each
// sends its batches one after another; more campaigns at once would only
// queue for the same database writer.
const campaignWorkers = 4

// SendCampaignArgs asks a worker to send a resolved campaign's messages.
type SendCampaignArgs struct {
	CampaignID int64 `json:"campaign_id"`
	BrandID    int64 `json:"brand_id"`
}

// Kind implements river.JobArgs.
func (SendCampaignArgs) Kind() string { return "send_campaign" }

// InsertOpts puts the job in the campaigns queue. An error (a database
// outage) is retried with River's backoff; every attempt starts from what
// the database says, so retries are safe.
func (SendCampaignArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueCampaigns, MaxAttempts: 25}
}

// Campaign adds the send job of a campaign that was just resolved.
func (p *Pending) Campaign(brandID, campaignID int64) {
	p.params = append(p.params, river.InsertManyParams{Args: SendCampaignArgs{CampaignID: campaignID, BrandID: brandID}})
}

// CampaignProgress is what one batch of a campaign did.
type CampaignProgress struct {
	// Sent counts the messages handed to the provider.
	Sent int
	// Done: nothing is left to do (completed, canceled, not found).
	Done bool
	// Wait, when > 0, is how long until anything more can go: the brand's
	// send rate, messages held for their window, claims still in flight.
	Wait time.Duration
}

// CampaignSender sends one batch of a campaign (the service implements it).
type CampaignSender interface {
	SendCampaignBatch(ctx context.Context, brandID, campaignID int64) (CampaignProgress, error)
}

// Bounds of one run of the campaign job.
const (
	// campaignRun is how long one run sends before it hands the job back
	// to the queue (snoozed for 0): well inside the job timeout, so a live
	// run is never rescued as a stuck one.
	campaignRun = 20 * time.Second
	// campaignSleep is the longest wait a run sleeps through; longer ones
	// snooze the job, freeing the worker.
	campaignSleep = 250 * time.Millisecond
	// campaignMaxSnooze bounds a snooze, so held messages are looked at
	// again at least this often whatever the clocks do.
	campaignMaxSnooze = 30 * time.Second
)

type campaignWorker struct {
	river.WorkerDefaults[SendCampaignArgs]
	s CampaignSender
	// run and timeout stay below the rescue delay, so a live run is never
	// taken for a stuck one (see newCampaignWorker).
	run, timeout time.Duration
}

func newCampaignWorker(s CampaignSender, rescueAfter time.Duration) *campaignWorker {
	run := min(campaignRun, rescueAfter/3)
	return &campaignWorker{s: s, run: run, timeout: min(run+10*time.Second, rescueAfter*2/3)}
}

func (w *campaignWorker) Work(ctx context.Context, job *river.Job[SendCampaignArgs]) error {
	return drain(ctx, w.run, func() (CampaignProgress, error) {
		return w.s.SendCampaignBatch(ctx, job.Args.BrandID, job.Args.CampaignID)
	})
}

// drain sends batch after batch until nothing is left, run has passed
// (the job is snoozed for 0) or the next batch is more than campaignSleep
// away (snoozed for that long): the loop of a campaign's or a flow's
// sender job.
func drain(ctx context.Context, run time.Duration, batch func() (CampaignProgress, error)) error {
	start := time.Now()
	for {
		p, err := batch()
		switch {
		case err != nil:
			return err
		case p.Done:
			return nil
		case time.Since(start) > run:
			return river.JobSnooze(min(p.Wait, campaignMaxSnooze))
		case p.Wait > campaignSleep:
			return river.JobSnooze(min(p.Wait, campaignMaxSnooze))
		case p.Wait > 0:
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(p.Wait):
			}
		}
	}
}

// NextRetry retries soon, whatever the attempt: every run starts from
// what the database says, so a retry costs one batch at most, and River's
// default backoff (attempt⁴ seconds) would leave a campaign idle for
// minutes after a few runs cut short by their timeout on a loaded node.
func (w *campaignWorker) NextRetry(job *river.Job[SendCampaignArgs]) time.Time {
	return time.Now().Add(min(time.Duration(job.Attempt)*time.Second, campaignMaxRetryWait))
}

// campaignMaxRetryWait bounds the wait before a failed run is tried again.
const campaignMaxRetryWait = 10 * time.Second

// Timeout leaves a run its time and the batch it is in.
func (w *campaignWorker) Timeout(*river.Job[SendCampaignArgs]) time.Duration { return w.timeout }
