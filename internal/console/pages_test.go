package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

func ptr[T any](v T) *T { return &v }

// contact creates a contact of brand A (b false) or B through the API.
func (e *env) contact(t testing.TB, brandB bool, phone, first, last, email string, consent *bool) *parley.User {
	t.Helper()
	c := e.A
	if brandB {
		c = e.B
	}
	in := parley.UserCreate{PhoneNumber: parley.Some(phone)}
	if first != "" {
		in.FirstName = parley.Some(first)
	}
	if last != "" {
		in.LastName = parley.Some(last)
	}
	if email != "" {
		in.EmailAddress = parley.Some(email)
	}
	if consent != nil {
		in.MessagingConsent = parley.Some(*consent)
	}
	return e.MustCreateUser(t, c, in)
}

// TestPageAccessRules: every page's access, for each kind of visitor
// (D19): signed out → sign in; an agent → the agent pages, 403 on admin
// pages; an admin → every page; another brand's operator → 404 for this
// brand's contacts; and each form refuses the same way, changing nothing.
func TestPageAccessRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u := e.contact(t, false, "+14155550123", "Ada", "Lovelace", "ada@example.com", ptr(true))
	cu := fmt.Sprintf("/console/contacts/%d", u.ID)
	pages := []struct {
		path  string
		admin bool // admins only
		brand bool // brand A's data: 404 for brand B
	}{
		{"/console/", true, false}, // agents are sent to the inbox
		{"/console/contacts", false, false},
		{"/console/contacts?q=ada", false, false},
		{cu, false, true},
		{cu + "/conversation", false, true},
		{cu + "/edit", false, true},             // issue #32
		{cu + "/delete", false, true},           // the confirmation; the deletion is a POST
		{"/console/contacts/new", false, false}, // issue #32
		{"/console/contacts/export", true, false},
		{"/console/contacts?consent=in&sort=name", false, false},
		{"/console/inbox", false, false},
		{"/console/password", false, false},
		{"/console/test-admin", true, false},
	}
	out := e.web(t)
	agentA, adminA, adminB := e.signedIn(t, "agent@a.example"), e.signedIn(t, "admin@a.example"), e.signedIn(t, "admin@b.example")
	for _, p := range pages {
		if got := out.get(p.path); got.Status != http.StatusSeeOther || !strings.HasPrefix(got.Location, "/console/signin?next=") {
			t.Errorf("signed out GET %s: %d %q, want 303 to sign in", p.path, got.Status, got.Location)
		}
		want := map[*web]int{agentA: 200, adminA: 200, adminB: 200}
		if p.admin {
			want[agentA] = http.StatusForbidden
			if p.path == "/console/" {
				want[agentA] = http.StatusSeeOther
			}
		}
		if p.brand {
			want[adminB] = http.StatusNotFound
		}
		for w, status := range want {
			if got := w.get(p.path); got.Status != status {
				t.Errorf("GET %s: %d, want %d\n%s", p.path, got.Status, status, got.h1())
			}
		}
	}
	if got := adminB.get(cu); strings.Contains(got.Body, "Lovelace") || strings.Contains(got.Body, "+14155550123") {
		t.Errorf("brand B's operator sees brand A's contact")
	}
	for _, bad := range []string{"/console/contacts/0", "/console/contacts/x", "/console/contacts/99999"} {
		if got := adminA.get(bad); got.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", bad, got.Status)
		}
	}

	// The reply form.
	send := url.Values{"body": {"Hello Ada"}}
	before := e.Count(t, "messages")
	if got := out.post(cu, send); got.Status != http.StatusSeeOther || !strings.HasPrefix(got.Location, "/console/signin") {
		t.Errorf("signed out reply: %d %q", got.Status, got.Location)
	}
	if got := adminB.post(cu, send); got.Status != http.StatusNotFound {
		t.Errorf("brand B's reply to brand A's contact: %d, want 404", got.Status)
	}
	if n := e.Count(t, "messages"); n != before {
		t.Fatalf("refused replies created %d messages", n-before)
	}
	if got := agentA.post(cu, send); got.Status != http.StatusSeeOther || got.Location != cu+"#conversation" {
		t.Errorf("agent's reply: %d %q, want 303 back to the conversation", got.Status, got.Location)
	}
	if got := agentA.post(cu, url.Values{"body": {"  "}}); got.Status != http.StatusUnprocessableEntity || !strings.Contains(got.Body, "Not sent:") {
		t.Errorf("empty reply: %d, want 422 with the reason", got.Status)
	}
	if n := e.Count(t, "messages"); n != before+1 {
		t.Errorf("%d messages created, want 1", n-before)
	}
	// The reply is recorded as the console's, by the operator (D18).
	msgs, _, err := e.App.Service.ListMessages(e.Ctx, e.BrandA.ID, parley.MessageFilter{UserID: u.ID})
	if err != nil || len(msgs) != 1 || msgs[0].Body != "Hello Ada" || msgs[0].Direction != parley.DirectionOutbound {
		t.Fatalf("messages of the contact: %v %v", msgs, err)
	}
	conv := agentA.get(cu + "/conversation")
	if !strings.Contains(conv.Body, "Hello Ada") || strings.Contains(conv.Body, "<h1>") || !strings.Contains(conv.Body, "data-pending") {
		t.Errorf("conversation fragment: want the reply, pending, without the layout:\n%s", conv.Body)
	}
}

