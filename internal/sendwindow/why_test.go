package sendwindow_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/sendwindow"
)

// TestWhyClosed: which rule keeps the window shut (D22: a held campaign
// says why), for the same inputs as NextOpening; closed exactly when
// NextOpening is later than now.
func TestWhyClosed(t *testing.T) {
	day := mustWindow(t, "08:00", "21:00")
	always := mustWindow(t, "00:00", "00:00")
	cases := []struct {
		name     string
		now      time.Time
		zones    []string
		state    string
		brand    sendwindow.Window
		us       bool
		brandOff bool // want Brand closed
		usOff    bool // want US closed
		stateOff string
	}{
		{"04:21 New York: brand window and US quiet hours", at(t, NY, "2026-05-04 04:21"), []string{NY}, "NY", day, true, true, true, ""},
		{"04:21 always-open brand window: the US rule alone", at(t, NY, "2026-05-04 04:21"), []string{NY}, "NY", always, true, false, true, ""},
		{"04:21 US rules off: the brand window alone", at(t, NY, "2026-05-04 04:21"), []string{NY}, "NY", day, false, true, false, ""},
		{"04:21 always open, US rules off: open", at(t, NY, "2026-05-04 04:21"), []string{NY}, "NY", always, false, false, false, ""},
		{"Florida 20:30: its state rule", at(t, NY, "2026-05-04 20:30"), []string{NY}, "FL", day, true, false, false, "FL"},
		{"Texas Sunday 10:00: its state rule", at(t, CT, "2026-05-03 10:00"), []string{CT}, "TX", day, true, false, false, "TX"},
		{"Texas Monday 10:00: open", at(t, CT, "2026-05-04 10:00"), []string{CT}, "TX", day, true, false, false, ""},
		{"Brand 10:00-18:00 at 09:00: the brand window", at(t, NY, "2026-05-04 09:00"), []string{NY}, "", mustWindow(t, "10:00", "18:00"), true, true, false, ""},
		{"Closed in one of two zones", at(t, NY, "2026-05-04 08:30"), []string{NY, LA}, "", always, true, false, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var zones []*time.Location
			for _, z := range c.zones {
				zones = append(zones, mustZone(t, z))
			}
			got := sendwindow.WhyClosed(c.now, zones, c.state, c.brand, c.us)
			if got.Brand != c.brandOff || got.US != c.usOff || got.State != c.stateOff {
				t.Errorf("WhyClosed = %+v; want brand %v, US %v, state %q", got, c.brandOff, c.usOff, c.stateOff)
			}
			next, err := sendwindow.NextOpening(c.now, zones, c.state, c.brand, c.us)
			if err != nil {
				t.Fatal(err)
			}
			if open := next.Equal(c.now); open == got.Any() {
				t.Errorf("NextOpening %v at %v, but WhyClosed says closed=%v", next, c.now, got.Any())
			}
			if c.stateOff != "" && (got.StateName == c.stateOff || got.StateWindow.String() == "") {
				t.Errorf("state rule %+v: want its name and window", got)
			}
		})
	}
}
