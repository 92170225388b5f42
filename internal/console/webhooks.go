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

// The Webhooks page (D19, D11, issue #18): the brand's endpoints (list,
// create, disable or enable, delete), each endpoint's delivery log with a Retry button per
// delivery that did not arrive, and "Send test event". The same service as
// the v1 /webhooks API; admins only.
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
}

type webhookForm struct {
	URL, Description string
	Types            []string
	All              bool
}

// Has reports whether the form had the event type checked.
func (f webhookForm) Has(t string) bool { return slices.Contains(f.Types, t) }

func webhooksPage(c *Ctx) error {
	return c.renderWebhooks(http.StatusOK, webhooksData{Form: webhookForm{All: true}}, "")
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
	c.Form("")
	f := webhookForm{URL: strings.TrimSpace(c.Form("url")), Description: c.Form("description"),
		Types: c.R.PostForm["event_types"], All: c.Form("all_events") != ""}
	in := parley.WebhookCreate{URL: parley.Some(f.URL), Description: parley.Some(f.Description)}
	if f.All {
		in.EventTypes = parley.Some([]string{"*"})
	} else {
		in.EventTypes = parley.Some(f.Types)
	}
	w, err := c.Service.CreateWebhook(c, c.consoleOrigin(), c.BrandID(), in)
	if err != nil {
		status, _ := statusOf(parley.ErrorCode(err))
		if status >= 500 {
			return err
		}
		field := errField(err)
		if field == "" {
			field = "url"
		}
		return c.renderWebhooks(status, webhooksData{Form: f, Errors: map[string]string{fieldName(field): parley.ErrorMessage(err)}},
			"The endpoint was not created: see below.")
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
	return webhookData{Webhook: w, Deliveries: ds, Zone: c.Zone()}, err
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
	case "delete":
		if _, err := c.Service.DeleteWebhook(c, c.consoleOrigin(), c.BrandID(), w.ID); err != nil {
			return err
		}
		return c.Redirect("webhooks")
	}
	return parley.Errorf(parley.EValidation, "Unknown action: press one of the page's buttons.")
}
