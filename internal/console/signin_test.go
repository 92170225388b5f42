package console_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/console"
	"github.com/parleyhq/parley/internal/service"
)

// TestClientAddrTrustedProxy: X-Forwarded-For is believed only from a
// trusted proxy, read from the right: the first address that is not a
// trusted proxy's is the client, whatever the client wrote to its left
// (D19, issue #31 item 3, --trusted-proxy).
func TestClientAddrTrustedProxy(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, c := range []struct {
		name, peer string
		xff        []string
		trusted    []netip.Prefix
		want       string
	}{
		{"no proxy configured: the header is ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, nil, "203.0.113.5"},
		{"an untrusted peer's header is ignored", "203.0.113.5:4000", []string{"198.51.100.1"}, trusted, "203.0.113.5"},
		{"a trusted proxy names the client", "10.1.2.3:4000", []string{"198.51.100.1"}, trusted, "198.51.100.1"},
		{"what the client wrote to the left is ignored", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1"}, trusted, "198.51.100.1"},
		{"a chain of trusted proxies", "10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1, 10.9.9.9"}, trusted, "198.51.100.1"},
		{"several header lines", "10.1.2.3:4000", []string{"6.6.6.6", "198.51.100.1, 10.9.9.9"}, trusted, "198.51.100.1"},
		{"IPv6 proxy and client", "[fd00::1]:4000", []string{"2001:db8::7"}, trusted, "2001:db8::7"},
		{"a trusted proxy without the header", "10.1.2.3:4000", nil, trusted, "10.1.2.3"},
		{"only trusted proxies in the header", "10.1.2.3:4000", []string{"10.4.4.4"}, trusted, "10.4.4.4"},
		{"a malformed entry stops at the last proxy", "10.1.2.3:4000", []string{"198.51.100.1, not-an-ip"}, trusted, "10.1.2.3"},
	} {
		r, _ := http.NewRequest("POST", "http://x/console/signin", nil)
		r.RemoteAddr = c.peer
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := console.ClientAddr(c.trusted, r); got != c.want {
			t.Errorf("%s: client %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSignInBehindProxy: behind a trusted reverse proxy every browser has
// the proxy's address; wrong passwords from one browser stop that browser,
// not the others (D19, issue #31 item 3). Without --trusted-proxy the header is
// not believed: a guesser cannot dodge the throttle by writing it.
func TestSignInBehindProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *app.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	})
	guesser, operator := e.web(t), e.web(t)
	for range 5 {
		guesser.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {"wrong"}}, "X-Forwarded-For", "203.0.113.9")
	}
	// A spoofed address to the left changes nothing: the proxy appended the real one.
	if p := guesser.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}}, "X-Forwarded-For", "198.51.100.77, 203.0.113.9"); p.Status != http.StatusTooManyRequests || p.Header.Get("Retry-After") == "" {
		t.Errorf("the guesser with the right password: %d (Retry-After %q), want 429 with Retry-After", p.Status, p.Header.Get("Retry-After"))
	}
	if p := operator.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}}, "X-Forwarded-For", "198.51.100.77"); p.Status != http.StatusSeeOther {
		t.Errorf("another browser behind the same proxy: %d, want 303 signed in\n%s", p.Status, p.Body)
	}

	plain := newEnv(t) // no trusted proxy
	w := plain.web(t)
	for i := range 5 {
		w.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {"wrong"}}, "X-Forwarded-For", "203.0.113."+itoa(int64(i)))
	}
	if p := w.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}}, "X-Forwarded-For", "198.51.100.1"); p.Status != http.StatusTooManyRequests {
		t.Errorf("an untrusted X-Forwarded-For dodged the throttle: %d, want 429", p.Status)
	}
}