// TestContactSearch: search by phone (whole, formatted, or a prefix),
// by email in any case, and by name (a prefix of the first or last name,
// or first and last), never finding another brand's contacts (D19).
func TestContactSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.contact(t, false, "+14155550123", "Ada", "Lovelace", "Ada@Example.com", nil)
	e.contact(t, false, "+14155550199", "Grace", "Hopper", "grace@example.com", nil)
	e.contact(t, false, "+16175550100", "Alan", "Turing", "", nil)
	e.contact(t, true, "+14155550123", "Ada", "Byron", "ada@example.com", nil) // brand B's
	w := e.signedIn(t, "agent@a.example")
	for q, want := range map[string][]string{
		"(415) 555-0123":     {"Ada Lovelace"},
		"+1 415 555 0123":    {"Ada Lovelace"},
		"+1415555":           {"Ada Lovelace", "Grace Hopper"},
		"1617":               {"Alan Turing"},
		"ada@example.COM":    {"Ada Lovelace"},
		"ada":                {"Ada Lovelace"},
		"AL":                 {"Alan Turing"},
		"hop":                {"Grace Hopper"},
		"ada love":           {"Ada Lovelace"},
		"grace lovelace":     {},
		"byron":              {},
		"nobody@example.com": {},
		"":                   {"Ada Lovelace", "Grace Hopper", "Alan Turing"},
	} {
		p := w.get("/console/contacts?q=" + url.QueryEscape(q))
		if p.Status != 200 {
			t.Fatalf("search %q: %d", q, p.Status)
		}
		for _, name := range []string{"Ada Lovelace", "Grace Hopper", "Alan Turing", "Ada Byron"} {
			found := strings.Contains(p.Body, ">"+name+"</a>")
			if wanted := contains(want, name); found != wanted {
				t.Errorf("search %q: %s found %v, want %v", q, name, found, wanted)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// startedEnv is newEnv with the delivery workers and the simulator
// running; the simulator reports delivery a second after a send, by the
// test's clock.
func startedEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, func(c *app.Config) { c.SimDelay = time.Second })
	if err := e.App.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// waitStatus waits (10 s at most) until the message has status.
func (e *env) waitStatus(t *testing.T, userID int64, status string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		msgs, _, err := e.App.Service.ListMessages(e.Ctx, e.BrandA.ID, parley.MessageFilter{UserID: userID, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > 0 && msgs[0].Status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the latest message of %d never reached %s: %+v", userID, status, msgs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestInbox: the conversations of the brand, newest text first; one whose
// latest text has no reply sent after it is waiting, and a sent reply ends
// the wait (D19, issue #32).
func TestInbox(t *testing.T) {
	t.Parallel()
	e := startedEnv(t)
	ann := e.contact(t, false, "+14155550111", "Ann", "First", "", ptr(true))
	e.contact(t, false, "+14155550112", "Bob", "Second", "", ptr(true))
	e.contact(t, false, "+14155550113", "Cy", "Silent", "", ptr(true))
	e.contact(t, true, "+14155550114", "Dee", "OtherBrand", "", ptr(true))
	for _, m := range []struct {
		brandB bool
		from   string
	}{{false, "+14155550111"}, {true, "+14155550114"}, {false, "+14155550112"}} {
		c := e.A
		if m.brandB {
			c = e.B
		}
		if _, err := c.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some(m.from), Body: parley.Some("hello?")}); err != nil {
			t.Fatal(err)
		}
		e.Advance(time.Minute) // Bob's text is the newer
	}
	w := e.signedIn(t, "agent@a.example")
	p := w.get("/console/inbox")
	iAnn, iBob := strings.Index(p.Body, "Ann First"), strings.Index(p.Body, "Bob Second")
	if p.Status != 200 || iAnn < 0 || iBob < 0 || iBob > iAnn || strings.Contains(p.Body, "Cy Silent") || strings.Contains(p.Body, "Dee") ||
		strings.Count(p.Body, "Waiting for an answer") != 2 {
		t.Fatalf("inbox: want Bob then Ann, both waiting, not Cy nor brand B's Dee:\n%s", p.Body)
	}
	w.post(fmt.Sprintf("/console/contacts/%d", ann.ID), url.Values{"body": {"Hi Ann"}})
	e.waitStatus(t, ann.ID, parley.StatusSent)
	p = w.get("/console/inbox")
	if !strings.Contains(p.Body, "Ann First") || strings.Count(p.Body, "Waiting for an answer") != 1 {
		t.Errorf("inbox after answering Ann: want Ann still listed and only Bob waiting:\n%s", p.Body)
	}
}

// TestDashboard: the dashboard's counts of contacts and messages, and
// the chart's totals, of the operator's brand only (D19). The 24-hour
// table counts what the chart counts, texts sent, with inbound texts
// apart and canceled apart from failed; the chart's days are the brand's;
// the last campaigns show with their results (issue #32).
func TestDashboard(t *testing.T) {
	t.Parallel()
	e := startedEnv(t)
	w := e.signedIn(t, "admin@a.example")
	// A first run: nothing yet, so the page shows the first steps.
	p := w.get("/console/")
	for _, want := range []string{"Import contacts →", "Create a campaign →"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("empty brand's dashboard lacks %q", want)
		}
	}
	in := e.contact(t, false, "+14155550121", "In", "", "", ptr(true))
	e.contact(t, false, "+14155550122", "Out", "", "", ptr(false))
	e.contact(t, false, "+14155550123", "None", "", "", nil)
	e.contact(t, true, "+14155550124", "B", "", "", ptr(true))
	w.post(fmt.Sprintf("/console/contacts/%d", in.ID), url.Values{"body": {"Hello"}})
	e.waitStatus(t, in.ID, parley.StatusSent)
	e.Advance(2 * time.Second)
	e.waitStatus(t, in.ID, parley.StatusDelivered)
	if _, err := e.A.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some("+14155550122"), Body: parley.Some("hi")}); err != nil {
		t.Fatal(err)
	}
	// A campaign canceled before it sends: its messages are canceled, not failed.
	seg := e.mustSegment(t, false, "Everyone", nil)
	camp, err := e.App.Service.CreateCampaign(e.Ctx, parley.Origin{}, e.BrandA.ID, parley.CampaignCreate{Name: parley.Some("Spring"),
		SegmentID: parley.Some(seg.ID), Body: parley.Some("Sale"), SendAt: parley.Some(e.Now().Add(time.Hour).Format(time.RFC3339))})
	if err != nil {
		t.Fatal(err)
	}
	err = e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error { // resolved and canceled at once: no sender sees it
		if _, err := tx.ResolveCampaign(e.Ctx, camp, store.Audience{SegmentID: seg.ID}); err != nil {
			return err
		}
		_, _, err := tx.CancelCampaign(e.Ctx, e.BrandA.ID, camp.ID, "", nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Advance(6 * time.Minute) // past the figures' 5 min: this view reads them again
	p = w.get("/console/")
	for _, want := range []string{"<b>3</b> contacts", "<b>1</b> opted in", "<b>1</b> opted out", "<b>1</b> texts received",
		`<th scope="col">Canceled</th>`, "1 sent, 1 delivered", "days and hours in America/New_York", "Spring"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("dashboard lacks %q:\n%s", want, p.Body)
		}
	}
	if strings.Contains(p.Body, "Import contacts →") || strings.Contains(p.Body, "Create a campaign →") {
		t.Errorf("the first steps still show with contacts and a campaign")
	}
	// Opt-ins and opt-outs per day (consent_hourly): brand A's one each today, not brand B's.
	ny, _ := time.LoadLocation("America/New_York")
	if want := "<td>" + e.Now().In(ny).Format("Mon 2 Jan") + "</td><td>1</td><td>1</td>"; !strings.Contains(p.Body, want) {
		t.Errorf("opt-ins and opt-outs: want %q:\n%s", want, p.Body)
	}
	// 24 h: the delivered reply; the inbound text apart; the canceled one apart from failed.
	if !strings.Contains(p.Body, "<td>0</td><td>0</td><td>1</td><td>0</td><td>0</td><td>1</td>") {
		t.Errorf("24 h: want waiting 0, sent 0, delivered 1, not delivered 0, failed 0, canceled 1:\n%s", p.Body)
	}
	// A day later the 24 h counts are empty, the chart still has them.
	e.Advance(25 * time.Hour)
	w.signIn("admin@a.example") // the session has ended
	p = w.get("/console/")
	if !strings.Contains(p.Body, "<td>0</td><td>0</td><td>0</td><td>0</td><td>0</td><td>0</td>") || !strings.Contains(p.Body, "1 sent, 1 delivered") {
		t.Errorf("a day later:\n%s", p.Body)
	}
}

// TestContactPage: a contact's page shows the fields, custom data, the
// location with the local time in the D17 zone (the ZIP's, else the
// number's area code's, else the brand's), the history (D18), and the
// conversation with the newest message at the bottom.
func TestContactPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Tier", CustomDataType: parley.CustomString})
	e.SetNow(time.Date(2026, 11, 25, 18, 30, 0, 0, time.UTC))
	sf := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+16175550100"), UserFields: parley.UserFields{
		FirstName: parley.Some("Sam"), PostalCode: parley.Some("94103"), MessagingConsent: parley.Some(true),
		CustomData: parley.Some(json.RawMessage(`{"tier":"gold"}`))}})
	bos := e.contact(t, false, "+16175550101", "Bo", "", "", nil)
	w := e.signedIn(t, "agent@a.example")
	for _, m := range []string{"first text", "second text"} {
		if _, err := e.A.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some("+16175550100"), Body: parley.Some(m)}); err != nil {
			t.Fatal(err)
		}
		e.Advance(time.Minute)
	}
	p := w.get(fmt.Sprintf("/console/contacts/%d", sf.ID))
	for _, want := range []string{"<h1>Sam</h1>", "+16175550100", "opted in", "<td>tier</td><td>gold</td>",
		"San Francisco", "Wed 10:32 PST</b> (America/Los_Angeles)", // the ZIP's zone, not the 617 area code's
		"<td>Consent</td><td>(none)</td><td>opted in</td><td>API</td>", "<td>tier</td><td>(none)</td><td>gold</td>"} { // history in words (issue #32)
		if !strings.Contains(p.Body, want) {
			t.Errorf("contact page lacks %q", want)
		}
	}
	if i, j := strings.Index(p.Body, "first text"), strings.Index(p.Body, "second text"); i < 0 || j < i {
		t.Errorf("conversation: want the newest at the bottom (first at %d, second at %d)", i, j)
	}
	p = w.get(fmt.Sprintf("/console/contacts/%d", bos.ID))
	if !strings.Contains(p.Body, "(America/New_York)") || !strings.Contains(p.Body, "No postal code.") {
		t.Errorf("a contact without a ZIP: want the 617 area code's zone")
	}
}

