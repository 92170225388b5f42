package console

import (
	"encoding/json"
	"html/template"
	"time"

	"github.com/parleyhq/parley"
)

// funcs are the template functions every page may use.
var funcs = template.FuncMap{
	// path is a console path: {{path "contacts/12"}} → /console/contacts/12.
	"path": func(p string) string { return Prefix + p },
	// when formats a time for people in the brand's zone, named:
	// {{when $.Zone .At}} → 2026-11-25 08:04 EST (issue #32: every time in
	// the brand's zone). A nil zone is UTC.
	"when": when,
	// whenp formats an optional time ("" for none): {{whenp $.Zone .At}}.
	"whenp": func(loc *time.Location, t *parley.Time) string {
		if t == nil {
			return ""
		}
		return when(loc, t.Time)
	},
	// zonename names a zone for people: {{zonename $.Zone}} → "Eastern
	// Time (America/New_York)".
	"zonename": zoneName,
	// deref shows an optional string ("" for none).
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	// key is a custom field's key in custom_data (D6).
	"key": parley.CustomDataKey,
	// name is a contact's name, or their number.
	"name": displayName,
	// consent reads messaging_consent for people.
	"consent": func(b *bool) string {
		switch {
		case b == nil:
			return "not given"
		case *b:
			return "opted in"
		}
		return "opted out"
	},
	// raw shows a JSON value as text ("null" for none).
	"raw": func(v json.RawMessage) string {
		if len(v) == 0 {
			return "null"
		}
		return string(v)
	},
}

// when formats t in loc (UTC when nil) with the zone's abbreviation.
func when(loc *time.Location, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("2006-01-02 15:04 MST")
}
