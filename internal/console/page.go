package console

import (
	"bytes"
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// Page is one console page: see the package comment.
type Page struct {
	// Path is below /console/ ("contacts/{id}"); "" is /console/ itself.
	Path string
	// Title is the page's <h1> unless the handler sets Ctx.Title.
	Title string
	// Nav is the nav bar's text for the page; "" leaves it out. Order
	// sorts the nav (dashboard 0, contacts 10, inbox 20 …).
	Nav   string
	Order int
	// Admin makes the page admins' only: an agent gets 403 (D19), or is
	// sent to AgentRedirect (a path below /console/) when it is set.
	Admin         bool
	AgentRedirect string
	// Template is the file in templates/ that defines "content".
	Template string
	// Get and Post handle the methods; nil answers 405.
	Get, Post Handler

	tmpl *template.Template
}

// Handler answers one request for a signed-in operator.
type Handler func(c *Ctx) error

// Ctx is one request to a page: the operator, the brand and the services.
// It is a context.Context, the request's.
type Ctx struct {
	context.Context
	W        http.ResponseWriter
	R        *http.Request
	Operator *parley.Operator
	Brand    *parley.Brand
	// Title replaces the page's Title in the <h1> (a contact's name).
	Title string
	// Service and Operators are the console's services.
	Service   *service.Service
	Operators *service.Operators
	// Now is the console's clock, read once per request.
	Now time.Time

	page    *Page
	console *Console
	zone    *time.Location
}

// Zone is the brand's time zone (its settings' time_zone), in which pages
// show every time (issue #32); UTC when it cannot be read.
func (c *Ctx) Zone() *time.Location {
	if c.zone != nil {
		return c.zone
	}
	c.zone = time.UTC
	if c.Operator == nil {
		return c.zone
	}
	st, err := c.Service.BrandSettings(c, c.BrandID())
	if err != nil {
		return c.zone
	}
	if loc, err := time.LoadLocation(st.TimeZone); err == nil {
		c.zone = loc
	}
	return c.zone
}

// BrandID is the brand every call of the page must be scoped to.
func (c *Ctx) BrandID() int64 { return c.Operator.BrandID }

// Form returns a posted form value; checkForm has read the form (bounded
// to MaxForm) before the handler runs.
func (c *Ctx) Form(key string) string {
	if c.R.Form == nil {
		c.R.Body = http.MaxBytesReader(c.W, c.R.Body, MaxForm)
		c.R.ParseForm()
	}
	return c.R.PostFormValue(key)
}

// layoutData is what layout.html sees.
type layoutData struct {
	Title    string
	Operator *parley.Operator
	Brand    *parley.Brand
	Nav      []navItem
	// Data is what the handler gave Render.
	Data any
	// Error is a message shown above the content.
	Error string
	// Zone is the brand's time zone: {{when $.Zone .At}}.
	Zone *time.Location
}

// Render answers 200 with the page in the layout; data is .Data.
func (c *Ctx) Render(data any) error { return c.RenderStatus(http.StatusOK, data, "") }

// RenderStatus answers status with the page, data and an error message
// shown above the content ("" for none): a form sent back with its error.
func (c *Ctx) RenderStatus(status int, data any, errMsg string) error {
	d := layoutData{Title: c.Title, Operator: c.Operator, Brand: c.Brand, Data: data, Error: errMsg, Zone: c.Zone()}
	if d.Title == "" {
		d.Title = c.page.Title
	}
	if c.Operator != nil {
		d.Nav = c.console.nav(c)
	}
	return c.execute(status, c.page.tmpl, "layout.html", d)
}

// Fragment answers 200 with one template of the page's file, without the
// layout: the part of a page that a script refreshes.
func (c *Ctx) Fragment(name string, data any) error {
	return c.execute(http.StatusOK, c.page.tmpl, name, data)
}

func (c *Ctx) execute(status int, t *template.Template, name string, data any) error {
	var buf bytes.Buffer // a failing template must not send half a page
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return err
	}
	c.W.Header().Set("Content-Type", "text/html; charset=utf-8")
	c.W.WriteHeader(status)
	_, err := c.W.Write(buf.Bytes())
	return err
}

