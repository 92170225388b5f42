package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
)

// campaignForm is the create form: name, segment, body, now or a local
// time of the brand's zone.
func campaignForm(name string, segID int64, body, sendAt string) url.Values {
	f := url.Values{"name": {name}, "segment_id": {itoa(segID)}, "body": {body}, "type": {"MARKETING"}, "when": {"now"}, "action": {"create"}}
	if sendAt != "" {
		f.Set("when", "later")
		f.Set("send_at", sendAt)
	}
	return f
}

// TestCampaignForm: an admin creates a campaign from the form; each D16
// refusal (past send_at, archived segment, another brand's segment, body
// too long, no name, no time) is shown next to its field and creates
// nothing; send_at is read in the brand's time zone (D17); the body's
// counter counts characters and SMS segments (D16, D19).
func TestCampaignForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.SetNow(time.Date(2026, 6, 10, 17, 0, 0, 0, time.UTC))
	if _, err := e.App.Service.UpdateBrandSettings(e.Ctx, e.BrandA.ID, parley.BrandSettingsUpdate{TimeZone: parley.Some("America/Chicago")}); err != nil {
		t.Fatal(err)
	}
	seg := e.mustSegment(t, false, "Everyone", nil)
	archived := e.mustSegment(t, false, "Old", nil)
	if _, err := e.App.Service.ArchiveSegment(e.Ctx, parley.Origin{Source: "test"}, e.BrandA.ID, archived.ID); err != nil {
		t.Fatal(err)
	}
	theirs := e.mustSegment(t, true, "Theirs", nil)
	w := e.signedIn(t, "admin@a.example")
	if p := w.get("/console/campaigns/new"); p.h1() != "New campaign" || !strings.Contains(p.Body, "Send at (America/Chicago)") ||
		!strings.Contains(p.Body, ">Everyone</option>") || strings.Contains(p.Body, ">Old</option>") || strings.Contains(p.Body, "Theirs") {
		t.Errorf("the form:\n%s", p.Body)
	}
	if p := w.get("/console/campaigns/new?segment=" + itoa(seg.ID)); !strings.Contains(p.Body, `<option value="`+itoa(seg.ID)+`" selected>Everyone</option>`) {
		t.Errorf("the segment's link does not preselect it:\n%s", p.Body)
	}
	before := e.Snapshot(t, `SELECT id FROM campaigns`) + e.Snapshot(t, `SELECT id FROM messages`)
	bad := []struct {
		name  string
		form  url.Values
		field string
		want  string
	}{
		{"PastSendAt", campaignForm("Sale", seg.ID, "Hi", "2026-06-10T11:58"), "send_at", "send_at: more than 60 seconds in the past"},
		{"NoSendAt", campaignForm("Sale", seg.ID, "Hi", " "), "send_at", "choose a date and time"},
		// At most a year ahead (D16, #31 item 9): now is 12:00 in Chicago.
		{"SendAtAYearAndAMinute", campaignForm("Sale", seg.ID, "Hi", "2027-06-10T12:01"), "send_at", "send_at: more than one year ahead"},
		{"SendAtYear9999", campaignForm("Sale", seg.ID, "Hi", "9999-12-31T23:59"), "send_at", "send_at: more than one year ahead"},
		{"ArchivedSegment", campaignForm("Sale", archived.ID, "Hi", ""), "segment_id", "is archived"},
		{"OtherBrandsSegment", campaignForm("Sale", theirs.ID, "Hi", ""), "segment_id", "not found"},
		{"NoSegment", url.Values{"name": {"Sale"}, "body": {"Hi"}, "when": {"now"}}, "segment_id", "segment_id: required"},
		{"BodyTooLong", campaignForm("Sale", seg.ID, strings.Repeat("a", 1601), ""), "body", "body: at most 1600 characters"},
		{"NoBody", campaignForm("Sale", seg.ID, "", ""), "body", "body: required"},
		{"NoName", campaignForm(" ", seg.ID, "Hi", ""), "name", "name: required"},
		{"BadType", func() url.Values { f := campaignForm("Sale", seg.ID, "Hi", ""); f.Set("type", "SPAM"); return f }(), "type", "type: must be one of"},
	}
	for _, c := range bad {
		p := w.post("/console/campaigns/new", c.form)
		near := regexp.MustCompile(`(?s)id="` + c.field + `".*?field-error">([^<]*)<`).FindStringSubmatch(p.Body)
		if p.Status != http.StatusUnprocessableEntity || near == nil || !strings.Contains(near[1], c.want) ||
			!strings.Contains(p.Body, "The campaign was not created") {
			t.Errorf("%s: %d, want 422 with %q next to %s\n%s", c.name, p.Status, c.want, c.field, p.Body)
		}
		if c.name != "NoName" && !strings.Contains(p.Body, `value="Sale"`) {
			t.Errorf("%s: the form lost what was typed", c.name)
		}
	}
	if after := e.Snapshot(t, `SELECT id FROM campaigns`) + e.Snapshot(t, `SELECT id FROM messages`); after != before {
		t.Fatalf("refused forms created campaigns or messages:\n%s", after)
	}

	// The counter: GSM-7 and UCS-2, one and several segments.
	for body, want := range map[string]string{
		"Hello":                  "5 characters · 1 SMS segment (GSM-7)",
		strings.Repeat("a", 161): "161 characters · 2 SMS segments (GSM-7)",
		"Olá 😀":                  "5 characters · 1 SMS segment (UCS-2)",
		strings.Repeat("ç", 71):  "71 characters · 2 SMS segments (UCS-2)",
	} {
		if p := w.post("/console/campaigns/counter", url.Values{"body": {body}}); !strings.Contains(p.Body, want) {
			t.Errorf("counter of %q: %s, want %q", body, p.Body, want)
		}
	}
	if p := w.post("/console/campaigns/new", url.Values{"body": {strings.Repeat("a", 1601)}, "action": {"count"}}); p.Status != 200 ||
		!strings.Contains(p.Body, "1601 characters · 11 SMS segments (GSM-7) · too long: at most 1600 characters") {
		t.Errorf("the counter without the script: %d\n%s", p.Status, p.Body)
	}

	// Scheduled at 14:30 Chicago time (CDT, UTC−5) the next day.
	p := w.post("/console/campaigns/new", campaignForm("Summer sale", seg.ID, "20% off today", "2026-06-11T14:30"))
	m := regexp.MustCompile(`^/console/campaigns/(\d+)$`).FindStringSubmatch(p.Location)
	if p.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("create: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	camps, _, err := e.App.Service.ListCampaigns(e.Ctx, e.BrandA.ID, parley.CampaignFilter{})
	if err != nil || len(camps) != 1 || itoa(camps[0].ID) != m[1] || camps[0].Name != "Summer sale" || camps[0].Body != "20% off today" ||
		camps[0].SegmentID != seg.ID || camps[0].Type != parley.TypeMarketing || camps[0].Status != parley.CampaignScheduled ||
		!camps[0].SendAt.Equal(time.Date(2026, 6, 11, 19, 30, 0, 0, time.UTC)) {
		t.Fatalf("created: %+v %v", camps, err)
	}
	page := w.get(p.Location)
	if page.h1() != "Campaign Summer sale" || !strings.Contains(page.Body, "2026-06-11 14:30 CDT") || !strings.Contains(page.Body, "<b class=\"status\">scheduled</b>") ||
		!strings.Contains(page.Body, "data-pending") || !strings.Contains(page.Body, "<progress") {
		t.Errorf("the campaign page:\n%s", page.Body)
	}
	if list := w.get("/console/campaigns"); !strings.Contains(list.Body, `href="/console/campaigns/`+m[1]+`">Summer sale</a></td>`+"\n"+`<td class="wrap" data-label="Status"><div>scheduled</div></td>`) {
		t.Errorf("the list:\n%s", list.Body)
	}
	// Now: send_at is the server's clock.
	p = w.post("/console/campaigns/new", campaignForm("Flash", seg.ID, "Now!", ""))
	if p.Status != http.StatusSeeOther {
		t.Fatalf("create now: %d\n%s", p.Status, p.Body)
	}
	camps, _, _ = e.App.Service.ListCampaigns(e.Ctx, e.BrandA.ID, parley.CampaignFilter{})
	if len(camps) != 2 || camps[0].Name != "Flash" || !camps[0].SendAt.Equal(e.Now()) {
		t.Errorf("created now: %+v", camps[0])
	}
}

