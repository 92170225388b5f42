package console_test

import (
	"crypto/sha256"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/console"
)

// TestSignedOutIsSentToSignIn: every page but sign-in needs a session
// (D19); the sign-in page then returns to the page asked for.
func TestSignedOutIsSentToSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.web(t)
	for _, path := range []string{"/console/", "/console/password", "/console/test-admin", "/console/no-such-page"} {
		p := w.get(path)
		if p.Status != http.StatusSeeOther || p.Location != "/console/signin?next="+url.QueryEscape(path) {
			t.Errorf("GET %s signed out: %d %q, want 303 to the sign-in page", path, p.Status, p.Location)
		}
	}
	if p := w.post("/console/password", url.Values{"password": {"new password 123"}, "confirm": {"new password 123"}}); p.Status != http.StatusSeeOther {
		t.Errorf("POST /console/password signed out: %d, want 303 to sign in", p.Status)
	}
	p := w.get("/console/signin")
	if p.Status != 200 || p.h1() != "Sign in" {
		t.Fatalf("sign-in page: %d %q", p.Status, p.h1())
	}
	for _, want := range []string{`<label for="email">Email</label>`, `<label for="password">Password</label>`, `<button type="submit">Sign in</button>`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("sign-in page lacks %s", want)
		}
	}
	p = w.post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {password}, "next": {"/console/password"}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/password" {
		t.Errorf("sign in with next: %d %q, want 303 to /console/password", p.Status, p.Location)
	}
}

// TestSignInNextStaysInConsole: the address to return to after sign-in
// never leads off the console (an open redirect would help phishing).
func TestSignInNextStaysInConsole(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"/console/contacts?q=1": "/console/contacts?q=1",
		"//evil.example/":       "/console/",
		"https://evil.example/": "/console/",
		"/api/v1/brand":         "/console/",
		"/console/\\evil":       "/console/",
		"/console/signin":       "/console/",
		"":                      "/console/",
	} {
		if got := console.SafeNext(next); got != want {
			t.Errorf("SafeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

// TestSessionCookie: the session is a random token in an HttpOnly,
// SameSite=Lax cookie, kept in the database only as its hash; Secure
// under TLS (D19).
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.web(t)
	p := w.post("/console/signin", url.Values{"email": {"ADMIN@a.example "}, "password": {password}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", p.Status, p.Body)
	}
	ck := sessionCookie(t, p.Header)
	if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.Path != "/console/" || len(ck.Value) < 40 {
		t.Errorf("cookie over plain HTTP = %+v, want HttpOnly, SameSite=Lax, not Secure, Path /console/, a long token", ck)
	}
	sum := sha256.Sum256([]byte(ck.Value))
	var n int
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx, e.rebind(`SELECT count(*) FROM operator_tokens WHERE token_hash = ? AND kind = 'session'`), sum[:]).Scan(&n); err != nil || n != 1 {
		t.Errorf("sessions stored under the token's SHA-256: %d (%v), want 1", n, err)
	}
	if n := e.Count(t, "operator_tokens WHERE token_hash = '"+ck.Value+"'"); n != 0 {
		t.Errorf("the token itself is stored")
	}
	var hash string
	e.App.DB.Writer().QueryRowContext(e.Ctx, `SELECT password_hash FROM operators WHERE email = 'admin@a.example'`).Scan(&hash)
	if !strings.HasPrefix(hash, "$argon2id$") || strings.Contains(hash, password) {
		t.Errorf("password stored as %q, want an argon2id hash", hash)
	}

	tls := httptest.NewTLSServer(e.App.Server.Handler())
	defer tls.Close()
	client := tls.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.PostForm(tls.URL+"/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ck := sessionCookie(t, resp.Header); !ck.Secure {
		t.Errorf("cookie under TLS is not Secure: %+v", ck)
	}
	// Behind a proxy that ends TLS.
	p = e.web(t).post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}}, "X-Forwarded-Proto", "https")
	if ck := sessionCookie(t, p.Header); !ck.Secure {
		t.Errorf("cookie with X-Forwarded-Proto: https is not Secure: %+v", ck)
	}
}

func sessionCookie(t testing.TB, h http.Header) *http.Cookie {
	t.Helper()
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		if ck.Name == "parley_session" {
			return ck
		}
	}
	t.Fatalf("no session cookie in %v", h["Set-Cookie"])
	return nil
}

// rebind writes ? as $1 on PostgreSQL, for the tests' own queries.
func (e *env) rebind(q string) string {
	if e.App.DB.Engine() == "postgres" {
		return strings.Replace(q, "?", "$1", 1)
	}
	return q
}

