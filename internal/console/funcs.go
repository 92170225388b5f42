package console

import (
	"html/template"
	"time"
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
}
