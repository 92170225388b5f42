package console_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley"
)

// Helpers and the access rules shared by the admin pages: Imports,
// Webhooks and Settings (D19, issue #18).

// upload posts a multipart form: fields in order, then the file part.
func (w *web) upload(path string, fields [][2]string, fileName, content string) page {
	w.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	if fileName != "" || content != "" {
		fw, _ := mw.CreateFormFile("file", fileName)
		fw.Write([]byte(content))
	}
	mw.Close()
	req, _ := http.NewRequest("POST", w.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	return w.do(req)
}

// consoleOrigin is the Origin of a console write by email.
func consoleOrigin(email string) parley.Origin {
	return parley.Origin{Source: parley.SourceConsole, Detail: email}
}

// adminState is the database as the admin pages could change it: the
// API's tables (brand settings among them) and imports, webhook endpoints,
// deliveries, events and operators.
func (e *env) adminState(t testing.TB) string {
	t.Helper()
	out := e.State(t)
	for _, table := range []string{"imports", "webhook_endpoints", "webhook_deliveries", "events", "operators"} {
		out += table + ":\n" + e.Snapshot(t, "SELECT * FROM "+table+" ORDER BY id")
	}
	return out
}

// adminFixtures are brand A's things the access tests ask for.
type adminFixtures struct {
	ImportID, WebhookID int64
}

func (e *env) adminFixtures(t *testing.T) adminFixtures {
	t.Helper()
	imp, err := e.App.Importer.CreateImport(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID, "a-contacts.csv",
		strings.NewReader("phone_number,first_name\n+14155550123,Ada\n"), parley.ImportOptions{})
	if err != nil {
		t.Fatalf("create import: %v", err)
	}
	wh, err := e.App.Service.CreateWebhook(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID,
		parley.WebhookCreate{URL: parley.Some("https://a.example/hook"), EventTypes: parley.Some([]string{"*"})})
	if err != nil {
		t.Fatalf("create webhook: %v", err)
	}
	return adminFixtures{ImportID: imp.ID, WebhookID: wh.ID}
}

// adminPaths are the admin pages' GETs and POSTs for brand A's fixtures.
func (f adminFixtures) paths() (gets, posts []string) {
	imp, wh := strconv.FormatInt(f.ImportID, 10), strconv.FormatInt(f.WebhookID, 10)
	gets = []string{"/console/imports", "/console/imports/" + imp, "/console/imports/" + imp + "/progress",
		"/console/imports/" + imp + "/errors.csv", "/console/webhooks", "/console/webhooks/" + wh,
		"/console/webhooks/" + wh + "/deliveries", "/console/settings"}
	posts = []string{"/console/imports", "/console/webhooks", "/console/webhooks/" + wh,
		"/console/settings", "/console/settings/operators"}
	return gets, posts
}

// TestAdminPagesAccess: Imports, Webhooks and Settings are for a brand's
// admins (D19): signed out → the sign-in page, an agent → 403 for every
// page and form (and the form changes nothing), and an admin of another
// brand → 404 for brand A's import and endpoint.
func TestAdminPagesAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.adminFixtures(t)
	gets, posts := f.paths()
	before := e.adminState(t)

	anon := e.web(t)
	for _, p := range gets {
		if pg := anon.get(p); pg.Status != http.StatusSeeOther || pg.Location != "/console/signin?next="+url.QueryEscape(p) {
			t.Errorf("GET %s signed out: %d %q, want 303 to sign in", p, pg.Status, pg.Location)
		}
	}
	for _, p := range posts {
		if pg := anon.post(p, url.Values{"action": {"delete"}}); pg.Status != http.StatusSeeOther || !strings.HasPrefix(pg.Location, "/console/signin") {
			t.Errorf("POST %s signed out: %d %q, want 303 to sign in", p, pg.Status, pg.Location)
		}
	}

	agent := e.signedIn(t, "agent@a.example")
	for _, p := range gets {
		if pg := agent.get(p); pg.Status != http.StatusForbidden || pg.h1() != "Forbidden" {
			t.Errorf("GET %s as agent: %d %q, want 403 Forbidden", p, pg.Status, pg.h1())
		}
	}
	for _, p := range posts {
		form := url.Values{"action": {"delete"}, "url": {"https://agent.example/"}, "all_events": {"1"},
			"window_start": {"00:00"}, "window_end": {"00:00"}, "time_zone": {"UTC"}, "send_rate": {"5"},
			"email": {"x@a.example"}, "role": {"admin"}, "password": {password}}
		if pg := agent.post(p, form); pg.Status != http.StatusForbidden {
			t.Errorf("POST %s as agent: %d, want 403", p, pg.Status)
		}
	}
	if pg := agent.upload("/console/imports", nil, "x.csv", "phone_number\n+14155550199\n"); pg.Status != http.StatusForbidden {
		t.Errorf("upload as agent: %d, want 403", pg.Status)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("an agent's posts changed the database:\nbefore %s\nafter  %s", before, after)
	}
	// The nav shows an agent no admin page.
	for _, nav := range []string{">Imports<", ">Webhooks<", ">Settings<"} {
		if pg := agent.get("/console/"); strings.Contains(pg.Body, nav) {
			t.Errorf("the agent's nav links %s", nav)
		}
	}

	b := e.signedIn(t, "admin@b.example")
	imp, wh := strconv.FormatInt(f.ImportID, 10), strconv.FormatInt(f.WebhookID, 10)
	for _, p := range []string{"/console/imports/" + imp, "/console/imports/" + imp + "/progress",
		"/console/imports/" + imp + "/errors.csv", "/console/webhooks/" + wh, "/console/webhooks/" + wh + "/deliveries"} {
		if pg := b.get(p); pg.Status != http.StatusNotFound {
			t.Errorf("GET %s as brand B's admin: %d, want 404", p, pg.Status)
		}
	}
	for _, action := range []string{"test", "delete", "retry", "disable"} {
		if pg := b.post("/console/webhooks/"+wh, url.Values{"action": {action}, "delivery": {"1"}}); pg.Status != http.StatusNotFound {
			t.Errorf("POST %s on brand A's endpoint as brand B's admin: %d, want 404", action, pg.Status)
		}
	}
	if pg := b.post("/console/settings/operators", url.Values{"action": {"remove"}, "id": {strconv.FormatInt(e.AgentA.ID, 10)}}); pg.Status != http.StatusNotFound {
		t.Errorf("brand B's admin removes brand A's agent: %d, want 404", pg.Status)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("brand B's posts changed brand A:\nbefore %s\nafter  %s", before, after)
	}
	// Lists show only brand B's own.
	for p, theirs := range map[string]string{"/console/imports": "a-contacts.csv", "/console/webhooks": "a.example/hook",
		"/console/settings": "agent@a.example"} {
		pg := b.get(p)
		if pg.Status != http.StatusOK || strings.Contains(pg.Body, theirs) {
			t.Errorf("GET %s as brand B's admin: %d, shows brand A's %q: %v", p, pg.Status, theirs, strings.Contains(pg.Body, theirs))
		}
	}
	// And brand A's admin sees them, each page with its <h1>.
	a := e.signedIn(t, "admin@a.example")
	for p, want := range map[string]string{"/console/imports": "Imports", "/console/imports/" + imp: "Import of a-contacts.csv",
		"/console/webhooks": "Webhooks", "/console/webhooks/" + wh: "Webhook https://a.example/hook", "/console/settings": "Settings"} {
		if pg := a.get(p); pg.Status != http.StatusOK || pg.h1() != want {
			t.Errorf("GET %s as brand A's admin: %d %q, want 200 %q", p, pg.Status, pg.h1(), want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Value returns the value of the field labelled label.
func (b *browser) Value(label string) string {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(`+string(labelled(label))+`).value`))
	if err != nil {
		b.t.Fatalf("browser: value of %q: %v", label, err)
	}
	return v
}

// TestAdminFormsCrossOriginRefused: the admin pages' forms posted from
// another site, with an admin's cookie, are refused and change nothing
// (D19, http.CrossOriginProtection).
func TestAdminFormsCrossOriginRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.adminFixtures(t)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"/console/webhooks", url.Values{"url": {"https://evil.example/"}, "all_events": {"1"}}},
		{"/console/webhooks/" + itoa(f.WebhookID), url.Values{"action": {"delete"}}},
		{"/console/settings", settingsForm("window_start", "00:00", "window_end", "00:00")},
		{"/console/settings/operators", url.Values{"action": {"add"}, "email": {"evil@a.example"}, "role": {"admin"}, "password": {password}}},
		{"/console/settings/operators", url.Values{"action": {"remove"}, "id": {itoa(e.AgentA.ID)}}},
	} {
		for _, h := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}} {
			if p := w.post(c.path, c.form, h...); p.Status != http.StatusForbidden {
				t.Errorf("cross-origin POST %s (%s): %d, want 403", c.path, h[0], p.Status)
			}
		}
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "evil.csv")
	fw.Write([]byte("phone_number\n+14155550199\n"))
	mw.Close()
	req, _ := http.NewRequest("POST", w.base+"/console/imports", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if p := w.do(req); p.Status != http.StatusForbidden {
		t.Errorf("cross-origin upload: %d, want 403", p.Status)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("cross-origin posts changed the database:\nbefore %s\nafter  %s", before, after)
	}
}
