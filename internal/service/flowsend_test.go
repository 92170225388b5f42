package service_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/store"
)

// sendFlow stores an active flow of brand A whose runs start when a
// contact's consent becomes true.
func sendFlow(t *testing.T, e *apitest.Env, steps string) *parley.Flow {
	t.Helper()
	f, err := e.App.Service.CreateFlow(e.Ctx, parley.Origin{}, e.BrandA.ID, parley.FlowCreate{Name: parley.Some("Welcome"),
		Trigger: parley.Some(parley.RawMember(`{"type":"subscribed"}`)), Steps: parley.Some(parley.RawMember(steps)),
		Active: parley.Some(true)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// subscribe creates a contact of brand A with consent true.
func subscribe(t *testing.T, e *apitest.Env, phone string) {
	t.Helper()
	if _, err := e.App.Service.CreateUser(e.Ctx, parley.Origin{}, e.BrandA.ID, parley.UserCreate{PhoneNumber: parley.Some(phone),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}}); err != nil {
		t.Fatal(err)
	}
}

// runDue runs the due flow steps until none is due.
func runDue(t *testing.T, e *apitest.Env) {
	t.Helper()
	for range 1000 {
		n, err := e.App.Service.RunDueFlowSteps(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("flow steps never done")
}

// flowDrain runs batches of the flow's sender until it is done, advancing
// the clock over waits; it returns the messages sent and the batches.
func flowDrain(t *testing.T, e *apitest.Env, f *parley.Flow) (sent, batches int) {
	t.Helper()
	for range 10000 {
		p, err := e.App.Service.SendFlowBatch(e.Ctx, f.BrandID, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		sent += p.Sent
		if p.Sent > 0 {
			batches++
		}
		if p.Done {
			return sent, batches
		}
		if p.Wait > 0 && p.Sent == 0 {
			e.Advance(p.Wait)
		}
	}
	t.Fatal("flow sender never done")
	return 0, 0
}

// TestFlowSendsInBatches: a flow's messages go out a batch at a time by
// one sender job per flow, not a delivery job per message (D21: at
// campaign speed); a sender that found nothing left ends, and the next
// message written queues a new one.
func TestFlowSendsInBatches(t *testing.T) {
	t.Parallel()
	e := campEnv(t, func(c *app.Config) { c.CampaignBatch = 10 })
	f := sendFlow(t, e, `[{"type":"send","body":"Welcome!","message_type":"TRANSACTIONAL"}]`)
	ids := campUsers(t, e, 35, 0)
	runDue(t, e)
	if n := campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'send_flow'`); n != 1 {
		t.Errorf("%d flow sender jobs, want 1", n)
	}
	if n := campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'deliver_message'`); n != 0 {
		t.Errorf("%d delivery jobs, want none (one sender per flow)", n)
	}
	sent, batches := flowDrain(t, e, f)
	if sent != len(ids) || batches != 4 {
		t.Errorf("sent %d in %d batches, want %d in 4", sent, batches, len(ids))
	}
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE flow_id = ? AND status = 'sent'`, f.ID); n != int64(len(ids)) {
		t.Errorf("%d flow messages sent, want %d", n, len(ids))
	}
	if n := campInt(t, e, `SELECT count(*) FROM flow_senders`); n != 0 {
		t.Errorf("the sender that ended left its row")
	}
	subscribe(t, e, "+14155559999")
	runDue(t, e)
	if n := campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'send_flow'`); n != 2 {
		t.Errorf("%d flow sender jobs after a new message, want 2", n)
	}
	if sent, _ := flowDrain(t, e, f); sent != 1 {
		t.Errorf("the new sender sent %d, want 1", sent)
	}
}

// TestFlowSenderSeesMessagesWrittenWhileIdle: a runner that writes a
// message while the flow's sender is running queues no second job, and
// the running sender does not end before sending it.
func TestFlowSenderSeesMessagesWrittenWhileIdle(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	f := sendFlow(t, e, `[{"type":"send","body":"Hi","message_type":"TRANSACTIONAL"}]`)
	campUsers(t, e, 1, 0)
	runDue(t, e)
	if p, err := e.App.Service.SendFlowBatch(e.Ctx, f.BrandID, f.ID); err != nil || p.Sent != 1 || p.Done {
		t.Fatalf("first batch %+v, %v", p, err)
	}
	// Another contact enters between the sender's batches.
	subscribe(t, e, "+14155559998")
	runDue(t, e)
	if n := campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'send_flow'`); n != 1 {
		t.Errorf("%d flow sender jobs, want the running one only", n)
	}
	if sent, _ := flowDrain(t, e, f); sent != 1 {
		t.Errorf("the running sender sent %d more, want 1", sent)
	}
}

// TestFlowFrequencyCapCountsQueued: two MARKETING steps in a row both
// pass the step's check (nothing sent yet), and the cap of 1 is decided
// at the hand-over, where the first counts: the second fails
// frequency_capped (D21, D17).
func TestFlowFrequencyCapCountsQueued(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	if _, err := e.App.Service.UpdateBrandSettings(e.Ctx, e.BrandA.ID, parley.BrandSettingsUpdate{
		FrequencyCap: parley.Some(parley.FrequencyCap{MaxMessages: 1, PerHours: 24})}); err != nil {
		t.Fatal(err)
	}
	f := sendFlow(t, e, `[{"type":"send","body":"One"},{"type":"send","body":"Two"}]`)
	campUsers(t, e, 1, 0)
	runDue(t, e)
	if sent, _ := flowDrain(t, e, f); sent != 1 {
		t.Errorf("sent %d, want 1 under the cap", sent)
	}
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE flow_id = ? AND status = 'failed' AND error_code = 'frequency_capped'`, f.ID); n != 1 {
		t.Errorf("%d messages failed frequency_capped, want 1", n)
	}
}

// TestFlowHeldStepWaits: a MARKETING step outside the sending window is
// held and sent when the window opens (D21, D17).
func TestFlowHeldStepWaits(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	e.SetNow(time.Date(2025, 6, 10, 7, 0, 0, 0, time.UTC)) // midnight in California
	f := sendFlow(t, e, `[{"type":"send","body":"Offer"}]`)
	campUsers(t, e, 1, 0)
	runDue(t, e)
	for range 2 { // the first holds the message, the next waits for it
		p, err := e.App.Service.SendFlowBatch(e.Ctx, f.BrandID, f.ID)
		if err != nil || p.Sent != 0 || p.Done {
			t.Fatalf("a batch at night: %+v, %v", p, err)
		}
	}
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE flow_id = ? AND status = 'queued' AND scheduled_at IS NOT NULL`, f.ID); n != 1 {
		t.Errorf("%d held messages, want 1", n)
	}
	if sent, _ := flowDrain(t, e, f); sent != 1 {
		t.Errorf("sent %d once the window opened, want 1", sent)
	}
	if e.Now().Before(time.Date(2025, 6, 10, 15, 0, 0, 0, time.UTC)) {
		t.Errorf("sent at %v, before the window opened", e.Now())
	}
}

// TestTransactionalOvertakesDrainingFlow: with one worker in the default
// queue, a transactional POST /messages is sent while a flow's batch is
// with the provider and the rest of the flow's messages are queued: the
// flow's sender runs in the campaigns' queue, as a campaign's (D21).
func TestTransactionalOvertakesDrainingFlow(t *testing.T) {
	t.Parallel()
	e := campEnv(t, func(c *app.Config) { c.Workers = 1; c.CampaignBatch = 5 })
	p := &gateProvider{gate: make(chan struct{}), entered: make(chan struct{})}
	e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
	f := sendFlow(t, e, `[{"type":"send","body":"Welcome!","message_type":"TRANSACTIONAL"}]`)
	ids := campUsers(t, e, 1000, 0)
	if err := e.App.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	defer close(p.gate)
	overtakes(t, e, p, ids[3], "flow")
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE flow_id = ? AND status = 'sent'`, f.ID); n != 0 {
		t.Errorf("%d flow messages sent before the transactional one, want 0 (the flow's queue not empty)", n)
	}
}

// TestFlowMessagesOfAnEarlierVersion: a flow message queued by a version
// that sent each one by a job of its own is left by that job to the flow's
// sender, which ResumeFlowSenders queues (once) when the runner starts:
// the message goes out once, by the sender (D21, issue #33).
func TestFlowMessagesOfAnEarlierVersion(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	f := sendFlow(t, e, `[{"type":"wait","seconds":60}]`)
	userID := campUsers(t, e, 1, 0)[0]
	var msg *parley.Message
	if err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		flowID := f.ID
		msg = &parley.Message{BrandID: e.BrandA.ID, UserID: userID, Direction: parley.DirectionOutbound, Status: parley.StatusQueued,
			Body: "Hi", MediaItemUUIDs: []string{}, Type: parley.TypeTransactional, DateCreated: parley.NewTime(tx.Now()), FlowID: &flowID}
		return tx.InsertFlowMessages(e.Ctx, []*store.FlowMessage{{M: msg, RunID: 1, Step: 0}})
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, msg.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE status = 'queued' AND sending_at IS NULL`); n != 1 {
		t.Fatalf("the old job touched the flow's message (%d left queued)", n)
	}
	for _, want := range []int{1, 0} { // a second look finds the sender queued
		if n, err := e.App.Service.ResumeFlowSenders(e.Ctx, true); err != nil || n != want {
			t.Fatalf("resume: queued %d (%v), want %d", n, err, want)
		}
	}
	if n := campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'send_flow'`); n != 1 {
		t.Errorf("%d flow sender jobs, want 1", n)
	}
	if sent, _ := flowDrain(t, e, f); sent != 1 {
		t.Errorf("the sender sent %d, want 1", sent)
	}
}

