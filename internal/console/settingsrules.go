package console

import "html/template"

// serverFuncs are the template functions that read how the server runs,
// not the brand: {{if usSendingRules}} (settings_rules.html, issue #32:
// Settings says what always applies).
func (c *Console) serverFuncs() template.FuncMap {
	return template.FuncMap{
		"usSendingRules": func() bool { return c.Service == nil || c.Service.USSendingRules() },
	}
}
