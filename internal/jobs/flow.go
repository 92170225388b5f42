package jobs

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// SendFlowArgs asks a worker to send a flow's queued messages (D21) a
// batch at a time, as a campaign's: one job per flow, queued by the
// runner that writes the flow's messages when none is queued or running
// (store.WantFlowSender), in the campaigns' queue, so single messages on
// the default queue overtake it.
type SendFlowArgs struct {
	FlowID  int64 `json:"flow_id"`
	BrandID int64 `json:"brand_id"`
}

// Kind implements river.JobArgs.
func (SendFlowArgs) Kind() string { return "send_flow" }

// InsertOpts puts the job in the campaigns queue, retried as a campaign's.
func (SendFlowArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueCampaigns, MaxAttempts: 25}
}

// FlowSend adds the sender job of a flow.
func (p *Pending) FlowSend(brandID, flowID int64) {
	p.params = append(p.params, river.InsertManyParams{Args: SendFlowArgs{FlowID: flowID, BrandID: brandID}})
}

// FlowSender sends one batch of a flow's messages (the service implements
// it); Done once none is queued and no runner has written more since.
type FlowSender interface {
	SendFlowBatch(ctx context.Context, brandID, flowID int64) (CampaignProgress, error)
}

type flowWorker struct {
	river.WorkerDefaults[SendFlowArgs]
	s            FlowSender
	run, timeout time.Duration
}

func newFlowWorker(s FlowSender, rescueAfter time.Duration) *flowWorker {
	c := newCampaignWorker(nil, rescueAfter)
	return &flowWorker{s: s, run: c.run, timeout: c.timeout}
}

func (w *flowWorker) Work(ctx context.Context, job *river.Job[SendFlowArgs]) error {
	return drain(ctx, w.run, func() (CampaignProgress, error) {
		return w.s.SendFlowBatch(ctx, job.Args.BrandID, job.Args.FlowID)
	})
}

// NextRetry retries soon, as a campaign's job does.
func (w *flowWorker) NextRetry(job *river.Job[SendFlowArgs]) time.Time {
	return time.Now().Add(min(time.Duration(job.Attempt)*time.Second, campaignMaxRetryWait))
}

// Timeout leaves a run its time and the batch it is in.
func (w *flowWorker) Timeout(*river.Job[SendFlowArgs]) time.Duration { return w.timeout }
