package service_test

import (
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
