package console_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/app"
)

// TestSettingsRules: Settings says what always applies on top of the
// brand's window (issue #32, D17): the US quiet hours and the states'
// rules when the server runs with them, else that they are off.
func TestSettingsRules(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		e := newEnv(t, func(c *app.Config) { c.NoUSSendingRules = off })
		p := e.signedIn(t, "admin@a.example").get("/console/settings")
		if !strings.Contains(p.Body, "What always applies") {
			t.Errorf("US rules off=%v: no heading What always applies", off)
		}
		on := []string{"everyone: 08:00 to 21:00", "Florida, Oklahoma and Maryland: 08:00 to 20:00",
			"Texas: 09:00 to 21:00 Monday to Saturday, 12:00 to 21:00 on Sunday"}
		for _, s := range on {
			if strings.Contains(p.Body, s) == off {
				t.Errorf("US rules off=%v: settings page has %q: %v", off, s, !off)
			}
		}
		if strings.Contains(p.Body, "The US quiet-hours rules are off on this server") != off {
			t.Errorf("US rules off=%v: the page does not say so", off)
		}
	}
}