// TestSessionExpiresAndSignOutEnds: a session ends at its expiry, and
// signing out ends it on the server, not only in the browser.
func TestSessionExpiresAndSignOutEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "agent@a.example")
	if p := w.get("/console/inbox"); p.Status != 200 || p.h1() != "Inbox" {
		t.Fatalf("inbox: %d %q", p.Status, p.h1())
	}
	e.Advance(11 * time.Hour)
	if p := w.get("/console/inbox"); p.Status != 200 {
		t.Fatalf("inbox after 11 h: %d, want 200 (sessions last 12 h)", p.Status)
	}
	e.Advance(time.Hour + time.Second)
	if p := w.get("/console/inbox"); p.Status != http.StatusSeeOther {
		t.Fatalf("inbox after 12 h: %d, want 303 to sign in", p.Status)
	}

	w.signIn("agent@a.example")
	u, _ := url.Parse(e.Server.URL + "/console/")
	old := w.c.Jar.Cookies(u)
	if p := w.post("/console/signout", nil); p.Status != http.StatusSeeOther || p.Location != "/console/signin" {
		t.Fatalf("sign out: %d %q", p.Status, p.Location)
	}
	// The old cookie, replayed, no longer works.
	jar, _ := cookiejar.New(nil)
	jar.SetCookies(u, old)
	w.c.Jar = jar
	if p := w.get("/console/inbox"); p.Status != http.StatusSeeOther {
		t.Fatalf("old session after sign-out: %d, want 303 to sign in", p.Status)
	}
}

// TestCrossOriginPostRefused: a form posted from another site is refused
// before it does anything (D19, http.CrossOriginProtection).
func TestCrossOriginPostRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	for name, hdr := range map[string][]string{
		"Sec-Fetch-Site": {"Sec-Fetch-Site", "cross-site"},
		"Origin":         {"Origin", "https://evil.example"},
	} {
		p := w.post("/console/signout", nil, hdr...)
		if p.Status != http.StatusForbidden || p.h1() != "Forbidden" {
			t.Errorf("%s: cross-origin sign-out: %d %q, want 403", name, p.Status, p.h1())
		}
		if p := w.get("/console/"); p.Status != 200 {
			t.Errorf("%s: session ended by a cross-origin post: %d", name, p.Status)
		}
		p = e.web(t).post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}}, hdr...)
		if p.Status != http.StatusForbidden || len(p.Header["Set-Cookie"]) != 0 {
			t.Errorf("%s: cross-origin sign-in: %d %v, want 403 and no cookie", name, p.Status, p.Header["Set-Cookie"])
		}
	}
	// The same site's posts go through.
	p := w.post("/console/password", url.Values{"current_password": {password}, "password": {"a new password!"}, "confirm": {"a new password!"}},
		"Sec-Fetch-Site", "same-origin", "Origin", e.Server.URL)
	if p.Status != http.StatusSeeOther {
		t.Errorf("same-origin post: %d, want 303\n%s", p.Status, p.Body)
	}
}

// TestWrongPasswordThrottled: failed sign-ins are throttled per email and
// per client address (D19); while throttled, even the right password is
// refused, and wrong emails read like wrong passwords.
func TestWrongPasswordThrottled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.web(t)
	for i := range 5 {
		p := w.post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {"wrong password"}})
		if p.Status != http.StatusUnauthorized || !strings.Contains(p.Body, "Wrong email or password.") {
			t.Fatalf("wrong password %d: %d, want 401 Wrong email or password.", i+1, p.Status)
		}
		if !strings.Contains(p.Body, `value="agent@a.example"`) {
			t.Errorf("the form does not keep the email")
		}
	}
	p := w.post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {password}})
	if p.Status != http.StatusTooManyRequests || !strings.Contains(p.Body, "Too many failed sign-ins. Try again in 15 minutes.") {
		t.Fatalf("right password after 5 failures: %d, want 429\n%s", p.Status, p.Body)
	}
	if p := w.post("/console/signin", url.Values{"email": {"nobody@a.example"}, "password": {password}}); p.Status != http.StatusUnauthorized ||
		!strings.Contains(p.Body, "Wrong email or password.") {
		t.Errorf("unknown email: %d, want the same 401 as a wrong password", p.Status)
	}
	e.Advance(15 * time.Minute)
	w.signIn("agent@a.example")

	// Per client address: many emails from one address.
	e.App.Operators.MaxFailuresPerClient = 3
	for i := range 2 {
		w.post("/console/signin", url.Values{"email": {"guess" + string(rune('a'+i)) + "@a.example"}, "password": {"x"}})
	}
	if p := w.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {"nope"}}); p.Status != http.StatusUnauthorized {
		t.Fatalf("third failure: %d", p.Status)
	}
	if p := w.post("/console/signin", url.Values{"email": {"admin@b.example"}, "password": {password}}); p.Status != http.StatusTooManyRequests {
		t.Errorf("another email from an address over its limit: %d, want 429", p.Status)
	}
}

