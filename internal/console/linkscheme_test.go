package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSignInLinkKeepsTLS: behind a proxy that ends TLS (X-Forwarded-Proto:
// https, as the session cookie's Secure flag trusts), the one-time sign-in
// link an admin is shown for a new operator is an https link (D19): an
// http one would send the token in clear to whoever the admin gives it.
func TestSignInLinkKeepsTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/settings/operators", url.Values{"action": {"add"}, "email": {"linked@a.example"}, "role": {"agent"}},
		"X-Forwarded-Proto", "https")
	if p.Status != http.StatusCreated {
		t.Fatalf("add without a password: %d\n%s", p.Status, p.Body)
	}
	if !strings.Contains(p.Body, "https://") || strings.Contains(p.Body, "http://"+strings.TrimPrefix(w.base, "http://")+"/console/link") {
		t.Errorf("the sign-in link is not https behind a TLS proxy:\n%s", p.Body)
	}
}