// TestLinkPageSaysWhenAndRevoked: the link's page says until when the
// link works; after the operator sets a password, an unused link no
// longer works and its page says so (D19, issue #31 item 4).
func TestLinkPageSaysWhenAndRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.App.Operators.Add(e.Ctx, e.BrandA.ID, "new@a.example", "agent", ""); err != nil {
		t.Fatal(err)
	}
	l1, _ := e.App.Operators.Link(e.Ctx, e.BrandA.ID, "new@a.example")
	l2, _ := e.App.Operators.Link(e.Ctx, e.BrandA.ID, "new@a.example")
	w := e.web(t)
	p := w.get("/console/link?token=" + l2)
	want := "It works until " + e.Now().Add(24*time.Hour).UTC().Format("2 January 2006 at 15:04 UTC")
	if p.Status != 200 || !strings.Contains(p.Body, want) {
		t.Errorf("link page: %d, want %q\n%s", p.Status, want, p.Body)
	}
	if p := w.post("/console/link", url.Values{"token": {l1}}); p.Status != http.StatusSeeOther {
		t.Fatalf("use L1: %d", p.Status)
	}
	if p := w.post("/console/password", url.Values{"password": {"a fine password"}, "confirm": {"a fine password"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("set a password: %d", p.Status)
	}
	other := e.web(t)
	if p := other.get("/console/link?token=" + l2); p.Status != http.StatusUnauthorized || !strings.Contains(p.Body, "was replaced by a password") ||
		strings.Contains(p.Body, `name="token"`) {
		t.Errorf("L2's page after a password was set: %d, want 401 saying it no longer works, without its form\n%s", p.Status, p.Body)
	}
	if p := other.post("/console/link", url.Values{"token": {l2}}); p.Status != http.StatusUnauthorized {
		t.Fatalf("L2 after a password was set: %d, want 401", p.Status)
	}
	if p := other.get("/console/password"); p.Status != http.StatusSeeOther {
		t.Errorf("L2 opened a session: %d", p.Status)
	}
}

// TestSignInBusy: with every password hash slot taken, a sign-in waits,
// then answers 503 with Retry-After on the sign-in page, and changes
// nothing (D19, issue #31 item 6).
func TestSignInBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.App.Operators.Hashing = service.NewHashSlots(1, 20*time.Millisecond)
	release, err := e.App.Operators.Hashing.Acquire(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := e.web(t)
	p := w.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}})
	if p.Status != http.StatusServiceUnavailable || p.Header.Get("Retry-After") != "5" || p.h1() != "Sign in" ||
		!strings.Contains(p.Body, "The server is busy signing others in; try again in a few seconds.") || !strings.Contains(p.Body, `value="admin@a.example"`) {
		t.Errorf("sign-in with no hash slot: %d, Retry-After %q, %q; want 503, Retry-After 5 and the sign-in form with the message\n%s",
			p.Status, p.Header.Get("Retry-After"), p.h1(), p.Body)
	}
	if len(p.Header["Set-Cookie"]) != 0 {
		t.Errorf("a refused sign-in set a cookie")
	}
	release()
	w.signIn("admin@a.example")
	// Changing the password hashes too.
	release, err = e.App.Operators.Hashing.Acquire(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	p = w.post("/console/password", url.Values{"current_password": {password}, "password": {"a new password!"}, "confirm": {"a new password!"}})
	if p.Status != http.StatusServiceUnavailable || p.Header.Get("Retry-After") != "5" || p.h1() != "Change your password" {
		t.Errorf("password change with no hash slot: %d, Retry-After %q, %q; want 503 on the password page", p.Status, p.Header.Get("Retry-After"), p.h1())
	}
	release()
	e.web(t).signIn("admin@a.example") // the password did not change
}

