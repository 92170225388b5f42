package httpapi_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/service"
)

// TestFrequencyCapOverlappingCampaigns: cap 1 per 24 h; two MARKETING
// campaigns created through signed requests 2 s apart, both held by the
// sending window, then sent at its opening by two nodes at once, one
// campaign each. Every contact gets exactly one of them: the cap is
// decided when a message is handed to the provider, against the
// contact's messages sent and in flight (issue #31 item 5, D17). The one
// refused there fails frequency_capped and is counted in its campaign's
// skipped_frequency_cap, not in failed (docs/api.md).
func TestFrequencyCapOverlappingCampaigns(t *testing.T) {
	t.Parallel()
	const n = 12
	e := apitest.New(t, func(c *app.Config) { c.CampaignBatch = 3 })
	n2 := apitest.Attach(t, e)
	la := winZone(t, "America/Los_Angeles")
	e.SetNow(time.Date(2025, 6, 10, 7, 0, 0, 0, la)) // a Tuesday, an hour before the window opens
	winSettings(t, e, parley.BrandSettingsUpdate{FrequencyCap: parley.Some(parley.FrequencyCap{MaxMessages: 1, PerHours: 24})})
	for i := range n {
		e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415557%04d", i)),
			UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
	}
	seg, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Everyone")})
	if err != nil {
		t.Fatal(err)
	}
	var camps []*parley.Campaign
	for _, name := range []string{"Spring sale", "Flash sale"} {
		c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some(name), SegmentID: parley.Some(seg.ID),
			Body: parley.Some(name + ": 20% off"), Type: parley.Some(parley.TypeMarketing)})
		if err != nil {
			t.Fatal(err)
		}
		camps = append(camps, c)
		e.Advance(2 * time.Second)
	}
	// The scheduler resolves both (nobody is at the cap yet), and their
	// batches hold every message for the window.
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range camps {
		for {
			p, err := e.App.Service.SendCampaignBatch(e.Ctx, e.BrandA.ID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if p.Sent != 0 || p.Done {
				t.Fatalf("campaign %d before the window: %+v", c.ID, p)
			}
			if p.Wait > time.Minute {
				break // all held until the opening
			}
		}
		got, err := e.A.GetCampaign(e.Ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Stats.Queued != n || got.Stats.SkippedFrequencyCap != 0 {
			t.Fatalf("campaign %d before the window: %+v, want %d queued", c.ID, got.Stats, n)
		}
	}

	e.SetNow(time.Date(2025, 6, 10, 8, 0, 0, 0, la))
	var wg sync.WaitGroup
	for i, svc := range []*service.Service{e.App.Service, n2.App.Service} {
		wg.Go(func() {
			for range 1000 {
				p, err := svc.SendCampaignBatch(e.Ctx, e.BrandA.ID, camps[i].ID)
				if err != nil {
					t.Error(err)
					return
				}
				if p.Done {
					return
				}
				if p.Sent == 0 && p.Wait > 0 {
					time.Sleep(min(p.Wait, 50*time.Millisecond))
				}
			}
			t.Errorf("campaign %d never done", camps[i].ID)
		})
	}
	wg.Wait()

	ce := &campEnv{Env: e}
	got := map[int64][]*parley.Message{} // user → messages of both campaigns
	for _, c := range camps {
		for user, m := range campMessages(t, ce, c.ID, 100) {
			got[user] = append(got[user], m)
		}
	}
	if len(got) != n {
		t.Fatalf("%d contacts have campaign messages, want %d", len(got), n)
	}
	for user, ms := range got {
		var sent, capped int
		for _, m := range ms {
			switch {
			case m.Status == parley.StatusSent:
				sent++
			case m.Status == parley.StatusFailed && m.ErrorCode != nil && *m.ErrorCode == service.CodeFrequencyCapped:
				capped++
			}
		}
		if sent != 1 || capped != len(ms)-1 {
			t.Errorf("contact %d: %d of its %d campaign messages sent, %d frequency_capped; want exactly one sent (D17)", user, sent, len(ms), capped)
		}
	}
	if s := e.App.Sim.Sends() + n2.App.Sim.Sends(); s != n {
		t.Errorf("the simulator accepted %d messages, want %d: one per contact", s, n)
	}
	var sent, skipped int64
	for _, c := range camps {
		got, err := e.A.GetCampaign(e.Ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := got.Stats
		if got.Status != parley.CampaignCompleted || s.Failed != 0 || s.Queued != 0 || s.Recipients != n || s.SkippedUnsubscribed != 0 {
			t.Errorf("campaign %d: %s %+v, want completed, nothing failed or queued", c.ID, got.Status, s)
		}
		if s.Sent+s.SkippedFrequencyCap != n {
			t.Errorf("campaign %d stats %+v: sent and skipped_frequency_cap do not add up to its %d recipients", c.ID, s, n)
		}
		sent, skipped = sent+s.Sent, skipped+s.SkippedFrequencyCap
	}
	if sent != n || skipped != n {
		t.Errorf("both campaigns: %d sent, %d skipped_frequency_cap; want %d each", sent, skipped, n)
	}
}
