package service_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestRestartStalledCampaigns: a sending campaign whose send job River
// discarded (its attempts ran out in an outage) gets a new job from the
// scheduler, once; one with a live job, or not sending, gets none (D16:
// every consenting member still gets their message).
func TestRestartStalledCampaigns(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	campUsers(t, e, 3, 0)
	campCampaign(t, e, parley.TypeTransactional)
	idle := campCampaign(t, e, parley.TypeTransactional) // scheduled for later: never stalled
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, campRebind(`UPDATE campaigns SET send_at = send_at + 3600000000 WHERE id = ?`), idle.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil || n != 1 {
		t.Fatalf("resolve: %d, %v", n, err)
	}
	jobs := func() int64 {
		return campInt(t, e, `SELECT count(*) FROM river_job WHERE kind = 'send_campaign'
			AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`)
	}
	if n, err := e.App.Service.RestartStalledCampaigns(e.Ctx); err != nil || n != 0 || jobs() != 1 {
		t.Fatalf("with its job queued: restarted %d (%v), %d live jobs; want 0 and 1", n, err, jobs())
	}
	// River gives up on the job.
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, `UPDATE river_job SET state = 'discarded', finalized_at = created_at WHERE kind = 'send_campaign'`); err != nil {
		t.Fatal(err)
	}
	if n, err := e.App.Service.RestartStalledCampaigns(e.Ctx); err != nil || n != 1 || jobs() != 1 {
		t.Fatalf("after its job was discarded: restarted %d (%v), %d live jobs; want 1 and 1", n, err, jobs())
	}
	if n, err := e.App.Service.RestartStalledCampaigns(e.Ctx); err != nil || n != 0 || jobs() != 1 {
		t.Fatalf("again: restarted %d (%v), %d live jobs; want 0 and 1", n, err, jobs())
	}
}

// TestResolveSkipsABrokenCampaign: a due campaign that cannot be resolved
// (here its segment's stored criteria are unreadable) ends canceled with
// its reason and is not tried again (issue #31 item 1); the campaigns
// due after it in the same tick still start (D16).
func TestResolveSkipsABrokenCampaign(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	campUsers(t, e, 2, 0)
	broken := campCampaign(t, e, parley.TypeTransactional)
	good := campCampaign(t, e, parley.TypeTransactional)
	for q, id := range map[string]int64{
		`UPDATE segments SET criteria = '{"not": "a list"}' WHERE id = ?`: broken.SegmentID,
		`UPDATE campaigns SET send_at = send_at - 1000000 WHERE id = ?`:   broken.ID, // first in the tick
	} {
		if _, err := e.App.DB.Writer().ExecContext(e.Ctx, campRebind(q), id); err != nil {
			t.Fatal(err)
		}
	}
	n, err := e.App.Service.ResolveDueCampaigns(e.Ctx)
	if err != nil || n != 1 {
		t.Fatalf("resolved %d (%v); want the good one, and the broken one ended", n, err)
	}
	if got := campFind(t, e, good); got.Status != parley.CampaignSending {
		t.Errorf("the campaign due after the broken one is %s, want sending", got.Status)
	}
	got := campFind(t, e, broken)
	if got.Status != parley.CampaignCanceled || got.CancelReason == nil || !strings.Contains(*got.CancelReason, "criteria") {
		t.Errorf("the broken campaign is %s (reason %v), want canceled with its reason", got.Status, got.CancelReason)
	}
	if n, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil || n != 0 {
		t.Errorf("next tick: resolved %d (%v), want nothing", n, err)
	}
}
