package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestOperatorNewLink: "Send a new link" shows a fresh one-time sign-in
// link at the top of Settings; the operator's earlier links stop working
// and the new one signs in; another brand's operator is not found
// (issue #32, D19).
func TestOperatorNewLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/settings/operators", url.Values{"action": {"add"}, "email": {"late@a.example"}, "role": {"agent"}})
	m := linkInput.FindStringSubmatch(p.Body)
	if p.Status != http.StatusCreated || m == nil || !strings.Contains(p.Body, ">Copy link</button>") {
		t.Fatalf("add without password: %d, want the link with a copy button\n%s", p.Status, p.Body)
	}
	if strings.Index(p.Body, `id="signin-link"`) > strings.Index(p.Body, "Sending rules") {
		t.Errorf("the link is not at the top of the page")
	}
	old := tokenOf(t, m[1])
	ops, _ := e.App.Operators.List(e.Ctx, e.BrandA.ID)
	late := ops[len(ops)-1]
	if late.Email != "late@a.example" {
		t.Fatalf("operators: %+v", ops)
	}
	p = w.post("/console/settings/operators", url.Values{"action": {"newlink"}, "id": {itoa(late.ID)}})
	m = linkInput.FindStringSubmatch(p.Body)
	if p.Status != http.StatusOK || m == nil || !strings.Contains(p.Body, "their earlier links no longer work") {
		t.Fatalf("send a new link: %d\n%s", p.Status, p.Body)
	}
	fresh := tokenOf(t, m[1])
	if fresh == old {
		t.Fatal("the new link is the old one")
	}
	if p := e.web(t).post("/console/link", url.Values{"token": {old}}); p.Status != http.StatusUnauthorized {
		t.Errorf("the old link after a new one: %d, want 401", p.Status)
	}
	if p := e.web(t).post("/console/link", url.Values{"token": {fresh}}); p.Status != http.StatusSeeOther || p.Location != "/console/password" {
		t.Errorf("the new link: %d %q, want 303 to choose a password", p.Status, p.Location)
	}
	other := e.addOperator(t, e.BrandB.ID, "b-agent@b.example", parley.RoleAgent)
	before := e.adminState(t)
	if p := w.post("/console/settings/operators", url.Values{"action": {"newlink"}, "id": {itoa(other.ID)}}); p.Status != http.StatusNotFound ||
		linkInput.MatchString(p.Body) {
		t.Errorf("a new link for brand B's operator: %d, want 404 without a link", p.Status)
	}
	if p := w.post("/console/settings/operators", url.Values{"action": {"remove"}, "id": {itoa(other.ID)}}); p.Status != http.StatusNotFound {
		t.Errorf("removing brand B's operator: %d, want 404", p.Status)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused forms changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

// tokenOf is the token of a sign-in link shown on a page.
func tokenOf(t *testing.T, link string) string {
	t.Helper()
	u, err := url.Parse(strings.ReplaceAll(link, "&amp;", "&"))
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("sign-in link %q (%v)", link, err)
	}
	return u.Query().Get("token")
}
