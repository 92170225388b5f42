package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The operator's own password: chosen after a one-time sign-in link, or
// changed later with the current one; a change ends the operator's other
// sessions. Every operator may reach it.
func init() {
	Register(Page{
		Path:     "password",
		Title:    "Change your password",
		Template: "password.html",
		Get:      func(c *Ctx) error { return renderPassword(c, http.StatusOK, "") },
		Post: func(c *Ctx) error {
			pw := c.Form("password")
			if pw != c.Form("confirm") {
				return renderPassword(c, http.StatusUnprocessableEntity, "The two passwords differ.")
			}
			err := c.Operators.ChangePassword(c, sessionToken(c.R), c.Form("current_password"), pw, c.console.clientAddr(c.R))
			switch parley.ErrorCode(err) {
			case "":
				return c.Redirect("")
			case parley.EValidation:
				return renderPassword(c, http.StatusUnprocessableEntity, parley.ErrorMessage(err))
			case parley.ERateLimited:
				return renderPassword(c, http.StatusTooManyRequests, parley.ErrorMessage(err))
			case parley.EUnavailable: // no password hash slot (issue #31 item 6)
				c.W.Header().Set("Retry-After", strconv.Itoa(int(service.DefaultHashWait/time.Second)))
				return renderPassword(c, http.StatusServiceUnavailable, parley.ErrorMessage(err))
			}
			return err
		},
	})
}

// passwordForm is what the password page shows: the current password's
// field unless the session came from a one-time sign-in link.
type passwordForm struct{ NeedsCurrent bool }

func renderPassword(c *Ctx, status int, errMsg string) error {
	needs, err := c.Operators.NeedsCurrentPassword(c, sessionToken(c.R))
	if err != nil {
		return err
	}
	return c.RenderStatus(status, passwordForm{needs}, errMsg)
}
