package console

// The dashboard: the console's home page.
func init() {
	Register(Page{
		Path:     "",
		Title:    "Dashboard",
		Nav:      "Dashboard",
		Order:    0,
		Template: "dashboard.html",
		Get:      func(c *Ctx) error { return c.Render(nil) },
	})
}
