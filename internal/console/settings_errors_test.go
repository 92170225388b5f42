package console_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestSettingsErrorsAtOnce: a form with four bad values shows all four at
// once, each next to its field in plain words (no field codes, no
// "IANA"), and saves nothing, not even its good values (issue #32, D17).
func TestSettingsErrorsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	p := w.post("/console/settings", settingsForm("window_start", "25:00", "window_end", "10:00", "time_zone", "Mars/Olympus",
		"cap_max", "0", "cap_hours", "", "send_rate", "fast"))
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "5 values need fixing") {
		t.Fatalf("bad settings: %d, want 422 saying 5 values need fixing\n%s", p.Status, p.Body)
	}
	for field, words := range map[string]string{
		"window_start": "Choose the time of day sending starts",
		"time_zone":    "Choose a time zone from the list.",
		"cap_max":      "Enter how many messages",
		"cap_hours":    "Enter how many hours",
		"send_rate":    "Enter messages per second",
	} {
		if !strings.Contains(p.Body, `<span id="`+field+`-error" class="field-error">`+words) {
			t.Errorf("%s: no plain error %q next to it\n%s", field, words, p.Body)
		}
	}
	if strings.Contains(p.Body, `id="window_end-error"`) {
		t.Errorf("the good end time has an error")
	}
	for _, code := range []string{"sending_window", "frequency_cap", "IANA", "must be"} {
		if strings.Contains(p.Body, code) {
			t.Errorf("the page shows the code %q", code)
		}
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused settings changed the database:\nbefore %s\nafter  %s", before, after)
	}
	// The picker: the US zones first by their names, the brand's selected.
	p = w.get("/console/settings")
	us := strings.Index(p.Body, `<option value="America/New_York" selected>Eastern — New York</option>`)
	world := strings.Index(p.Body, `<option value="Europe/London">`)
	if us < 0 || world < 0 || world < us || !strings.Contains(p.Body, `id="window_start" name="window_start" type="time" value="08:00"`) {
		t.Errorf("settings page: want time inputs and a zone picker with Eastern — New York selected before the world's zones\n%s", p.Body)
	}
}
