package console

import (
	"net/http"
	"net/netip"
)

// An admins-only page for the tests of the role rule (D19), until the
// admin pages of the other console issues (Settings, Webhooks …) land.
func init() {
	Register(Page{
		Path:     "test-admin",
		Title:    "Test admin page",
		Admin:    true,
		Template: "error.html",
		Get:      func(c *Ctx) error { return c.Render("Admins see this.") },
	})
}

// SafeNext is safeNext for the tests.
var SafeNext = safeNext

// ClientAddr is the address a sign-in from r is throttled by, behind the
// trusted proxies given.
func ClientAddr(trusted []netip.Prefix, r *http.Request) string {
	return (&Console{Config: Config{TrustedProxies: trusted}}).clientAddr(r)
}
