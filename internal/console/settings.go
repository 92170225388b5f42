package console

import (
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The Settings page (D19, D17, issue #18, issue #32): the brand's sending
// rules, with the admin API's validation (service.UpdateBrandSettings) and
// every error at once next to its field, and the brand's operators: add one
// with a password or a one-time sign-in link, send one a new link (the old
// ones stop working), remove one after a confirmation (never yourself).
// Admins only. Other parts of the page are the templates "settings-rules",
// "settings-brand" and "settings-replies" (one file each).
func init() {
	Register(Page{
		Path: "settings", Title: "Settings", Nav: "Settings", Order: 80, Admin: true,
		// settings*.html: the page and its sections (settings_rules.html …).
		Template: "settings*.html", Get: settingsPage, Post: settingsSave,
	})
	Register(Page{
		Path: "settings/operators", Title: "Settings", Admin: true,
		Template: "settings*.html", Post: operatorsAction,
	})
}

// settingsForm is the settings form's fields as text, as sent.
type settingsForm struct {
	WindowStart, WindowEnd, TimeZone, CapMax, CapHours, SendRate string
	// ExtractOptedOut is D20's extract_when_opted_out (#19).
	ExtractOptedOut bool
}

// operatorForm is the add-operator form as sent.
type operatorForm struct {
	Email, Role string
}

// settingsData is what settings.html sees.
type settingsData struct {
	Form settingsForm
	// Errors are the settings form's errors by field name.
	Errors    map[string]string
	Operators []*parley.Operator
	// Me is the signed-in operator's id: no Remove button for it.
	Me     int64
	OpForm operatorForm
	// OpErrors are the add-operator form's errors by field name.
	OpErrors map[string]string
	// Link is the one-time sign-in link of the operator just added, or
	// just sent a new link.
	Link, LinkEmail string
	Notice          string
	// Confirm is the operator to remove, asked about first.
	Confirm *parley.Operator
	// ZonesUS and ZonesWorld are the zone picker's options.
	ZonesUS, ZonesWorld []zoneChoice
	// Brand is the brand form (settings_brand.go, D22).
	Brand brandForm
	// Replies is the keyword replies' form (settings_replies.go).
	Replies *repliesForm
}

// fieldView is one text field of the page, for the "field" template: its
// label, the value as sent and its error.
type fieldView struct {
	Name, Label, Value, Error string
	// Mode is "email", "numeric", "decimal" or "text".
	Mode string
}

// Field is the view of the text field name.
func (d settingsData) Field(name, label, value, mode string) fieldView {
	e := d.Errors[name]
	if e == "" {
		e = d.OpErrors[name]
	}
	return fieldView{Name: name, Label: label, Value: value, Error: e, Mode: mode}
}

func formOf(st *parley.BrandSettings) settingsForm {
	f := settingsForm{WindowStart: st.SendingWindow.Start, WindowEnd: st.SendingWindow.End,
		TimeZone: st.TimeZone, SendRate: strconv.FormatFloat(st.SendRate, 'f', -1, 64), ExtractOptedOut: st.ExtractWhenOptedOut}
	if c := st.FrequencyCap; c != nil {
		f.CapMax, f.CapHours = strconv.Itoa(c.MaxMessages), strconv.Itoa(c.PerHours)
	}
	return f
}

func settingsPage(c *Ctx) error {
	st, err := c.Service.BrandSettings(c, c.BrandID())
	if err != nil {
		return err
	}
	d := settingsData{Form: formOf(st), OpForm: operatorForm{Role: string(parley.RoleAgent)}}
	switch c.R.URL.Query().Get("done") {
	case "saved":
		d.Notice = "Settings saved."
	case "replies":
		d.Notice = "Keyword answers saved."
	case "removed":
		d.Notice = "Operator removed; their sessions have ended."
	case "added":
		d.Notice = "Operator added: they can sign in with their password."
	}
	return c.renderSettings(http.StatusOK, d, "")
}

// renderSettings shows the page with d's forms and the brand's operators.
func (c *Ctx) renderSettings(status int, d settingsData, errMsg string) error {
	ops, err := c.Operators.List(c, c.BrandID())
	if err != nil {
		return err
	}
	if d.Form == (settingsForm{}) {
		st, err := c.Service.BrandSettings(c, c.BrandID())
		if err != nil {
			return err
		}
		d.Form = formOf(st)
	}
	if d.OpForm.Role == "" {
		d.OpForm.Role = string(parley.RoleAgent)
	}
	d.Operators, d.Me = ops, c.Operator.ID
	d.ZonesUS, d.ZonesWorld = zoneChoices(d.Form.TimeZone)
	if d.Brand, err = c.brandFormOf(d.Brand); err != nil {
		return err
	}
	if err := c.fillReplies(&d); err != nil {
		return err
	}
	return c.RenderStatus(status, d, errMsg)
}

// settingsSave applies the whole form through the service that serves
// POST /admin/v1/brands/{id}/settings, so the rules are the same (D17): a
// bad value changes nothing and is shown next to its field.
func settingsSave(c *Ctx) error {
	f := settingsForm{WindowStart: strings.TrimSpace(c.Form("window_start")), WindowEnd: strings.TrimSpace(c.Form("window_end")),
		TimeZone: strings.TrimSpace(c.Form("time_zone")), CapMax: strings.TrimSpace(c.Form("cap_max")),
		CapHours: strings.TrimSpace(c.Form("cap_hours")), SendRate: strings.TrimSpace(c.Form("send_rate")),
		ExtractOptedOut: c.Form("extract_when_opted_out") != ""}
	u := parley.BrandSettingsUpdate{
		SendingWindow: parley.Some(parley.SendingWindow{Start: f.WindowStart, End: f.WindowEnd}),
		TimeZone:      parley.Some(f.TimeZone),
		FrequencyCap:  parley.Null[parley.FrequencyCap](),
		SendRate:      parley.Some(formFloat(f.SendRate)),
		// A checkbox: unchecked (absent) is false, the D20 default.
		ExtractWhenOptedOut: parley.Some(f.ExtractOptedOut),
	}
	if f.CapMax != "" || f.CapHours != "" {
		// Text that is no whole number reads as 0, which the service
		// refuses with the API's own message.
		u.FrequencyCap = parley.Some(parley.FrequencyCap{MaxMessages: formInt(f.CapMax), PerHours: formInt(f.CapHours)})
	}
	// Every error at once, each next to its field; nothing is saved.
	if errs := service.CheckBrandSettings(u); len(errs) > 0 {
		return c.renderSettings(http.StatusUnprocessableEntity, settingsData{Form: f, Errors: settingsErrors(errs...)},
			settingsRefused(len(errs)))
	}
	if _, err := c.Service.UpdateBrandSettings(c, c.BrandID(), u); err != nil {
		if parley.ErrorCode(err) != parley.EValidation {
			return err
		}
		return c.renderSettings(http.StatusUnprocessableEntity, settingsData{Form: f, Errors: settingsErrors(err)}, settingsRefused(1))
	}
	c.console.Logger.InfoContext(c, "console: brand settings changed", "brand_id", c.BrandID(),
		"source", parley.SourceConsole, "operator", c.Operator.Email)
	return c.Redirect("settings?done=saved")
}

// settingsHelp is what each settings field takes, in plain words: the
// error shown next to it.
var settingsHelp = map[string]string{
	"window_start": "Choose the time of day sending starts, such as 09:00.",
	"window_end":   "Choose the time of day sending ends, such as 21:00 (the same time as the start means all day).",
	"time_zone":    "Choose a time zone from the list.",
	"cap_max":      "Enter how many messages, a whole number of 1 or more; or leave both frequency cap boxes empty for no cap.",
	"cap_hours":    "Enter how many hours, a whole number from 1 to 8784 (a year); or leave both frequency cap boxes empty for no cap.",
	"send_rate":    "Enter messages per second, a number from 0 (no limit) to 10000, such as 2.5.",
}

// settingsErrors are errs by form field, in plain words.
func settingsErrors(errs ...error) map[string]string {
	out := map[string]string{}
	for _, err := range errs {
		f := fieldName(errField(err))
		msg, ok := settingsHelp[f]
		if !ok {
			msg = parley.ErrorMessage(err)
		}
		out[f] = msg
	}
	return out
}

// settingsRefused is the message above a refused settings form.
func settingsRefused(n int) string {
	if n == 1 {
		return "The settings were not saved: one value needs fixing, shown below."
	}
	return "The settings were not saved: " + strconv.Itoa(n) + " values need fixing, shown below."
}

// formInt reads a whole number; anything else is 0.
func formInt(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// formFloat reads a number; anything else (the empty string too) is NaN,
// which the service refuses.
func formFloat(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// operatorsAction adds or removes an operator of the brand.
func operatorsAction(c *Ctx) error {
	switch c.Form("action") {
	case "add":
		return operatorAdd(c)
	case "remove":
		return operatorRemove(c)
	case "newlink":
		id, err := strconv.ParseInt(c.Form("id"), 10, 64)
		if err != nil || id < 1 {
			return parley.Errorf(parley.ENotFound, "There is no such operator.")
		}
		op, token, err := c.Operators.NewLink(c, c.BrandID(), id)
		if err != nil {
			return err
		}
		c.console.Logger.InfoContext(c, "console: operator sign-in link replaced", "brand_id", c.BrandID(), "operator_id", op.ID,
			"source", parley.SourceConsole, "by", c.Operator.Email)
		return c.renderSettings(http.StatusOK, settingsData{Link: c.linkURL(token), LinkEmail: op.Email,
			Notice: "A new sign-in link for " + op.Email + " is below; their earlier links no longer work."}, "")
	}
	return parley.Errorf(parley.EValidation, "Unknown action: press one of the page's buttons.")
}

func operatorAdd(c *Ctx) error {
	f := operatorForm{Email: strings.TrimSpace(c.Form("email")), Role: c.Form("role")}
	pw := c.Form("password")
	op, err := c.Operators.Add(c, c.BrandID(), f.Email, parley.OperatorRole(f.Role), pw)
	if err != nil {
		switch parley.ErrorCode(err) {
		case parley.EValidation, parley.EDuplicate:
			field := errField(err)
			if field == "" {
				field = "email" // a taken email
			}
			d := settingsData{OpForm: f, OpErrors: map[string]string{field: parley.ErrorMessage(err)}}
			status, _ := statusOf(parley.ErrorCode(err))
			return c.renderSettings(status, d, "The operator was not added: see below.")
		}
		return err
	}
	c.console.Logger.InfoContext(c, "console: operator added", "brand_id", c.BrandID(), "operator_id", op.ID,
		"role", op.Role, "source", parley.SourceConsole, "by", c.Operator.Email)
	if pw != "" {
		return c.Redirect("settings?done=added")
	}
	token, err := c.Operators.Link(c, c.BrandID(), op.Email)
	if err != nil {
		return err
	}
	// The link is shown once, so this answer is the page itself.
	d := settingsData{Link: c.linkURL(token), LinkEmail: op.Email, Notice: "Operator " + op.Email + " added."}
	return c.renderSettings(http.StatusCreated, d, "")
}

// linkURL is the one-time sign-in link of token, over TLS as the session
// cookie reckons it (overTLS): behind a proxy that ends TLS, an http link
// would carry the token in clear.
func (c *Ctx) linkURL(token string) string {
	scheme := "http"
	if overTLS(c.R) {
		scheme = "https"
	}
	return scheme + "://" + c.R.Host + Prefix + "link?token=" + token
}

// operatorRemove removes an operator once the admin has confirmed it: the
// table's Remove button answers a page that names the operator and asks
// (issue #32); its own button sends confirm.
func operatorRemove(c *Ctx) error {
	id, err := strconv.ParseInt(c.Form("id"), 10, 64)
	if err != nil || id < 1 {
		return parley.Errorf(parley.ENotFound, "There is no such operator.")
	}
	if c.Form("confirm") == "" && id != c.Operator.ID { // yourself: the service's refusal
		ops, err := c.Operators.List(c, c.BrandID())
		if err != nil {
			return err
		}
		for _, op := range ops {
			if op.ID == id {
				c.Title = "Remove " + op.Email + "?"
				return c.renderSettings(http.StatusOK, settingsData{Confirm: op}, "")
			}
		}
		return parley.Errorf(parley.ENotFound, "There is no such operator: they may have been removed already.")
	}
	if err := c.Operators.Remove(c, c.BrandID(), c.Operator.ID, id); err != nil {
		if parley.ErrorCode(err) == parley.EValidation {
			return c.renderSettings(http.StatusUnprocessableEntity, settingsData{}, parley.ErrorMessage(err))
		}
		return err
	}
	c.console.Logger.InfoContext(c, "console: operator removed", "brand_id", c.BrandID(), "operator_id", id,
		"source", parley.SourceConsole, "by", c.Operator.Email)
	return c.Redirect("settings?done=removed")
}
