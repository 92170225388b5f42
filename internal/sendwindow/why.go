package sendwindow

import (
	"strings"
	"time"
)

// Closed says which rules keep the window shut at an instant for a
// recipient (D22: a held campaign says why): the brand's sending window,
// the US baseline (08:00–21:00) and the recipient's state's rule. More
// than one may be closed at once (at 04:21 all three are).
type Closed struct {
	Brand bool // the brand's sending_window
	US    bool // the US baseline, every recipient
	// State is the USPS code of the state whose own rule is closed ("" when
	// none is), with that rule's window on the day; StateName is its name.
	State       string
	StateName   string
	StateWindow Window
	// USWindow is the baseline's window on the day (08:00–21:00).
	USWindow Window
}

// Any reports whether some rule is closed.
func (c Closed) Any() bool { return c.Brand || c.US || c.State != "" }

// WhyClosed returns the rules that are closed at t in any of zones, with
// the arguments NextOpening takes: NextOpening(t, …) is t exactly when
// WhyClosed(t, …).Any() is false.
func WhyClosed(t time.Time, zones []*time.Location, state string, brand Window, usRules bool) Closed {
	var c Closed
	var r *rules
	if usRules {
		r = usRuleSet()
		state = strings.ToUpper(strings.TrimSpace(state))
	}
	for _, loc := range zones {
		lt := t.In(loc)
		tod := TimeOfDay(lt.Hour()*60 + lt.Minute())
		if !brand.Contains(tod) {
			c.Brand = true
		}
		if r == nil {
			continue
		}
		d := lt.Weekday()
		if !r.base[d].Contains(tod) {
			c.US, c.USWindow = true, r.base[d]
		}
		if s := r.states[state]; s != nil && s[d].set && !s[d].w.Contains(tod) {
			c.State, c.StateName, c.StateWindow = state, StateName(state), s[d].w
		}
	}
	return c
}

// StateName is the name of a state whose rules us_rules.csv lists, else
// the code as it is.
func StateName(code string) string {
	if n, ok := stateNames[code]; ok {
		return n
	}
	return code
}

var stateNames = map[string]string{"FL": "Florida", "OK": "Oklahoma", "MD": "Maryland", "TX": "Texas"}