// Redirect answers 303 to a path below /console/ ("contacts/12").
func (c *Ctx) Redirect(path string) error {
	http.Redirect(c.W, c.R, Prefix+path, http.StatusSeeOther)
	return nil
}

// NotFound answers 404 with msg.
func (c *Ctx) NotFound(msg string) error {
	return c.fail(http.StatusNotFound, "Not found", msg)
}

// Forbidden answers 403 with msg.
func (c *Ctx) Forbidden(msg string) error {
	return c.fail(http.StatusForbidden, "Forbidden", msg)
}

// fail answers an error page: the layout (with the nav when signed in)
// around error.html.
func (c *Ctx) fail(status int, title, msg string) error {
	d := layoutData{Title: title, Operator: c.Operator, Brand: c.Brand, Data: msg, Zone: c.Zone()}
	if c.Operator != nil {
		d.Nav = c.console.nav(c)
	}
	return c.execute(status, c.console.errorTmpl, "layout.html", d)
}

// statusOf is the one table from service errors to console statuses.
func statusOf(code string) (int, string) {
	switch code {
	case parley.ENotFound, parley.EUserNotFound, parley.ESegmentNotFound, parley.ECampaignNotFound:
		return http.StatusNotFound, "Not found"
	case parley.ENotAuthenticated:
		return http.StatusUnauthorized, "Not signed in"
	case parley.ERateLimited:
		return http.StatusTooManyRequests, "Too many requests"
	case parley.EDuplicate, parley.EIdempotencyInUse, parley.EIdempotencyReused, parley.ECampaignNotEditable:
		return http.StatusConflict, "Conflict"
	case parley.EPayloadTooLarge:
		return http.StatusRequestEntityTooLarge, "Too large"
	case parley.EInvalidRequest:
		return http.StatusBadRequest, "Bad request"
	case parley.EUnavailable:
		return http.StatusServiceUnavailable, "Unavailable"
	case parley.EInternal:
		return http.StatusInternalServerError, "Something went wrong"
	}
	return http.StatusUnprocessableEntity, "Cannot do that"
}

// page wraps a handler: the session, the role, the brand, and the error
// page for what the handler returns.
func (c *Console) page(p *Page, h Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := &Ctx{Context: r.Context(), W: w, R: r, Service: c.Service, Operators: c.Operators,
			Now: c.Now(), page: p, console: c}
		op, err := c.Operators.Authenticate(r.Context(), sessionToken(r))
		if parley.ErrorCode(err) == parley.ENotAuthenticated {
			http.Redirect(w, r, Prefix+"signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if err == nil {
			x.Operator = op
			x.Brand, err = c.Service.FindBrand(r.Context(), op.BrandID)
		}
		if err == nil {
			if p.Admin && !op.IsAdmin() && p.AgentRedirect != "" {
				err = x.Redirect(p.AgentRedirect)
			} else if p.Admin && !op.IsAdmin() {
				err = x.Forbidden("This page is for admins only. Ask an admin of your brand for access.")
			} else if err = x.checkForm(); err == nil {
				err = h(x)
			}
		}
		if err != nil {
			c.answerError(x, err)
		}
	})
}

// answerError shows err: a service error's message with its status, any
// other error as a 500 that leaks nothing (and is logged).
func (c *Console) answerError(x *Ctx, err error) {
	code := parley.ErrorCode(err)
	if code == parley.EInternal && c.StorageFull != nil && c.StorageFull(err) {
		c.Logger.WarnContext(x, "console: storage full", "path", x.R.URL.Path, "err", err)
		code, err = parley.EUnavailable, parley.Errorf(parley.EUnavailable, "The server's storage is full. Try again later.")
		x.W.Header().Set("Retry-After", "5")
	}
	if code == parley.EInternal {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			code = parley.EPayloadTooLarge
		} else {
			c.Logger.ErrorContext(x, "console: request failed", "path", x.R.URL.Path, "err", err)
		}
	}
	status, title := statusOf(code)
	if err := x.fail(status, title, parley.ErrorMessage(err)); err != nil {
		c.Logger.ErrorContext(x, "console: error page failed", "err", err)
	}
}
