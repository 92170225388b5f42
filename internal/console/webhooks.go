package console

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// The Webhooks page (D19, D11, issue #18, issue #32): the brand's endpoints
// (list, create, edit URL, description and events, rotate the signing
// secret, disable or enable, delete after a confirmation), each endpoint's
// delivery log with a Retry button per delivery that did not arrive, and
// "Send test event". The same service as the v1 /webhooks API (its update
// and rotate_secret); admins only.
func init() {
	Register(Page{
		Path: "webhooks", Title: "Webhooks", Nav: "Webhooks", Order: 70, Admin: true,
		Template: "webhooks.html", Get: webhooksPage, Post: webhooksCreate,
	})
	Register(Page{
		Path: "webhooks/{id}", Title: "Webhook", Admin: true,
		Template: "webhook.html", Get: webhookPage, Post: webhookAction,
	})
	// The delivery log alone, which static/console.js polls.
	Register(Page{
		Path: "webhooks/{id}/deliveries", Title: "Webhook", Admin: true,
		Template: "webhook.html", Get: webhookDeliveries,
	})
}

// webhookLogSize is how many deliveries the log shows, newest first.
const webhookLogSize = 50

// webhooksData is what webhooks.html sees.
type webhooksData struct {
	Webhooks []*parley.Webhook
	// EventTypes are the types an endpoint may take, for the checkboxes.
	EventTypes []string
	// Form is the create form as sent, kept after an error; Errors are
	// its errors by field name.
	Form   webhookForm
	Errors map[string]string
	// Created is the endpoint just created, with its secret (shown once).
	Created *parley.Webhook
	// Notice says what the last button did.
	Notice string
}

type webhookForm struct {
	URL, Description string
	Types            []string
	All              bool
}

// Has reports whether the form had the event type checked.
func (f webhookForm) Has(t string) bool { return slices.Contains(f.Types, t) }

func webhooksPage(c *Ctx) error {
	d := webhooksData{Form: webhookForm{All: true}}
	if c.R.URL.Query().Get("done") == "deleted" {
		d.Notice = "The endpoint was deleted; Parley sends it nothing more."
	}
	return c.renderWebhooks(http.StatusOK, d, "")
}

func (c *Ctx) renderWebhooks(status int, d webhooksData, errMsg string) error {
	list, err := c.Service.ListWebhooks(c, c.BrandID())
	if err != nil {
		return err
	}
	d.Webhooks, d.EventTypes = list, parley.EventTypes
	return c.RenderStatus(status, d, errMsg)
}

// consoleOrigin is who a console write is by, for history and the store's
// records: the console and the operator's email (D18, D19).
func (c *Ctx) consoleOrigin() parley.Origin {
	return parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
}

func webhooksCreate(c *Ctx) error {
	f := c.postedWebhookForm()
	in := parley.WebhookCreate{URL: parley.Some(f.URL), Description: parley.Some(f.Description), EventTypes: parley.Some(f.Types)}
	if f.All {
		in.EventTypes = parley.Some([]string{"*"})
	}
	w, err := c.Service.CreateWebhook(c, c.consoleOrigin(), c.BrandID(), in)
	if err != nil {
		status, _ := statusOf(parley.ErrorCode(err))
		if status >= 500 {
			return err
		}
		return c.renderWebhooks(status, webhooksData{Form: f, Errors: webhookFormErrors(err)}, "The endpoint was not created: see below.")
	}
	// The secret is shown once, so this answer is the page itself rather
	// than a redirect to it.
	return c.renderWebhooks(http.StatusCreated, webhooksData{Form: webhookForm{All: true}, Created: w}, "")
}

// errField is the JSON path of the member a service error is about, "" for
// none.
func errField(err error) string {
	var e *parley.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}

// fieldName is the form field of a service error's JSON path
// ("event_types[0]" → "event_types", "sending_window.start" → "window_start").
func fieldName(path string) string {
	if i := strings.IndexByte(path, '['); i >= 0 {
		path = path[:i]
	}
	switch path {
	case "sending_window", "sending_window.start":
		return "window_start"
	case "sending_window.end":
		return "window_end"
	case "frequency_cap", "frequency_cap.max_messages":
		return "cap_max"
	case "frequency_cap.per_hours":
		return "cap_hours"
	}
	return path
}

