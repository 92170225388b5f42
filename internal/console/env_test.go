package console_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// password is every test operator's password.
const password = "correct horse battery"

// env is a running Parley with operators of two brands: an admin and an
// agent of brand A, an admin of brand B.
type env struct {
	*apitest.Env
	// URL is the console's address, ending in /console/.
	URL                    string
	AdminA, AgentA, AdminB *parley.Operator
}

func newEnv(t testing.TB, opts ...apitest.Option) *env {
	t.Helper()
	e := &env{Env: apitest.New(t, opts...)}
	e.URL = e.Server.URL + "/console/"
	e.AdminA = e.addOperator(t, e.BrandA.ID, "admin@a.example", parley.RoleAdmin)
	e.AgentA = e.addOperator(t, e.BrandA.ID, "agent@a.example", parley.RoleAgent)
	e.AdminB = e.addOperator(t, e.BrandB.ID, "admin@b.example", parley.RoleAdmin)
	return e
}

func (e *env) addOperator(t testing.TB, brand int64, email string, role parley.OperatorRole) *parley.Operator {
	t.Helper()
	op, err := e.App.Operators.Add(e.Ctx, brand, email, role, password)
	if err != nil {
		t.Fatalf("add operator %s: %v", email, err)
	}
	return op
}

// web is a plain HTTP client with a cookie jar that does not follow
// redirects, so tests see each answer.
type web struct {
	t    testing.TB
	e    *env
	c    *http.Client
	base string
}

func (e *env) web(t testing.TB) *web {
	jar, _ := cookiejar.New(nil)
	return &web{t: t, e: e, base: e.Server.URL, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is an answer: its status, Location and body.
type page struct {
	Status   int
	Location string
	// Body is the HTML with its entities decoded.
	Body   string
	Header http.Header
}

func (w *web) do(req *http.Request) page {
	w.t.Helper()
	resp, err := w.c.Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// Entities decoded, so tests read text as shown ("+1415…", which
	// html/template writes "&#43;1415…").
	return page{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Body: html.UnescapeString(string(b)), Header: resp.Header}
}

func (w *web) get(path string) page {
	w.t.Helper()
	req, _ := http.NewRequest("GET", w.base+path, nil)
	return w.do(req)
}

// post sends a form; headers are pairs of name and value.
func (w *web) post(path string, form url.Values, headers ...string) page {
	w.t.Helper()
	req, _ := http.NewRequest("POST", w.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return w.do(req)
}

// signIn signs the client in and fails the test if that does not work.
func (w *web) signIn(email string) {
	w.t.Helper()
	p := w.post("/console/signin", url.Values{"email": {email}, "password": {password}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/" {
		w.t.Fatalf("sign in as %s: %d %q\n%s", email, p.Status, p.Location, p.Body)
	}
}

// signedInByLink returns a client signed in with a one-time sign-in link
// made for email, as an admin makes one (parley operator link).
func (e *env) signedInByLink(t testing.TB, brand int64, email string) *web {
	t.Helper()
	token, err := e.App.Operators.Link(e.Ctx, brand, email)
	if err != nil {
		t.Fatal(err)
	}
	w := e.web(t)
	if p := w.post("/console/link", url.Values{"token": {token}}); p.Status != http.StatusSeeOther || p.Location != "/console/password" {
		t.Fatalf("sign in with a link as %s: %d %q", email, p.Status, p.Location)
	}
	return w
}

// signedIn returns a client signed in as email.
func (e *env) signedIn(t testing.TB, email string) *web {
	w := e.web(t)
	w.signIn(email)
	return w
}

// h1 returns the text of a page's first <h1>.
func (p page) h1() string {
	_, rest, ok := strings.Cut(p.Body, "<h1>")
	if !ok {
		return ""
	}
	h, _, _ := strings.Cut(rest, "</h1>")
	return h
}