// TestOperatorEmailOfAnotherBrand: adding an operator whose email is
// another brand's operator answers exactly as a fresh email does, and
// signing in with it tells nothing of the other brand (D19, issue #31 item
// 10): operators are unique per (brand, email).
func TestOperatorEmailOfAnotherBrand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	// A page as it reads without its email, tokens and list of operators
	// (which grows by one each time).
	normal := func(p page, email string) string {
		return strings.ReplaceAll(regexp.MustCompile(`token=[A-Za-z0-9_-]+|(?s)<tbody>.*?</tbody>`).ReplaceAllString(p.Body, ""), email, "EMAIL")
	}
	add := func(email, pw string) page {
		return w.post("/console/settings/operators", url.Values{"action": {"add"}, "email": {email}, "role": {"agent"}, "password": {pw}})
	}
	// With a password, then without (a sign-in link).
	fresh, taken := add("fresh@x.example", "a long password"), add("admin@b.example", "a long password")
	if fresh.Status != http.StatusSeeOther || taken.Status != fresh.Status || taken.Location != fresh.Location {
		t.Errorf("add another brand's operator's email: %d %q, a fresh one: %d %q; want the same", taken.Status, taken.Location, fresh.Status, fresh.Location)
	}
	fresh, taken = add("fresh2@x.example", ""), add("agent2@b.example", "")
	if fresh.Status != http.StatusCreated || taken.Status != fresh.Status {
		t.Errorf("add without password: %d vs %d, want 201 both", taken.Status, fresh.Status)
	}
	if a, b := normal(fresh, "fresh2@x.example"), normal(taken, "agent2@b.example"); a != b {
		t.Errorf("the pages differ beyond the email:\nfresh:\n%s\ntaken:\n%s", a, b)
	}
	// Both brands keep their own operator, with their own password.
	if p := e.web(t).post("/console/signin", url.Values{"email": {"admin@b.example"}, "password": {password}}); p.Status != http.StatusSeeOther {
		t.Errorf("brand B's admin with their password: %d", p.Status)
	}
	b := e.web(t)
	b.post("/console/signin", url.Values{"email": {"admin@b.example"}, "password": {"a long password"}})
	if p := b.get("/console/inbox"); p.Status != 200 || !strings.Contains(p.Body, "Brand A") || strings.Contains(p.Body, "Brand B") {
		t.Errorf("brand A's new operator with their password: %d, want brand A's console", p.Status)
	}
	// The same email twice in one brand is refused, next to the field.
	if p := add("admin@b.example", ""); p.Status != http.StatusConflict || !strings.Contains(p.Body, `id="email-error"`) {
		t.Errorf("the same email twice in brand A: %d, want 409", p.Status)
	}
	// A wrong password reads the same whatever brands have the email.
	for _, email := range []string{"admin@b.example", "nobody@x.example", "agent@a.example"} {
		p := e.web(t).post("/console/signin", url.Values{"email": {email}, "password": {"not it at all"}})
		if p.Status != http.StatusUnauthorized || normal(p, email) != normal(e.web(t).post("/console/signin", url.Values{"email": {"x@y.example"}, "password": {"not it at all"}}), "x@y.example") {
			t.Errorf("wrong password for %s: %d, or a page unlike an unknown email's", email, p.Status)
		}
	}
}

// TestChooseBrandPage: when the password matches operators of several
// brands the sign-in shows "Choose a brand" with only those brands; the
// choice opens that brand's console and works once (D19, issue #31 item 10).
func TestChooseBrandPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, err := e.App.Service.CreateBrand(e.Ctx, "Brand C", "+14155550102")
	if err != nil {
		t.Fatal(err)
	}
	e.addOperator(t, e.BrandB.ID, "admin@a.example", parley.RoleAgent) // the same password as in brand A
	if _, err := e.App.Operators.Add(e.Ctx, c.ID, "admin@a.example", parley.RoleAdmin, "brand c's own password"); err != nil {
		t.Fatal(err)
	}
	w := e.web(t)
	p := w.post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {password}, "next": {"/console/inbox"}})
	if p.Status != 200 || p.h1() != "Choose a brand" || len(p.Header["Set-Cookie"]) != 0 {
		t.Fatalf("sign-in matching two brands: %d %q, want 200 Choose a brand and no session yet\n%s", p.Status, p.h1(), p.Body)
	}
	labels := regexp.MustCompile(`<label for="brand-\d">([^<]+)</label>`).FindAllStringSubmatch(p.Body, -1)
	if len(labels) != 2 || labels[0][1] != "Brand A" || labels[1][1] != "Brand B" || !strings.Contains(p.Body, `<button type="submit">Continue</button>`) {
		t.Errorf("choices %v, want Brand A and Brand B (not Brand C, whose password differs) and a Continue button", labels)
	}
	tokens := regexp.MustCompile(`name="choice" value="([^"]+)"`).FindAllStringSubmatch(p.Body, -1)
	if len(tokens) != 2 {
		t.Fatalf("choice tokens: %v", tokens)
	}
	p = w.post("/console/signin/brand", url.Values{"choice": {tokens[1][1]}, "next": {"/console/inbox"}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/inbox" {
		t.Fatalf("choose brand B: %d %q", p.Status, p.Location)
	}
	if p := w.get("/console/inbox"); p.Status != 200 || !strings.Contains(p.Body, "Brand B") || strings.Contains(p.Body, "Brand A") {
		t.Errorf("after choosing brand B: %d, want brand B's inbox", p.Status)
	}
	if p := e.web(t).post("/console/signin/brand", url.Values{"choice": {tokens[1][1]}}); p.Status != http.StatusUnauthorized ||
		!strings.Contains(p.Body, "This choice has expired; sign in again.") {
		t.Errorf("a choice used twice: %d, want 401", p.Status)
	}
	// Brand C's own password goes straight to brand C.
	p = e.web(t).post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {"brand c's own password"}})
	if p.Status != http.StatusSeeOther {
		t.Errorf("brand C's password: %d, want 303 signed in to brand C", p.Status)
	}
}
