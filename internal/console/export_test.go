package console

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