// TestFlowSenderDiscarded: a flow whose sender job River discarded (its
// attempts ran out: an outage, an overloaded node) gets a new sender from
// the runner's watch, once, although its flow_senders row still says one
// runs; its messages then go out (D21: every step happens; issue #33, a
// CI run of TestKillMidFlows left 3,000 messages queued for good).
func TestFlowSenderDiscarded(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	f := sendFlow(t, e, `[{"type":"send","body":"Hi","message_type":"TRANSACTIONAL"}]`)
	subscribe(t, e, "+14155550101")
	subscribe(t, e, "+14155550102")
	runDue(t, e)
	live := func() int64 {
		return campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'send_flow'
			AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`)
	}
	if n, err := e.App.Service.ResumeFlowSenders(e.Ctx, false); err != nil || n != 0 || live() != 1 {
		t.Fatalf("with its sender queued: queued %d (%v), %d live senders; want 0 and 1", n, err, live())
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, `UPDATE river_job SET state = 'discarded', finalized_at = created_at WHERE kind = 'send_flow'`); err != nil {
		t.Fatal(err)
	}
	if n, err := e.App.Service.ResumeFlowSenders(e.Ctx, false); err != nil || n != 1 || live() != 1 {
		t.Fatalf("after its sender was discarded: queued %d (%v), %d live senders; want 1 and 1", n, err, live())
	}
	if n, err := e.App.Service.ResumeFlowSenders(e.Ctx, false); err != nil || n != 0 || live() != 1 {
		t.Fatalf("again: queued %d (%v), %d live senders; want 0 and 1", n, err, live())
	}
	if sent, _ := flowDrain(t, e, f); sent != 2 {
		t.Errorf("the sender sent %d, want 2", sent)
	}
	if n, err := e.App.Service.ResumeFlowSenders(e.Ctx, false); err != nil || n != 0 {
		t.Errorf("nothing queued: queued %d (%v), want 0", n, err)
	}
}

// TestSentBatchRecordedPastTheDeadline: a batch the provider took is
// recorded sent even when the sender's job ran out of time (or the node
// began to shut down) while the provider had it: a campaign's and a
// flow's (D16, D21; on a slow node every batch used to be lost this way,
// its messages left queued until their claims went stale).
func TestSentBatchRecordedPastTheDeadline(t *testing.T) {
	t.Parallel()
	for _, source := range []string{"campaign", "flow"} {
		t.Run(source, func(t *testing.T) {
			t.Parallel()
			e := campEnv(t)
			p := &deadlineProvider{}
			e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
			ctx, cancel := context.WithCancel(e.Ctx)
			p.cancel = cancel
			var err error
			if source == "flow" {
				f := sendFlow(t, e, `[{"type":"send","body":"Hi","message_type":"TRANSACTIONAL"}]`)
				campUsers(t, e, 3, 0)
				runDue(t, e)
				_, err = e.App.Service.SendFlowBatch(ctx, f.BrandID, f.ID)
			} else {
				campUsers(t, e, 3, 0)
				c := campCampaign(t, e, parley.TypeTransactional)
				if n, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil || n != 1 {
					t.Fatalf("resolve: %d, %v", n, err)
				}
				_, err = e.App.Service.SendCampaignBatch(ctx, c.BrandID, c.ID)
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := campInt(t, e, `SELECT count(*) FROM messages WHERE status = 'sent' AND provider_id LIKE 'C%'`); n != 3 {
				t.Errorf("%d messages recorded sent, want the 3 the provider took", n)
			}
		})
	}
}

// deadlineProvider takes every batch, and cancels the sender's context
// while it has it: the job's deadline passing during the provider call.
type deadlineProvider struct{ cancel context.CancelFunc }

func (p *deadlineProvider) Name() string     { return "deadline" }
func (p *deadlineProvider) Idempotent() bool { return true }

func (p *deadlineProvider) Send(_ context.Context, m delivery.Message) (delivery.Receipt, error) {
	return delivery.Receipt{ProviderID: "C" + strconv.FormatInt(m.ID, 10)}, nil
}

func (p *deadlineProvider) SendBatch(_ context.Context, ms []delivery.Message) []delivery.Result {
	p.cancel()
	out := make([]delivery.Result, len(ms))
	for i, m := range ms {
		out[i].Receipt.ProviderID = "C" + strconv.FormatInt(m.ID, 10)
	}
	return out
}
