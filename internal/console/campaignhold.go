package console

import (
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/service"
)

// holdView puts a campaign's held messages in a marketer's words (D22):
// how many, why (the rule that keeps the window shut now) and until when,
// in the brand's zone, and what can be done about it.
type holdView struct {
	h    *service.CampaignHold
	zone *time.Location
	now  time.Time
}

func newHoldView(h *service.CampaignHold, zone *time.Location, now time.Time) *holdView {
	if h == nil {
		return nil
	}
	return &holdView{h: h, zone: zone, now: now}
}

// Headline: "85 messages held for quiet hours until 08:00 EST, in 3 h 39 min".
func (v *holdView) Headline() string {
	n := plural(v.h.Held, "message", "messages")
	if v.h.Due {
		return fmt.Sprintf("%s were held for the sending window, which has opened: they are going out now.", n)
	}
	return fmt.Sprintf("%s held %s until %s, in %s.", n, v.what(), v.until(), span(v.h.Until.Sub(v.now)))
}

// what names the hold: quiet hours when a US or state rule keeps it.
func (v *holdView) what() string {
	if !v.h.Closed.US && v.h.Closed.State == "" {
		return "for your sending window"
	}
	return "for quiet hours"
}

// Short is the list's version: "85 held for quiet hours until 08:00 EST".
func (v *holdView) Short() string {
	if v.h.Due {
		return fmt.Sprintf("%d held, going out now", v.h.Held)
	}
	return fmt.Sprintf("%d held %s until %s", v.h.Held, v.what(), v.until())
}

// until is the end of the hold in the brand's zone, with the day when it
// is not today there.
func (v *holdView) until() string {
	u, n := v.h.Until.In(v.zone), v.now.In(v.zone)
	if u.Year() == n.Year() && u.YearDay() == n.YearDay() {
		return u.Format("15:04 MST")
	}
	return u.Format("Mon 2 Jan 15:04 MST")
}

// Why names the rules that keep the window shut now.
func (v *holdView) Why() string {
	c := v.h.Closed
	if v.h.Due || !c.Any() {
		return ""
	}
	var rules []string
	if c.Brand {
		rules = append(rules, fmt.Sprintf("your sending window (%s)", dash(v.h.Window.String())))
	}
	if c.US {
		rules = append(rules, fmt.Sprintf("the US quiet-hours rule (texts only %s)", dash(c.USWindow.String())))
	}
	if c.State != "" {
		rules = append(rules, fmt.Sprintf("%s's rule (texts only %s that day)", c.StateName, dash(c.StateWindow.String())))
	}
	return "Why: marketing texts go only inside " + strings.Join(rules, " and ") +
		", in each recipient's own local time, and it is outside that now for the first of them."
}

// Todo says what the operator can do.
func (v *holdView) Todo() string {
	c := v.h.Closed
	switch {
	case v.h.Due || !c.Any():
		return ""
	case c.US || c.State != "":
		return "The US rules apply on top of your sending window, so a wider window does not send sooner. " +
			"They can be turned off only for the whole server, e.g. to test on the simulator: start it with --us-sending-rules=false."
	}
	return "To send sooner, widen the sending window in Settings; held messages keep the time they were given."
}

func dash(w string) string { return strings.Replace(w, "-", "–", 1) }

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// span is a wait for people: "3 h 39 min", "45 min", "2 days 3 h".
func span(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute) // a started minute counts
	if m < 1 {
		m = 1
	}
	days, h, mm := m/(24*60), m/60%24, m%60
	var parts []string
	if days > 0 {
		parts = append(parts, plural(days, "day", "days"))
	}
	if h > 0 {
		parts = append(parts, fmt.Sprintf("%d h", h))
	}
	if mm > 0 && days == 0 {
		parts = append(parts, fmt.Sprintf("%d min", mm))
	}
	if len(parts) == 0 {
		return "1 min"
	}
	return strings.Join(parts, " ")
}