// TestCampaignCancel: Cancel asks first; the confirmed cancel uses the
// service's cancel; a canceled campaign has no Cancel button; bad ids are
// 404 (D16, D19).
func TestCampaignCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seg := e.mustSegment(t, false, "Everyone", nil)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/campaigns/new", campaignForm("Later", seg.ID, "Hi", e.Now().Add(48*time.Hour).UTC().Format("2006-01-02T15:04")))
	if p.Status != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Status, p.Body)
	}
	cp := p.Location
	if got := w.post(cp, url.Values{"action": {"cancel"}}); got.Status != http.StatusSeeOther || got.Location != cp+"?confirm=cancel" {
		t.Fatalf("cancel without confirming: %d %q", got.Status, got.Location)
	}
	confirm := w.get(cp + "?confirm=cancel")
	if !strings.Contains(confirm.Body, "Cancel this campaign?") || !strings.Contains(confirm.Body, "Yes, cancel the campaign") {
		t.Errorf("the confirmation:\n%s", confirm.Body)
	}
	camps, _, _ := e.App.Service.ListCampaigns(e.Ctx, e.BrandA.ID, parley.CampaignFilter{})
	if camps[0].Status != parley.CampaignScheduled {
		t.Fatalf("canceled before confirming: %s", camps[0].Status)
	}
	if got := w.post(cp, url.Values{"action": {"delete"}, "confirm": {"yes"}}); got.Status != http.StatusUnprocessableEntity {
		t.Errorf("unknown action: %d", got.Status)
	}
	if got := w.post(cp, url.Values{"action": {"cancel"}, "confirm": {"yes"}}); got.Status != http.StatusSeeOther || got.Location != cp+"?done=canceled" {
		t.Fatalf("cancel: %d %q\n%s", got.Status, got.Location, got.Body)
	}
	c, _ := e.App.Service.FindCampaign(e.Ctx, e.BrandA.ID, camps[0].ID)
	if c.Status != parley.CampaignCanceled {
		t.Fatalf("status after cancel: %s", c.Status)
	}
	page := w.get(cp + "?done=canceled")
	if !strings.Contains(page.Body, "Campaign canceled") || strings.Contains(page.Body, "Cancel campaign") || strings.Contains(page.Body, "data-pending") {
		t.Errorf("the canceled campaign's page:\n%s", page.Body)
	}
	for _, bad := range []string{"/console/campaigns/0", "/console/campaigns/x", "/console/campaigns/99999", "/console/segments/99999", "/console/segments/x/members"} {
		if got := w.get(bad); got.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", bad, got.Status)
		}
	}
}

// TestCampaignCanceledByServer: a campaign the scheduler ended because
// its segment could not be resolved shows why on its page (issue #31).
func TestCampaignCanceledByServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seg := e.mustSegment(t, false, "Everyone", nil)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/campaigns/new", campaignForm("Broken", seg.ID, "Hi", ""))
	if p.Status != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Status, p.Body)
	}
	// Its segment's criteria become unreadable after it was scheduled.
	q := `UPDATE segments SET criteria = '{"not": "a list"}' WHERE id = $1`
	if e.App.DB.Engine() == "sqlite" {
		q = strings.Replace(q, "$1", "?", 1)
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, q, seg.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	page := w.get(p.Location)
	if !strings.Contains(page.Body, "<b class=\"status\">canceled</b>") ||
		!strings.Contains(page.Body, "Canceled by the server: The campaign's segment could not be resolved at send_at") {
		t.Errorf("the page of a campaign the server canceled:\n%s", page.Body)
	}
}