// webhookData is what webhook.html sees.
type webhookData struct {
	Webhook    *parley.Webhook
	Deliveries []*parley.WebhookDelivery
	// Notice says what the last button did.
	Notice string
	// Watch is the query of the log's refresh after a button queued an
	// attempt ("after=12&until=1764…"); "" when nothing is awaited.
	Watch string
	// Pending says the awaited attempt is not in the log yet, so
	// static/console.js keeps refreshing it.
	Pending bool
	// Zone is the brand's, for the log's times (a fragment of its own).
	Zone *time.Location
	// Form is the edit form, as sent after an error; Errors are its
	// errors by field name; EventTypes are the types to check.
	Form       webhookForm
	Errors     map[string]string
	EventTypes []string
	// ConfirmDelete asks before the endpoint is deleted.
	ConfirmDelete bool
	// Secret is the new signing secret just made by a rotation, shown once.
	Secret string
}

// watchFor is how long the log is refreshed, at most, for an attempt a
// button queued: a disabled or slow endpoint must not be polled forever.
const watchFor = 2 * time.Minute

// pending reports whether the log still lacks an attempt newer than
// delivery id after, before until (Unix seconds).
func (d *webhookData) pending(after, until int64, now time.Time) bool {
	return now.Unix() < until && (len(d.Deliveries) == 0 || d.Deliveries[0].ID <= after)
}

// findWebhook reads the page's endpoint, scoped to the operator's brand.
func (c *Ctx) findWebhook() (*parley.Webhook, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, parley.Errorf(parley.ENotFound, "There is no such webhook endpoint.")
	}
	return c.Service.FindWebhook(c, c.BrandID(), id)
}

func (c *Ctx) webhookData(w *parley.Webhook) (webhookData, error) {
	ds, _, err := c.Service.ListWebhookDeliveries(c, c.BrandID(), w.ID, webhookLogSize, "")
	return webhookData{Webhook: w, Deliveries: ds, Zone: c.Zone(), Form: formOfWebhook(w), EventTypes: parley.EventTypes}, err
}

// formOfWebhook is the edit form of w as it is.
func formOfWebhook(w *parley.Webhook) webhookForm {
	f := webhookForm{URL: w.URL, Description: w.Description}
	if slices.Contains(w.EventTypes, "*") {
		f.All = true
	} else {
		f.Types = w.EventTypes
	}
	return f
}

// postedWebhookForm reads the create or edit form.
func (c *Ctx) postedWebhookForm() webhookForm {
	c.Form("")
	return webhookForm{URL: strings.TrimSpace(c.Form("url")), Description: c.Form("description"),
		Types: c.R.PostForm["event_types"], All: c.Form("all_events") != ""}
}

// eventTypes is what the form's checkboxes subscribe to.
func (f webhookForm) eventTypes() []string {
	if f.All {
		return []string{"*"}
	}
	if f.Types == nil {
		return []string{}
	}
	return f.Types
}

// webhookFormErrors are a refused create or update's errors by field.
func webhookFormErrors(err error) map[string]string {
	field := errField(err)
	if field == "" {
		field = "url"
	}
	return map[string]string{fieldName(field): parley.ErrorMessage(err)}
}

func webhookPage(c *Ctx) error {
	w, err := c.findWebhook()
	if err != nil {
		return err
	}
	d, err := c.webhookData(w)
	if err != nil {
		return err
	}
	q := c.R.URL.Query()
	switch q.Get("done") {
	case "test":
		d.Notice = "A test event was queued; its delivery appears in the log below."
	case "retry":
		d.Notice = "The delivery was queued again; the new attempt appears in the log below."
	}
	if d.Notice != "" {
		// Refresh the log until an attempt newer than the newest one
		// before the button was pressed is in it.
		after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
		until := c.Now.Add(watchFor).Unix()
		d.Watch = "after=" + strconv.FormatInt(after, 10) + "&until=" + strconv.FormatInt(until, 10)
		d.Pending = d.pending(after, until, c.Now)
	}
	if q.Get("done") == "saved" {
		d.Notice = "The endpoint was saved."
	}
	c.Title = "Webhook " + w.URL
	return c.Render(d)
}

