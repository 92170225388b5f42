package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley"
)

// The browser harness: tests drive a headless Chromium through the
// console the way operators do, finding fields by their label, buttons by
// their text and pages by their <h1>. Locally a test skips when no browser
// is installed; under CI (CI set) it fails instead, so the browser tests
// can never be skipped silently (.ci/run installs Debian's chromium).

// chromePath finds a Chrome: $PARLEY_CHROME, else the usual names.
func chromePath() string {
	if p := os.Getenv("PARLEY_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium tab with its own profile.
type browser struct {
	t   testing.TB
	ctx context.Context
	// base is the server's origin: Go("/console/") opens base+"/console/".
	base string
}

// newBrowser starts a browser for t, closed when t ends.
func newBrowser(t testing.TB, base string) *browser {
	t.Helper()
	path := chromePath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium found under CI: the browser tests must run (.ci/run installs Debian's chromium)")
		}
		t.Skip("no Chromium found (install Debian's chromium, or set PARLEY_CHROME)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 900),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first call starts the browser, bound to the context it gets: one
	// without a timeout, so the steps' timeouts end only the steps.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browser: start %s: %v", path, err)
	}
	return &browser{t: t, ctx: ctx, base: base}
}

// step bounds one step: a missing label or button fails the test in
// seconds instead of hanging it.
func (b *browser) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, 15*time.Second)
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// js quotes s as a JavaScript string.
func js(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// labelled selects the form control whose <label> reads text.
func labelled(text string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll('label')].find(l => l.innerText.trim() === %s)?.control`, js(text)))
}

// button selects the visible button (or link) whose text reads text.
func button(text string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll('button, a, input[type=submit]')].find(b => (b.innerText || b.value || '').trim() === %s && b.offsetParent !== null)`, js(text)))
}

// Go opens a path of the server and waits for the page.
func (b *browser) Go(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base + path))
}

// Fill types value into the field labelled label, as a user would.
func (b *browser) Fill(label, value string) {
	b.t.Helper()
	sel := labelled(label)
	b.do(chromedp.WaitVisible(sel), chromedp.Evaluate[chromedp.Void](`(`+string(sel)+`).value = ''`), chromedp.SendKeys(sel, value))
}

// Submit clicks the button that reads text and waits for the page it
// loads.
func (b *browser) Submit(text string) {
	b.t.Helper()
	b.pressAndWait(text)
}

// Follow follows the link that reads text and waits for the page it
// opens: read at once, the heading could still be the page before.
func (b *browser) Follow(text string) {
	b.t.Helper()
	b.pressAndWait(text)
}

func (b *browser) pressAndWait(text string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(button(text)))); err != nil {
		b.t.Fatalf("browser: press %q: %v", text, err)
	}
}

// H1 returns the page's heading, once the page has loaded.
func (b *browser) H1() string {
	b.t.Helper()
	return strings.TrimSpace(b.read("h1", `document.querySelector('h1')?.innerText`))
}

// Text returns the visible text of the page's <main>, once it has loaded.
func (b *browser) Text() string {
	b.t.Helper()
	return b.read("text", `document.querySelector('main')?.innerText`)
}