// TestAgentRefusedAdminPage: an agent gets 403 on an admins' page, an
// admin gets it (D19); the nav shows agents only their pages.
func TestAgentRefusedAdminPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	agent := e.signedIn(t, "agent@a.example")
	if p := agent.get("/console/test-admin"); p.Status != http.StatusForbidden || p.h1() != "Forbidden" {
		t.Errorf("agent on an admin page: %d %q, want 403 Forbidden", p.Status, p.h1())
	}
	// The dashboard is an admins' page too; the console's home sends
	// agents to their inbox, and their nav lists only their pages.
	if p := agent.get("/console/"); p.Status != http.StatusSeeOther || p.Location != "/console/inbox" {
		t.Errorf("agent on the dashboard: %d %q, want 303 to the inbox", p.Status, p.Location)
	}
	if p := agent.get("/console/inbox"); strings.Contains(p.Body, ">Dashboard</a>") || !strings.Contains(p.Body, ">Contacts</a>") {
		t.Errorf("agent's nav: want Contacts and Inbox, no Dashboard")
	}
	admin := e.signedIn(t, "admin@a.example")
	if p := admin.get("/console/test-admin"); p.Status != 200 || !strings.Contains(p.Body, "Admins see this.") {
		t.Errorf("admin on an admin page: %d", p.Status)
	}
}

// TestPagesShowOwnBrand: every page is the operator's brand's (D19).
func TestPagesShowOwnBrand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for email, brand := range map[string]string{"admin@a.example": "Brand A", "admin@b.example": "Brand B"} {
		p := e.signedIn(t, email).get("/console/")
		other := map[string]string{"Brand A": "Brand B", "Brand B": "Brand A"}[brand]
		if !strings.Contains(p.Body, brand) || strings.Contains(p.Body, other) {
			t.Errorf("%s sees the dashboard of the wrong brand", email)
		}
	}
}

// TestSignInLink: an operator without a password signs in once with a
// one-time link, then chooses a password (D19).
func TestSignInLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.App.Operators.Add(e.Ctx, e.BrandA.ID, "new@a.example", "agent", ""); err != nil {
		t.Fatal(err)
	}
	token, err := e.App.Operators.Link(e.Ctx, e.BrandA.ID, "new@a.example")
	if err != nil {
		t.Fatal(err)
	}
	w := e.web(t)
	if p := w.post("/console/signin", url.Values{"email": {"new@a.example"}, "password": {""}}); p.Status != http.StatusUnauthorized {
		t.Errorf("sign in without a password set: %d, want 401", p.Status)
	}
	if p := w.get("/console/link?token=" + token); p.Status != 200 || !strings.Contains(p.Body, "<button type=\"submit\">Sign in</button>") {
		t.Fatalf("link page: %d", p.Status)
	}
	p := w.post("/console/link", url.Values{"token": {token}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/password" {
		t.Fatalf("use link: %d %q, want 303 to choose a password", p.Status, p.Location)
	}
	if p := w.get("/console/password"); p.Status != 200 || strings.Contains(p.Body, "Current password") {
		t.Errorf("a link's session is asked for a current password it never had: %d", p.Status)
	}
	if p := w.post("/console/password", url.Values{"password": {"short"}, "confirm": {"short"}}); p.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(p.Body, "password: at least 10 characters") {
		t.Errorf("short password: %d, want 422", p.Status)
	}
	if p := w.post("/console/password", url.Values{"password": {"a fine password"}, "confirm": {"a fine password"}}); p.Status != http.StatusSeeOther {
		t.Errorf("set password: %d", p.Status)
	}
	// The link let the session choose one password, not every later one.
	if p := w.get("/console/password"); !strings.Contains(p.Body, `<label for="current_password">Current password</label>`) {
		t.Errorf("after choosing a password, the link's session is not asked for it")
	}
	if p := w.post("/console/password", url.Values{"password": {"yet another one"}, "confirm": {"yet another one"}}); p.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(p.Body, "current_password: required") {
		t.Errorf("second change without the current password: %d, want 422", p.Status)
	}
	if p := e.web(t).post("/console/link", url.Values{"token": {token}}); p.Status != http.StatusUnauthorized {
		t.Errorf("link used twice: %d, want 401", p.Status)
	}
	if p := e.web(t).post("/console/signin", url.Values{"email": {"new@a.example"}, "password": {"a fine password"}}); p.Status != http.StatusSeeOther {
		t.Errorf("sign in with the chosen password: %d", p.Status)
	}
}

