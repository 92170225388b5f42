package service_test

import (
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

// TestCampaignResolutionResumes (D16, issue #21): the audience is written
// in chunks. A node that started a campaign and wrote one chunk dies; its
// send job waits for the rest of the audience (it neither sends nor
// completes the campaign); another node's
// scheduler resumes the resolution where the cursor stands; every
// consenting member gets exactly one message and the campaign completes
// once.
func TestCampaignResolutionResumes(t *testing.T) {
	t.Parallel()
	e := campEnv(t, func(c *app.Config) { c.CampaignBatch = 5 })
	n2 := apitest.Attach(t, e)
	n2.App.Service.SetResolveChunk(4)
	campHook(t, e)
	ids := campUsers(t, e, 20, 5)
	c := campCampaign(t, e, parley.TypeMarketing)

	// Node 1 starts the campaign and writes its first chunk (4 users),
	// then dies before the next.
	a := store.Audience{SegmentID: c.SegmentID}
	if err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		if err := tx.StartCampaign(e.Ctx, c, a); err != nil {
			return err
		}
		_, _, err := tx.ResolveCampaignChunk(e.Ctx, c, a, 4)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	first := campInt(t, e, `SELECT count(*) FROM messages WHERE campaign_id = ?`, c.ID)
	if first == 0 || first >= int64(len(ids)) {
		t.Fatalf("%d messages after the first chunk", first)
	}
	// Its send job waits for the audience: nothing sent, not done.
	for range 3 {
		p, err := e.App.Service.SendCampaignBatch(e.Ctx, c.BrandID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Done || p.Sent != 0 || p.Wait <= 0 {
			t.Fatalf("while the audience is being written: %+v, want a wait", p)
		}
	}
	if got := campFind(t, e, c); got.Status != parley.CampaignSending {
		t.Fatalf("campaign %s, want sending", got.Status)
	}

	if _, err := n2.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	sent := campDrain(t, e, n2.App.Service, c, false)
	if sent != len(ids) {
		t.Errorf("sent %d, want %d", sent, len(ids))
	}
	campOnePerMember(t, e, c, ids)
	if n := e.App.Sim.Sends() + n2.App.Sim.Sends(); n != int64(len(ids)) {
		t.Errorf("the simulator accepted %d sends, want %d", n, len(ids))
	}
	if got := campFind(t, e, c); got.Status != parley.CampaignCompleted {
		t.Errorf("campaign %s, want completed", got.Status)
	}
	if s := campStats(t, e, c); s.Recipients != 25 || s.SkippedUnsubscribed != 5 || s.Sent != 20 {
		t.Errorf("stats %+v", s)
	}
	if n := campEvents(t, e, parley.EventCampaignCompleted); n != 1 {
		t.Errorf("%d campaign.completed events, want 1", n)
	}
}