// TestBrowserOtherBrandContact: an operator who opens another brand's
// contact sees Not found, and nothing of the contact (D19).
func TestBrowserOtherBrandContact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u := e.contact(t, false, "+14155550123", "Ada", "Lovelace", "", nil)
	b := newBrowser(t, e.Server.URL)
	b.signIn("admin@b.example", password)
	b.Go(fmt.Sprintf("/console/contacts/%d", u.ID))
	if h, txt := b.H1(), b.Text(); h != "Not found" || strings.Contains(txt, "Lovelace") {
		t.Fatalf("brand B opens brand A's contact: %q\n%s", h, txt)
	}
}

// TestDashboardFiguresRefresh: the dashboard's figures are kept 30 s;
// older ones are shown while a refresh runs, up to 5 minutes, after which
// a view waits for fresh ones.
func TestDashboardFiguresRefresh(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.contact(t, false, "+14155550121", "One", "", "", nil)
	w := e.signedIn(t, "admin@a.example")
	if p := w.get("/console/"); !strings.Contains(p.Body, "<b>1</b> contacts") {
		t.Fatalf("dashboard: want 1 contact")
	}
	e.contact(t, false, "+14155550122", "Two", "", "", nil)
	e.Advance(10 * time.Second)
	if p := w.get("/console/"); !strings.Contains(p.Body, "<b>1</b> contacts") {
		t.Errorf("figures 10 s old were read again")
	}
	e.Advance(25 * time.Second) // 35 s: stale, refreshed in the background
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p := w.get("/console/"); strings.Contains(p.Body, "<b>2</b> contacts") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stale figures were never refreshed")
		}
	}
	e.contact(t, false, "+14155550123", "Three", "", "", nil)
	e.Advance(6 * time.Minute) // too old to show: read at once
	if p := w.get("/console/"); !strings.Contains(p.Body, "<b>3</b> contacts") {
		t.Errorf("figures 6 minutes old were shown")
	}
}
