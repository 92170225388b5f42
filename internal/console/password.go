package console

import (
	"net/http"

	"github.com/parleyhq/parley"
)

// The operator's own password: chosen after a one-time sign-in link, or
// changed later; a change ends the operator's other sessions. Every
// operator may reach it.
func init() {
	Register(Page{
		Path:     "password",
		Title:    "Change your password",
		Template: "password.html",
		Get:      func(c *Ctx) error { return c.Render(nil) },
		Post: func(c *Ctx) error {
			pw := c.Form("password")
			if pw != c.Form("confirm") {
				return c.RenderStatus(http.StatusUnprocessableEntity, nil, "The two passwords differ.")
			}
			if err := c.Operators.SetPassword(c, c.Operator.ID, pw, sessionToken(c.R)); err != nil {
				if parley.ErrorCode(err) == parley.EValidation {
					return c.RenderStatus(http.StatusUnprocessableEntity, nil, parley.ErrorMessage(err))
				}
				return err
			}
			return c.Redirect("")
		},
	})
}
