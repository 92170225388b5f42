package service_test

import (
	"context"
	"sync"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
)

// cancelingProvider refuses every message temporarily and, on its first
// call, has the campaign canceled: the cancel lands while the batch is
// with the provider.
type cancelingProvider struct {
	once   sync.Once
	cancel func()
}

func (p *cancelingProvider) Name() string { return "flaky" }

func (p *cancelingProvider) Send(_ context.Context, m delivery.Message) (delivery.Receipt, error) {
	p.once.Do(p.cancel)
	return delivery.Receipt{}, &delivery.Error{Code: "busy", Message: "try later", Temporary: true}
}

// TestCampaignCancelDuringTemporaryRefusal: a batch claimed before the
// cancel and refused temporarily by the provider must not go back to a
// work list that no sender reads any more (a canceled campaign is not
// claimed from): its messages end failed canceled, the job ends, and
// nothing of the campaign stays queued (D16: every message reaches an
// end; the stats add up with queued 0).
func TestCampaignCancelDuringTemporaryRefusal(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	campUsers(t, e, 3, 0)
	c := campCampaign(t, e, parley.TypeTransactional)
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	p := &cancelingProvider{cancel: func() {
		if _, err := e.App.Service.CancelCampaign(e.Ctx, parley.Origin{}, c.BrandID, c.ID); err != nil {
			t.Errorf("cancel: %v", err)
		}
	}}
	e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
	campDrain(t, e, e.App.Service, c, true)
	if got := campFind(t, e, c); got.Status != parley.CampaignCanceled {
		t.Errorf("campaign %s, want canceled", got.Status)
	}
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE campaign_id = ? AND status = 'queued'`, c.ID); n != 0 {
		t.Errorf("%d messages of the canceled campaign still queued, want 0: nobody will ever send or fail them", n)
	}
	if n := campInt(t, e, `SELECT count(*) FROM messages WHERE campaign_id = ? AND status = 'failed' AND error_code = ?`,
		c.ID, parley.ErrorCodeCanceled); n != 3 {
		t.Errorf("%d messages failed canceled, want 3", n)
	}
	campStats(t, e, c)
}