// read evaluates expr on a loaded page, trying again for up to 15 s while
// the page is still loading or is replaced under it (a redirect, a page
// that reloads itself): the answer is never from a page half gone.
func (b *browser) read(what, expr string) string {
	b.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	js := `(document.readyState === 'complete' && (` + expr + `)) || ''`
	for {
		ctx, cancel := b.step()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		cancel()
		if err == nil && s != "" {
			return s
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: %s: %q, %v", what, s, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitText waits until the page's <main> shows text (a status a script
// refreshes, or a page that reloads itself), failing the test after 20 s.
// It asks again after an error: a page replaced while it was asked has no
// context to answer in ("Cannot find context with specified id").
func (b *browser) WaitText(text string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	expr := fmt.Sprintf(`document.readyState === 'complete' && !!document.querySelector('main')?.innerText.includes(%s)`, js(text))
	for {
		ctx, cancel := b.step()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: waiting for %q: %v\npage text:\n%s", text, err, b.Text())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Location returns the page's URL.
func (b *browser) Location() string {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		b.t.Fatalf("browser: location: %v", err)
	}
	return s
}

// checkPage asserts the rules every console page keeps (D19): one <h1>,
// a viewport meta, a label for every field, visible text on every
// button, <th> in every table, and no sideways scrolling at phone width.
func (b *browser) checkPage() {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
		const p = [];
		if (document.querySelectorAll('h1').length !== 1) p.push('want one h1');
		if (!document.querySelector('meta[name=viewport]')) p.push('no viewport meta');
		for (const el of document.querySelectorAll('input:not([type=hidden]):not([type=submit]), select, textarea'))
			if (!el.labels || el.labels.length === 0 || !el.labels[0].innerText.trim()) p.push('no label: ' + el.outerHTML);
		for (const el of document.querySelectorAll('button, input[type=submit]'))
			if (!(el.innerText || el.value || '').trim()) p.push('button without text: ' + el.outerHTML);
		for (const t of document.querySelectorAll('table'))
			if (!t.querySelector('th')) p.push('table without th');
		const de = document.documentElement; // clientWidth is the layout viewport's, which a phone keeps
		if (de.scrollWidth > de.clientWidth + 1) p.push('scrolls sideways: ' + de.scrollWidth + 'px of content in ' + de.clientWidth + 'px');
		return p;
	})()`))
	if err != nil {
		b.t.Fatalf("browser: check page: %v", err)
	}
	for _, p := range problems {
		b.t.Errorf("page %s: %s", b.Location(), p)
	}
}

// Phone makes the viewport a phone's (375 × 740).
func (b *browser) Phone() {
	b.t.Helper()
	b.do(chromedp.EmulateViewport(375, 740, chromedp.EmulateMobile))
}

// signIn signs the browser in through the sign-in page.
func (b *browser) signIn(email, pw string) {
	b.t.Helper()
	b.Go("/console/signin")
	b.Fill("Email", email)
	b.Fill("Password", pw)
	b.Submit("Sign in")
}

// TestBrowserSignIn: the sign-in flow in Chromium (D19): a signed-out
// operator is sent to Sign in, signs in, lands on their home (an agent's
// is the inbox), signs out.
func TestBrowserSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newBrowser(t, e.Server.URL)
	b.Go("/console/")
	if h := b.H1(); h != "Sign in" {
		t.Fatalf("signed out, /console/ shows %q, want Sign in", h)
	}
	b.checkPage()
	b.Fill("Email", "agent@a.example")
	b.Fill("Password", password)
	b.Submit("Sign in")
	if h := b.H1(); h != "Inbox" {
		t.Fatalf("after sign-in: %q, want Inbox (an agent's home)\n%s", h, b.Text())
	}
	b.checkPage()
	b.Phone()
	b.checkPage()
	b.Submit("Sign out")
	if h := b.H1(); h != "Sign in" {
		t.Fatalf("after sign-out: %q, want Sign in", h)
	}
	b.Go("/console/")
	if h := b.H1(); h != "Sign in" {
		t.Fatalf("after sign-out, /console/ shows %q, want Sign in", h)
	}
}

// TestBrowserAgentRefusedAdminPage: an agent who opens an admins' page
// sees Forbidden (D19).
func TestBrowserAgentRefusedAdminPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newBrowser(t, e.Server.URL)
	b.signIn("agent@a.example", password)
	b.Go("/console/test-admin")
	if h := b.H1(); h != "Forbidden" {
		t.Fatalf("agent on an admin page: %q, want Forbidden", h)
	}
	if !strings.Contains(b.Text(), "for admins only") {
		t.Errorf("the page does not say why:\n%s", b.Text())
	}
}

// TestBrowserWrongPasswordThrottled: wrong passwords are refused, and
// after five the right one is refused too, for a while (D19).
func TestBrowserWrongPasswordThrottled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newBrowser(t, e.Server.URL)
	for range 5 {
		b.signIn("admin@a.example", "not the password")
		if h, txt := b.H1(), b.Text(); h != "Sign in" || !strings.Contains(txt, "Wrong email or password.") {
			t.Fatalf("wrong password: %q\n%s", h, txt)
		}
	}
	b.signIn("admin@a.example", password)
	if txt := b.Text(); !strings.Contains(txt, "Too many failed sign-ins") {
		t.Fatalf("right password after five wrong ones:\n%s", txt)
	}
}

// TestBrowserReplyDelivered: the agent's main flow in Chromium (D19):
// search a contact, open them, reply, and watch the reply's status go
// from queued or sent to delivered without reloading (the simulator
// reports delivery a second after the send, by the test's clock).
func TestBrowserReplyDelivered(t *testing.T) {
	t.Parallel()
	e := startedEnv(t)
	e.contact(t, false, "+14155550123", "Ada", "Lovelace", "ada@example.com", ptr(true))
	e.contact(t, false, "+14155550124", "Adam", "Smith", "", ptr(true))
	b := newBrowser(t, e.Server.URL)
	b.signIn("agent@a.example", password)
	b.Submit("Contacts")
	if h := b.H1(); h != "Contacts" {
		t.Fatalf("contacts page: %q", h)
	}
	b.Fill("Search by phone, name or email", "love")
	b.Submit("Search")
	if txt := b.Text(); !strings.Contains(txt, "1 contact found") || strings.Contains(txt, "Adam") {
		t.Fatalf("search for love:\n%s", txt)
	}
	b.checkPage()
	b.Submit("Ada Lovelace")
	if h := b.H1(); h != "Ada Lovelace" {
		t.Fatalf("contact page: %q", h)
	}
	b.Fill("Reply", "Your order has shipped.")
	b.Submit("Send")
	b.WaitText("Your order has shipped.")
	b.checkPage()
	e.waitStatus(t, e.mustFindUser(t, "+14155550123").ID, parley.StatusSent)
	b.WaitText("· Sent") // the page shows it in words: waiting to send, then sent (issue #32)
	e.Advance(2 * time.Second)
	b.WaitText("· Delivered")
	if !strings.Contains(b.Location(), "/console/contacts/") {
		t.Errorf("the page was left: %s", b.Location())
	}
}

// mustFindUser finds brand A's contact by number.
func (e *env) mustFindUser(t testing.TB, phone string) *parley.User {
	t.Helper()
	u, err := e.App.Service.FindUserByPhone(e.Ctx, e.BrandA.ID, phone)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestBrowserCrossOriginFormRefused: a page on another site that posts a
// form to the console (here: change the signed-in admin's password) is
// refused in a real browser with the operator signed in, and changes
// nothing (D19, http.CrossOriginProtection).
func TestBrowserCrossOriginFormRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><html><body><main><h1>You won</h1>
<form method="post" action="%s/console/password">
<input type="hidden" name="password" value="stolen password!"><input type="hidden" name="confirm" value="stolen password!">
<button>Claim your prize</button></form></main></body></html>`, e.Server.URL)
	}))
	defer evil.Close()
	_, port, _ := net.SplitHostPort(evil.Listener.Addr().String())
	b := newBrowser(t, e.Server.URL)
	b.signIn("admin@a.example", password)
	b.do(chromedp.Navigate("http://localhost:" + port + "/")) // another site than 127.0.0.1
	if h := b.H1(); h != "You won" {
		t.Fatalf("the other site's page: %q", h)
	}
	b.Submit("Claim your prize")
	if h := b.H1(); h != "Forbidden" {
		t.Errorf("the cross-site post: page %q, want Forbidden\n%s", h, b.Text())
	}
	if p := e.web(t).post("/console/signin", url.Values{"email": {"admin@a.example"}, "password": {"stolen password!"}}); p.Status == http.StatusSeeOther {
		t.Error("the other site changed the admin's password")
	}
	e.web(t).signIn("admin@a.example") // the old password still works
}
