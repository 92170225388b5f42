package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOperatorCommand: `parley operator add` creates an operator with a
// password from --password-stdin, or prints a one-time sign-in link
// without one; `link` and `list` work; bad input changes nothing (D19).
// Not parallel: it replaces stdin.
func TestOperatorCommand(t *testing.T) {
	_, e := importEnv(t, false)
	mustRun(t, e, "brand", "create", "--name", "Shop", "--phone", "+14155550100")
	old := stdin
	defer func() { stdin = old }()

	stdin = strings.NewReader("a long password\n")
	out := mustRun(t, e, "operator", "add", "--brand", "1", "--email", "Boss@Shop.example", "--role", "admin", "--password-stdin")
	if !strings.Contains(out, "Created admin boss@shop.example") || !strings.Contains(out, "/console/") {
		t.Errorf("add with a password printed:\n%s", out)
	}

	stdin = strings.NewReader("") // not a terminal: no prompt, a link
	out = mustRun(t, e, "operator", "add", "--brand", "1", "--email", "agent@shop.example", "--public-url", "https://parley.example")
	if !regexp.MustCompile(`https://parley\.example/console/link\?token=[A-Za-z0-9_-]{40,}`).MatchString(out) {
		t.Errorf("add without a password printed no sign-in link:\n%s", out)
	}
	out = mustRun(t, e, "operator", "link", "--brand", "1", "--email", "agent@shop.example")
	if !strings.Contains(out, "http://127.0.0.1:8080/console/link?token=") {
		t.Errorf("link printed:\n%s", out)
	}

	for _, bad := range [][]string{
		{"--brand", "1", "--email", "boss@shop.example", "--role", "admin"}, // taken
		{"--brand", "1", "--email", "x@shop.example", "--role", "owner"},
		{"--brand", "1", "--email", "not an email"},
		{"--brand", "99", "--email", "y@shop.example"},
	} {
		stdin = strings.NewReader("")
		if out, err := runCmd(t, e, append([]string{"operator", "add"}, bad...)...); err == nil {
			t.Errorf("operator add %v: no error\n%s", bad, out)
		}
	}
	stdin = strings.NewReader("short\n")
	if _, err := runCmd(t, e, "operator", "add", "--brand", "1", "--email", "z@shop.example", "--password-stdin"); err == nil ||
		!strings.Contains(err.Error(), "at least 10 characters") {
		t.Errorf("short password: %v", err)
	}

	out = mustRun(t, e, "operator", "list", "--brand", "1")
	if strings.Count(out, "@shop.example") != 2 || !regexp.MustCompile(`boss@shop\.example\s+admin\s+true`).MatchString(out) {
		t.Errorf("list:\n%s", out)
	}
}

// TestServeBannerAndSignIn: `parley serve` says where the console is and
// how to add an operator; an operator added from the command line signs
// in to the running server (D19).
func TestServeBannerAndSignIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parley-data")
	stdout, _ := startServe(t, dir)
	base := serveURL(t, stdout.String())
	// The console's lines follow the serving line: wait for them.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String(), "Console: "+base+"/console/") ||
		!strings.Contains(stdout.String(), "operator add --brand 1 --email you@example.com --role admin") ||
		!strings.Contains(stdout.String(), "To watch a campaign send on the simulator at any hour") {
		if time.Now().After(deadline) {
			t.Fatalf("the banner does not say how to sign in:\n%s", stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	old := stdin
	defer func() { stdin = old }()
	stdin = strings.NewReader("a long password\n")
	mustRun(t, env(map[string]string{"PARLEY_DATA_DIR": dir}), "operator", "add", "--brand", "1", "--email", "me@example.com", "--role", "admin", "--password-stdin")

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(base+"/console/signin", url.Values{"email": {"me@example.com"}, "password": {"a long password"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Errorf("sign in on the served console: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestOperatorCommandPerBrand: `parley operator` works per brand (issue
// #31 item 10): one email may be an operator of two brands, list shows
// each brand its own, link and remove take --brand and touch only that
// brand's operator.
func TestOperatorCommandPerBrand(t *testing.T) {
	_, e := importEnv(t, false)
	mustRun(t, e, "brand", "create", "--name", "Shop", "--phone", "+14155550100")
	mustRun(t, e, "brand", "create", "--name", "Cafe", "--phone", "+14155550101")
	old := stdin
	defer func() { stdin = old }()
	for _, brand := range []string{"1", "2"} {
		stdin = strings.NewReader("a long password\n")
		if out := mustRun(t, e, "operator", "add", "--brand", brand, "--email", "pat@example.com", "--role", "admin", "--password-stdin"); !strings.Contains(out, "Created admin pat@example.com") {
			t.Errorf("add to brand %s printed:\n%s", brand, out)
		}
	}
	stdin = strings.NewReader("")
	mustRun(t, e, "operator", "add", "--brand", "2", "--email", "sam@example.com")
	if out := mustRun(t, e, "operator", "list", "--brand", "1"); strings.Count(out, "@example.com") != 1 {
		t.Errorf("brand 1's list:\n%s", out)
	}
	if out := mustRun(t, e, "operator", "link", "--brand", "2", "--email", "pat@example.com"); !strings.Contains(out, "/console/link?token=") {
		t.Errorf("link printed:\n%s", out)
	}
	if out, err := runCmd(t, e, "operator", "link", "--brand", "1", "--email", "sam@example.com"); err == nil {
		t.Errorf("a link for brand 2's operator named under brand 1: no error\n%s", out)
	}
	if out, err := runCmd(t, e, "operator", "remove", "--brand", "1", "--email", "sam@example.com"); err == nil || !strings.Contains(err.Error(), "no operator") {
		t.Errorf("remove brand 2's operator under brand 1: %v\n%s", err, out)
	}
	if out := mustRun(t, e, "operator", "remove", "--brand", "2", "--email", "Pat@Example.com"); !strings.Contains(out, "Removed operator pat@example.com of brand 2") {
		t.Errorf("remove printed:\n%s", out)
	}
	if out := mustRun(t, e, "operator", "list", "--brand", "2", "--json"); strings.Contains(out, "pat@") || !strings.Contains(out, "sam@") {
		t.Errorf("brand 2 after remove:\n%s", out)
	}
	if out := mustRun(t, e, "operator", "list", "--brand", "1"); !strings.Contains(out, "pat@example.com") {
		t.Errorf("brand 1 lost its operator when brand 2's was removed:\n%s", out)
	}
}
