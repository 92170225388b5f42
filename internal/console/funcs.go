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
	// when formats a time for people: 2026-11-25 13:04 UTC.
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04 MST")
	},
	// whenp formats an optional time ("" for none).
	"whenp": func(t *parley.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04 MST")
	},
	// deref shows an optional string ("" for none).
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
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
