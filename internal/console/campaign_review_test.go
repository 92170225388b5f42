package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
)

// TestCampaignReviewDateSchedules (issue #32): a date typed while "Send
// now" is chosen schedules the campaign for it, and the review says so;
// the review creates nothing; a campaign that has started cannot be
// edited (409 page that offers Duplicate).
func TestCampaignReviewDateSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.SetNow(time.Date(2026, 6, 10, 17, 0, 0, 0, time.UTC))
	if _, err := e.App.Service.UpdateBrandSettings(e.Ctx, e.BrandA.ID, parley.BrandSettingsUpdate{TimeZone: parley.Some("America/Chicago")}); err != nil {
		t.Fatal(err)
	}
	e.contact(t, false, "+14155550101", "Ana", "", "", ptr(true))
	seg := e.mustSegment(t, false, "Everyone", nil)
	w := e.signedIn(t, "admin@a.example")
	f := url.Values{"name": {"Sale"}, "segment_id": {itoa(seg.ID)}, "body": {`Hi {{first_name | "there"}}`}, "type": {"MARKETING"},
		"when": {"now"}, "send_at": {"2026-06-11T14:30"}, "action": {"review"}}
	p := w.post("/console/campaigns/new", f)
	if p.Status != http.StatusOK || !strings.Contains(p.Body, "You entered a date, so the campaign is scheduled for it") ||
		!strings.Contains(p.Body, "Schedule for 2026-06-11 14:30 CDT") || !strings.Contains(p.Body, "Hi Ana") {
		t.Fatalf("review: %d\n%s", p.Status, p.Body)
	}
	if n := e.Count(t, "campaigns"); n != 0 {
		t.Fatalf("the review stored %d campaigns", n)
	}
	f.Set("action", "create")
	if p := w.post("/console/campaigns/new", f); p.Status != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Status, p.Body)
	}
	camps, _, err := e.App.Service.ListCampaigns(e.Ctx, e.BrandA.ID, parley.CampaignFilter{})
	if err != nil || len(camps) != 1 || camps[0].Status != parley.CampaignScheduled ||
		!camps[0].SendAt.Equal(time.Date(2026, 6, 11, 19, 30, 0, 0, time.UTC)) {
		t.Fatalf("the typed date was lost: %+v %v", camps, err)
	}
	if _, err := e.App.Service.CancelCampaign(e.Ctx, parley.Origin{Source: "test"}, e.BrandA.ID, camps[0].ID); err != nil {
		t.Fatal(err)
	}
	if p := w.get("/console/campaigns/" + itoa(camps[0].ID) + "/edit"); p.Status != http.StatusConflict ||
		!strings.Contains(p.Body, "only a scheduled campaign can be changed") || !strings.Contains(p.Body, "Duplicate") {
		t.Errorf("editing a canceled campaign: %d\n%s", p.Status, p.Body)
	}
}
