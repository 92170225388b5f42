package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// fieldsA configures brand A's custom fields for the contact form tests:
// an enum, a whole number, a yes/no and a date.
func (e *env) fieldsA(t testing.TB) {
	for _, f := range []*parley.CustomField{
		{FieldName: "Tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"Gold", "Silver"}},
		{FieldName: "Visits", CustomDataType: parley.CustomInteger},
		{FieldName: "VIP", CustomDataType: parley.CustomBoolean},
		{FieldName: "Joined", CustomDataType: parley.CustomDate},
	} {
		f.BrandID = e.BrandA.ID
		e.MustCreateField(t, f)
	}
}

// contactEditForm is the edit form as the page fills it, with changes.
func contactEditForm(changes map[string]string) url.Values {
	v := url.Values{"first_name": {"Ada"}, "last_name": {"Lovelace"}, "email": {"ada@example.com"}, "zip": {""},
		"consent": {"in"}, "reason": {""}, "cf_tier": {""}, "cf_visits": {""}, "cf_vip": {""}, "cf_joined": {""}}
	for k, val := range changes {
		v.Set(k, val)
	}
	return v
}

// TestContactEdit (issue #32, D18): an edit saves what the form changed
// through the API's update; the consent change and each custom data value
// are in the contact's history with source console and, as detail, the
// operator's email and the reason typed.
func TestContactEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fieldsA(t)
	u := e.contact(t, false, "+14155550123", "Ada", "Lovelace", "ada@example.com", ptr(true))
	w := e.signedIn(t, "agent@a.example")
	path := fmt.Sprintf("/console/contacts/%d/edit", u.ID)
	if p := w.get(path); p.Status != 200 || !strings.Contains(p.Body, `<option value="Gold"`) || !strings.Contains(p.Body, `type="date"`) {
		t.Fatalf("edit form: %d\n%s", p.Status, p.Body)
	}
	p := w.post(path, contactEditForm(map[string]string{"first_name": "Augusta", "zip": "10001", "consent": "out",
		"reason": "asked by phone to stop", "cf_tier": "Gold", "cf_visits": "3", "cf_vip": "true", "cf_joined": "2026-03-01"}))
	if p.Status != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", p.Status, p.Body)
	}
	got, err := e.App.Service.FindUserByID(e.Ctx, e.BrandA.ID, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *got.FirstName != "Augusta" || *got.LastName != "Lovelace" || *got.MessagingConsent || got.Location == nil || *got.Location.StateCode != "NY" {
		t.Errorf("after the edit: %+v", got)
	}
	var cd map[string]any
	_ = json.Unmarshal(got.CustomData, &cd)
	if cd["tier"] != "Gold" || cd["visits"] != 3.0 || cd["vip"] != "true" || cd["joined"] != "2026-03-01" {
		t.Errorf("custom data %s", got.CustomData)
	}
	hist, _, err := e.App.Service.UserHistory(e.Ctx, e.BrandA.ID, u.ID, parley.HistoryFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	for _, h := range hist {
		if h.Source == parley.SourceConsole {
			fields[h.Field] = true
			if h.Detail != "agent@a.example: asked by phone to stop" {
				t.Errorf("history %s detail %q, want the operator's email and the reason", h.Field, h.Detail)
			}
		}
	}
	for _, f := range []string{"messaging_consent", "custom_data.tier", "custom_data.visits", "custom_data.vip", "custom_data.joined"} {
		if !fields[f] {
			t.Errorf("no console history of %s: %+v", f, hist)
		}
	}
	// The contact page shows it, in words.
	if p := w.get(fmt.Sprintf("/console/contacts/%d", u.ID)); !strings.Contains(p.Body, "Console") || !strings.Contains(p.Body, "opted out") ||
		!strings.Contains(p.Body, "has opted out") || strings.Contains(p.Body, `id="body"`) {
		t.Errorf("contact page after opting out: want the history and the opted-out note instead of the reply box\n%s", p.Body)
	}
}

// TestContactEditRefusals (issue #32): a bad email, ZIP and number and a
// consent change without a reason are all refused at once, each next to
// its field, in words; nothing changes.
func TestContactEditRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fieldsA(t)
	u := e.contact(t, false, "+14155550123", "Ada", "Lovelace", "ada@example.com", ptr(true))
	w := e.signedIn(t, "agent@a.example")
	before := e.State(t) + e.Snapshot(t, "SELECT * FROM user_history")
	p := w.post(fmt.Sprintf("/console/contacts/%d/edit", u.ID), contactEditForm(map[string]string{"first_name": "Augusta",
		"email": "ada at example", "zip": "1000", "cf_visits": "many", "consent": "out"}))
	if p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", p.Status)
	}
	for _, want := range []string{"Nothing was saved: fix the 4 fields marked below.", "Enter one email address, like name@example.com.",
		"Enter a US ZIP code", "Enter a whole number, like 3.", "Say why the consent changes",
		`value="Augusta"`, `value="many"`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("refusal lacks %q", want)
		}
	}
	if after := e.State(t) + e.Snapshot(t, "SELECT * FROM user_history"); after != before {
		t.Error("a refused edit changed something")
	}
}

