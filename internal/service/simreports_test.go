package service_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
)

// TestSimReportsFlowPastStuckRecords: records the simulator's reporter
// cannot finish — sends the ledger holds whose outcome the sender never
// wrote, as after a crash between the provider call and that write —
// more of them than one read of the ledger takes, and due before
// anything else: a transactional message sent after them still gets its
// delivery report (issue #31 item 13), and the stuck ones get theirs once
// their claim is taken again.
func TestSimReportsFlowPastStuckRecords(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	e.App.Sim.ReportBatch = 5
	e.App.Sim.Retry = 10 * time.Millisecond
	ids := campUsers(t, e, 13, 0)
	c := campCampaign(t, e, parley.TypeTransactional)
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	claimed := claimCampaign(t, e, c, 12, 12)
	var msgs []delivery.Message
	for _, r := range claimed {
		msgs = append(msgs, delivery.Message{ID: r.MessageID, BrandID: c.BrandID, To: r.To, Body: c.Body})
	}
	for _, r := range e.App.Sim.SendBatch(e.Ctx, msgs) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	// The sender dies here: the 12 are queued, their sends unrecorded.
	e.Advance(time.Second)
	m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(ids[12]), Body: parley.Some("Your code is 1234"),
		Type: parley.Some(parley.TypeTransactional)})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	e.Advance(time.Second)
	if err := e.App.Sim.Flush(e.Ctx, e.App.Service); err != nil {
		t.Fatal(err)
	}
	got, err := e.A.GetMessage(e.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != parley.StatusDelivered {
		t.Errorf("transactional message %s behind %d stuck reports, want delivered", got.Status, len(claimed))
	}
	if n := campInt(t, e, `SELECT count(*) FROM sim_messages WHERE reported = FALSE`); n != 12 {
		t.Errorf("%d reports left, want the 12 stuck ones", n)
	}
	// Their claims go stale and are sent again (the simulator answers with
	// its first ids); their reports, put back, come after Retry.
	e.Advance(time.Minute)
	campDrain(t, e, e.App.Service, c, false)
	time.Sleep(e.App.Sim.Retry)
	e.Advance(time.Second)
	if err := e.App.Sim.Flush(e.Ctx, e.App.Service); err != nil {
		t.Fatal(err)
	}
	if s := campStats(t, e, c); s.Delivered != 13 {
		t.Errorf("stats %+v, want all 13 delivered", s)
	}
}