// TestPasswordChangeEndsOtherSessions: changing a password keeps the
// session that changed it and ends the others (whoever knew the old one).
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mine, other := e.signedIn(t, "agent@a.example"), e.signedIn(t, "agent@a.example")
	if p := mine.post("/console/password", url.Values{"password": {"another password"}, "confirm": {"another passwrd"}}); p.Status != http.StatusUnprocessableEntity {
		t.Errorf("passwords that differ: %d, want 422", p.Status)
	}
	if p := other.get("/console/inbox"); p.Status != 200 {
		t.Fatalf("a refused change ended a session: %d", p.Status)
	}
	if p := mine.post("/console/password", url.Values{"current_password": {password}, "password": {"another password"}, "confirm": {"another password"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("change password: %d", p.Status)
	}
	if p := mine.get("/console/inbox"); p.Status != 200 {
		t.Errorf("the session that changed the password ended: %d", p.Status)
	}
	if p := other.get("/console/inbox"); p.Status != http.StatusSeeOther {
		t.Errorf("another session survived the change: %d, want 303 to sign in", p.Status)
	}
	if p := e.web(t).post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {password}}); p.Status != http.StatusUnauthorized {
		t.Errorf("the old password still signs in: %d", p.Status)
	}
}

// TestPasswordChangeAsksForCurrent: a session opened with a password must
// give the current password to change it, so that a session left open
// cannot lock its operator out; wrong guesses count against the sign-in
// throttle (D19), and a refused change changes nothing.
func TestPasswordChangeAsksForCurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "agent@a.example")
	if p := w.get("/console/password"); !strings.Contains(p.Body, `<label for="current_password">Current password</label>`) {
		t.Fatalf("the page has no current password field\n%s", p.Body)
	}
	change := func(current string) page {
		return w.post("/console/password", url.Values{"current_password": {current}, "password": {"a new password!"}, "confirm": {"a new password!"}})
	}
	if p := change(""); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "current_password: required") {
		t.Errorf("no current password: %d, want 422\n%s", p.Status, p.Body)
	}
	for i := range 5 {
		if p := change("not my password"); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "The current password is wrong.") {
			t.Fatalf("wrong current password %d: %d, want 422", i+1, p.Status)
		}
	}
	if p := change(password); p.Status != http.StatusTooManyRequests || !strings.Contains(p.Body, "Too many failed sign-ins. Try again in 15 minutes.") {
		t.Errorf("right password after 5 wrong ones: %d, want 429\n%s", p.Status, p.Body)
	}
	e.Advance(15 * time.Minute)
	if p := e.web(t).post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {"a new password!"}}); p.Status != http.StatusUnauthorized {
		t.Fatalf("a refused change changed the password: sign-in with the new one %d, want 401", p.Status)
	}
	e.web(t).signIn("agent@a.example") // the old one still works
	if p := change(password); p.Status != http.StatusSeeOther {
		t.Fatalf("change with the current password: %d\n%s", p.Status, p.Body)
	}
	if p := e.web(t).post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {"a new password!"}}); p.Status != http.StatusSeeOther {
		t.Errorf("the new password does not sign in: %d", p.Status)
	}
}

// TestPasswordForAnOperatorWithout: a link's session opened before
// sessions were marked (migration 00022) reads as any session; its
// operator has no password yet, so none is asked for.
func TestPasswordForAnOperatorWithout(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.App.Operators.Add(e.Ctx, e.BrandA.ID, "new@a.example", "agent", ""); err != nil {
		t.Fatal(err)
	}
	w := e.signedInByLink(t, e.BrandA.ID, "new@a.example")
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, `UPDATE operator_tokens SET via_link = FALSE`); err != nil {
		t.Fatal(err)
	}
	if p := w.get("/console/password"); p.Status != 200 || strings.Contains(p.Body, "Current password") {
		t.Errorf("an operator without a password is asked for it: %d", p.Status)
	}
	if p := w.post("/console/password", url.Values{"password": {"a fine password"}, "confirm": {"a fine password"}}); p.Status != http.StatusSeeOther {
		t.Errorf("set the first password: %d\n%s", p.Status, p.Body)
	}
}

// TestSignInLinkForgottenPassword: an operator who forgot their password
// gets a one-time link from an admin; its session sets a new password
// without the old one, and the old one no longer signs in (D19).
func TestSignInLinkForgottenPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedInByLink(t, e.BrandA.ID, "agent@a.example") // has a password
	if p := w.get("/console/password"); strings.Contains(p.Body, "Current password") {
		t.Errorf("a link's session is asked for the password its operator forgot")
	}
	if p := w.post("/console/password", url.Values{"password": {"remembered now"}, "confirm": {"remembered now"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("set a new password from the link's session: %d\n%s", p.Status, p.Body)
	}
	if p := e.web(t).post("/console/signin", url.Values{"email": {"agent@a.example"}, "password": {password}}); p.Status != http.StatusUnauthorized {
		t.Errorf("the forgotten password still signs in: %d", p.Status)
	}
}