// TestContactAddAndDelete (issue #32, D22): a contact added with a
// national number (the brand's default country, US) and consent with a
// reason; a number taken or not a number refused in words; deleting asks
// first, naming the contact, then deletes.
func TestContactAddAndDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "agent@a.example")
	form := url.Values{"phone": {"(415) 555-0142"}, "first_name": {"Grace"}, "last_name": {"Hopper"}, "email": {""}, "zip": {""},
		"consent": {"in"}, "reason": {"signed up at the counter"}}
	p := w.post("/console/contacts/new", form)
	if p.Status != http.StatusSeeOther {
		t.Fatalf("add: %d\n%s", p.Status, p.Body)
	}
	u, err := e.App.Service.FindUserByPhone(e.Ctx, e.BrandA.ID, "+14155550142")
	if err != nil || *u.FirstName != "Grace" || u.MessagingConsent == nil || !*u.MessagingConsent {
		t.Fatalf("added contact: %+v, %v", u, err)
	}
	if p.Location != fmt.Sprintf("/console/contacts/%d", u.ID) {
		t.Errorf("after adding: %q", p.Location)
	}
	hist, _, _ := e.App.Service.UserHistory(e.Ctx, e.BrandA.ID, u.ID, parley.HistoryFilter{Limit: 10})
	if len(hist) != 1 || hist[0].Source != parley.SourceConsole || hist[0].Detail != "agent@a.example: signed up at the counter" {
		t.Errorf("history of the new contact: %+v", hist)
	}
	before := e.State(t)
	if p := w.post("/console/contacts/new", form); p.Status != 422 || !strings.Contains(p.Body, "+14155550142 is already a contact") {
		t.Errorf("taken number: %d\n%s", p.Status, p.Body)
	}
	form.Set("phone", "555-01")
	form.Set("email", "nope")
	if p := w.post("/console/contacts/new", form); p.Status != 422 || !strings.Contains(p.Body, "This is not a phone number we can text") ||
		!strings.Contains(p.Body, "Enter one email address") {
		t.Errorf("bad number and email: %d\n%s", p.Status, p.Body)
	}
	if e.State(t) != before {
		t.Error("a refused add changed something")
	}
	// Delete: a confirmation naming the contact, then the deletion.
	del := fmt.Sprintf("/console/contacts/%d/delete", u.ID)
	if p := w.get(del); p.Status != 200 || !strings.Contains(p.Body, "Delete Grace Hopper?") || !strings.Contains(p.Body, ">Delete Grace Hopper</button>") {
		t.Fatalf("confirmation: %d\n%s", p.Status, p.Body)
	}
	if _, err := e.App.Service.FindUserByID(e.Ctx, e.BrandA.ID, u.ID); err != nil {
		t.Fatal("the confirmation page deleted the contact")
	}
	if p := w.post(del, nil); p.Status != http.StatusSeeOther {
		t.Fatalf("delete: %d", p.Status)
	}
	if _, err := e.App.Service.FindUserByID(e.Ctx, e.BrandA.ID, u.ID); parley.ErrorCode(err) != parley.EUserNotFound {
		t.Errorf("after deleting: %v", err)
	}
	// Another brand's operator cannot delete or edit A's contacts.
	v := e.contact(t, false, "+14155550143", "", "", "", nil)
	wb := e.signedIn(t, "admin@b.example")
	if p := wb.post(fmt.Sprintf("/console/contacts/%d/delete", v.ID), nil); p.Status != 404 {
		t.Errorf("brand B deleting A's contact: %d", p.Status)
	}
	if p := wb.post(fmt.Sprintf("/console/contacts/%d/edit", v.ID), contactEditForm(nil)); p.Status != 404 {
		t.Errorf("brand B editing A's contact: %d", p.Status)
	}
}

// TestContactsListFilterAndExport (issue #32): the list's filter, total
// and export of the filter (the import format, only the matching
// contacts); a bad filter value is refused in words.
func TestContactsListFilterAndExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fieldsA(t)
	for i, tier := range []string{"Gold", "Silver", "Gold", ""} {
		in := parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555020%d", i))}
		in.FirstName = parley.Some(fmt.Sprintf("P%d", i))
		if tier != "" {
			in.CustomData = parley.Some(json.RawMessage(`{"tier":"` + tier + `"}`))
		}
		e.MustCreateUser(t, e.A, in)
	}
	w := e.signedIn(t, "admin@a.example")
	p := w.get("/console/contacts?field=tier&value=gold&sort=oldest")
	if p.Status != 200 || !strings.Contains(p.Body, "2 contacts match") || !strings.Contains(p.Body, "P0") || strings.Contains(p.Body, ">P1<") {
		t.Fatalf("filtered list: %d\n%s", p.Status, p.Body)
	}
	if !strings.Contains(p.Body, "/console/contacts/export?field=tier&amp;sort=oldest&amp;value=gold") &&
		!strings.Contains(p.Body, "/console/contacts/export?field=tier&sort=oldest&value=gold") {
		t.Errorf("no export link of the filter\n%s", p.Body)
	}
	x := w.get("/console/contacts/export?field=tier&value=gold")
	if x.Status != 200 || !strings.HasPrefix(x.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %s", x.Status, x.Header.Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(x.Body), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "+14155550200") || !strings.Contains(lines[2], "+14155550202") {
		t.Errorf("export of the filter: %q", lines)
	}
	if p := w.get("/console/contacts?field=visits&value=many"); p.Status != 422 || !strings.Contains(p.Body, "must be a whole number") {
		t.Errorf("bad value: %d\n%s", p.Status, p.Body)
	}
	// Agents see the list but not the export (it is every contact's data).
	if p := e.signedIn(t, "agent@a.example").get("/console/contacts/export"); p.Status != http.StatusForbidden {
		t.Errorf("agent export: %d", p.Status)
	}
}
