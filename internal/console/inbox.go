package console

// Inbox: contacts whose latest text has not been answered, newest first
// (D19; users_brand_unanswered).
func init() {
	Register(Page{
		Path: "inbox", Title: "Inbox", Nav: "Inbox", Order: 20,
		Template: "inbox.html",
		Get: func(c *Ctx) error {
			waiting, err := c.Service.Inbox(c, c.BrandID())
			if err != nil {
				return err
			}
			return c.Render(waiting)
		},
	})
}
