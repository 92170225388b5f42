package service

import (
	"context"
	"encoding/json"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/placeholder"
)

// The placeholders of a campaign's body (D21): checked when the campaign
// is saved, filled in per recipient when its messages are sent.

// parseBody reads body's placeholders; a body that does not parse is a
// validation error on field (body, or steps[2].body for a flow).
func parseBody(field, body string) (*placeholder.Template, error) {
	t, err := placeholder.Parse(body)
	if err != nil {
		return nil, invalid(field, err.Error())
	}
	return t, nil
}

// checkPlaceholders refuses a body with a placeholder the brand cannot
// fill in: {{event.…}} unless event (event-triggered flows), and
// {{custom.<key>}} whose key is no custom data field of the brand (an
// unknown placeholder: a typo would otherwise send empty text).
func checkPlaceholders(ctx context.Context, tx fieldLister, brandID int64, field, body string, event bool) error {
	t, err := parseBody(field, body)
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	if t.Uses(placeholder.Custom) {
		fields, err := tx.ListCustomFields(ctx, brandID)
		if err != nil {
			return err
		}
		for _, f := range fields {
			keys[parley.CustomDataKey(f.FieldName)] = true
		}
	}
	if err := t.Check(placeholder.Rules{Event: event, CustomKey: func(k string) bool { return keys[k] }}); err != nil {
		return invalid(field, err.Error())
	}
	return nil
}

// fieldLister is a store.DB or a store.Tx.
type fieldLister interface {
	ListCustomFields(ctx context.Context, brandID int64) ([]*parley.CustomField, error)
}

// Contact is what a body is filled in with for one contact: its names and
// its custom data as stored (a JSON object, "" for none).
type Contact struct {
	FirstName, LastName, CustomData string
	// Event is the properties of the event that started a flow's run
	// ({{event.…}}, D21); nil outside event-triggered flows.
	Event json.RawMessage
}

// bodyRenderer fills a campaign's body in per recipient. A body stored
// before placeholders existed that does not parse is sent as written.
type bodyRenderer struct {
	t *placeholder.Template
}

func newBodyRenderer(body string) bodyRenderer {
	t, err := placeholder.Parse(body)
	if err != nil {
		return bodyRenderer{}
	}
	return bodyRenderer{t: t}
}

// static reports whether every recipient gets the body as written.
func (r bodyRenderer) static() bool { return r.t == nil || r.t.Static() }

// render returns body filled in for c.
func (r bodyRenderer) render(body string, c Contact) string {
	if r.static() {
		return body
	}
	v := placeholder.Values{FirstName: c.FirstName, LastName: c.LastName}
	if c.CustomData != "" && r.t.Uses(placeholder.Custom) {
		var m map[string]any
		if json.Unmarshal([]byte(c.CustomData), &m) == nil {
			v.Custom = placeholder.FromMap(m)
		}
	}
	if len(c.Event) > 0 && r.t.Uses(placeholder.Event) {
		var m map[string]any
		if json.Unmarshal(c.Event, &m) == nil {
			v.Event = placeholder.FromMap(m)
		}
	}
	return r.t.Render(v)
}

// RenderBody fills body's placeholders in for c, as a campaign's message
// to c would read (D21): the console's preview and test send.
func RenderBody(body string, c Contact) string {
	return newBodyRenderer(body).render(body, c)
}