func webhookDeliveries(c *Ctx) error {
	w, err := c.findWebhook()
	if err != nil {
		return err
	}
	d, err := c.webhookData(w)
	if err != nil {
		return err
	}
	q := c.R.URL.Query()
	after, _ := strconv.ParseInt(q.Get("after"), 10, 64)
	until, _ := strconv.ParseInt(q.Get("until"), 10, 64)
	d.Pending = d.pending(after, until, c.Now)
	return c.Fragment("deliveries", d)
}

// webhookAction is the endpoint page's buttons: send a test event, retry
// a delivery, disable or enable the endpoint, delete it.
func webhookAction(c *Ctx) error {
	w, err := c.findWebhook()
	if err != nil {
		return err
	}
	path := "webhooks/" + strconv.FormatInt(w.ID, 10)
	// after is the newest attempt before the button: the page then waits
	// for a newer one.
	after := func() (string, error) {
		ds, _, err := c.Service.ListWebhookDeliveries(c, c.BrandID(), w.ID, 1, "")
		if err != nil || len(ds) == 0 {
			return "0", err
		}
		return strconv.FormatInt(ds[0].ID, 10), nil
	}
	switch c.Form("action") {
	case "test":
		a, err := after()
		if err != nil {
			return err
		}
		if _, err := c.Service.TestWebhook(c, c.consoleOrigin(), c.BrandID(), w.ID); err != nil {
			return err
		}
		return c.Redirect(path + "?done=test&after=" + a)
	case "retry":
		did, err := strconv.ParseInt(c.Form("delivery"), 10, 64)
		if err != nil || did < 1 {
			return parley.Errorf(parley.ENotFound, "There is no such delivery.")
		}
		a, err := after()
		if err != nil {
			return err
		}
		if _, err := c.Service.RetryWebhookDelivery(c, c.consoleOrigin(), c.BrandID(), w.ID, did); err != nil {
			return err
		}
		return c.Redirect(path + "?done=retry&after=" + a)
	case "enable", "disable":
		// An endpoint that answered 410 or failed for days is disabled
		// (D11); the admin turns it back on here once it is mended.
		in := parley.WebhookUpdate{Disabled: parley.Some(c.Form("action") == "disable")}
		if _, err := c.Service.UpdateWebhook(c, c.consoleOrigin(), c.BrandID(), w.ID, in); err != nil {
			return err
		}
		return c.Redirect(path)
	case "update":
		return webhookUpdate(c, w)
	case "rotate":
		nw, err := c.Service.RotateWebhookSecret(c, c.consoleOrigin(), c.BrandID(), w.ID)
		if err != nil {
			return err
		}
		d, err := c.webhookData(nw)
		if err != nil {
			return err
		}
		// The secret is shown once, so this answer is the page itself.
		d.Secret, d.Webhook.Secret = nw.Secret, ""
		c.Title = "Webhook " + nw.URL
		return c.Render(d)
	case "delete":
		if c.Form("confirm") == "" {
			// Ask first (issue #32): the endpoint's log goes with it.
			c.Title = "Delete the endpoint " + w.URL + "?"
			return c.Render(webhookData{Webhook: w, ConfirmDelete: true, Zone: c.Zone()})
		}
		if _, err := c.Service.DeleteWebhook(c, c.consoleOrigin(), c.BrandID(), w.ID); err != nil {
			return err
		}
		return c.Redirect("webhooks?done=deleted")
	}
	return parley.Errorf(parley.EValidation, "Unknown action: press one of the page's buttons.")
}

// webhookUpdate saves the edit form through the service of POST
// /webhooks/{id}: a refused value changes nothing and is shown next to
// its field.
func webhookUpdate(c *Ctx, w *parley.Webhook) error {
	f := c.postedWebhookForm()
	in := parley.WebhookUpdate{URL: parley.Some(f.URL), Description: parley.Some(f.Description), EventTypes: parley.Some(f.eventTypes())}
	if _, err := c.Service.UpdateWebhook(c, c.consoleOrigin(), c.BrandID(), w.ID, in); err != nil {
		status, _ := statusOf(parley.ErrorCode(err))
		if status >= 500 || status == http.StatusNotFound {
			return err
		}
		d, derr := c.webhookData(w)
		if derr != nil {
			return derr
		}
		d.Form, d.Errors = f, webhookFormErrors(err)
		c.Title = "Webhook " + w.URL
		return c.RenderStatus(status, d, "The endpoint was not changed: see below.")
	}
	return c.Redirect("webhooks/" + strconv.FormatInt(w.ID, 10) + "?done=saved")
}
