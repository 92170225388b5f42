package sendwindow

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// ErrNoOpening is returned by NextOpening when the window does not open in
// all the zones together within Horizon: the window and the rules have no
// common hour (a brand window of 22:00–02:00 under the US rules), or the
// zones are too far apart for it (09:00–12:00 in New York and Tokyo). It
// will not open later either, since the rules repeat every week: the caller
// should fail or skip the message rather than hold it.
var ErrNoOpening = errors.New("sendwindow: the sending window never opens in all the recipient's zones")

// ErrNoZone is returned by NextOpening when given no zone.
var ErrNoZone = errors.New("sendwindow: no time zone")

// Horizon is how far ahead NextOpening looks: a week, the period of the
// rules, plus a day so that zones a day apart and a DST change still fit.
const Horizon = 8 * 24 * time.Hour

// NextOpening returns the earliest instant at or after now at which a
// marketing message may be sent to a recipient in all of zones: now itself
// when the window is open now.
//
// The window is open at an instant when, in each zone's local wall-clock
// time and weekday, brand contains the time and, with usRules set, so do the
// US rules for state (a USPS code, see State; "" or a state without rules
// gets the baseline only). The US baseline applies to every recipient when usRules
// is set, in the US or not.
//
// Openings are found exactly (no minute stepping), DST included: a window
// opening at 02:30 on a spring-forward day opens at 03:00, when the clock
// jumps into it; on a fall-back day an opening time in the repeated hour is
// its first occurrence. The result has now's location.
//
// It returns ErrNoOpening when there is no opening within Horizon and
// ErrNoZone when zones is empty.
func NextOpening(now time.Time, zones []*time.Location, state string, brand Window, usRules bool) (time.Time, error) {
	if len(zones) == 0 {
		return time.Time{}, ErrNoZone
	}
	s := schedule{brand: brand}
	if usRules {
		s.rules = usRuleSet()
		s.state = strings.ToUpper(strings.TrimSpace(state))
	}
	if s.openAll(now, zones) {
		return now, nil
	}
	// The set of instants where all zones are open is an intersection of
	// unions of intervals; if it is entered after now, it is entered where
	// one zone's open set is entered. A zone's open set can only be entered
	// where its wall clock reaches a window start or midnight (where the
	// weekday, and with it the rules, change), or where the clock jumps
	// (a DST or other offset change). Collect those instants, then take the
	// first at which every zone is open.
	horizon := now.Add(Horizon)
	var cands []time.Time
	for _, loc := range zones {
		cands = s.entries(cands, now, horizon, loc)
	}
	slices.SortFunc(cands, time.Time.Compare)
	for _, c := range cands {
		if s.openAll(c, zones) {
			return c.In(now.Location()), nil
		}
	}
	return time.Time{}, ErrNoOpening
}

type schedule struct {
	brand Window
	rules *rules // nil without US rules
	state string
}

func (s schedule) openAll(t time.Time, zones []*time.Location) bool {
	for _, loc := range zones {
		lt := t.In(loc)
		tod := TimeOfDay(lt.Hour()*60 + lt.Minute())
		if !s.brand.Contains(tod) {
			return false
		}
		if s.rules != nil && !s.rules.open(s.state, lt.Weekday(), tod) {
			return false
		}
	}
	return true
}

// entries appends the instants in (now, horizon) where loc's open set may
// begin. It walks the zone's periods of constant UTC offset, in each of
// which wall-clock time is instant + offset, so every instant showing a
// given wall-clock time is found, none guessed: time.Date does not say
// which of two instants it picks for a time in a repeated hour.
func (s schedule) entries(dst []time.Time, now, horizon time.Time, loc *time.Location) []time.Time {
	var starts []TimeOfDay
	for t := now; t.Before(horizon); {
		_, off := t.In(loc).Zone()
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || end.After(horizon) {
			end = horizon
		}
		// Wall-clock days overlapping [t, end), as UTC dates.
		offset := time.Duration(off) * time.Second
		first := t.Add(offset).UTC()
		day := time.Date(first.Year(), first.Month(), first.Day(), 0, 0, 0, 0, time.UTC)
		last := end.Add(offset).UTC()
		for ; day.Before(last); day = day.AddDate(0, 0, 1) {
			starts = append(starts[:0], 0, s.brand.Start)
			if s.rules != nil {
				starts = s.rules.starts(starts, s.state, day.Weekday())
			}
			for _, st := range starts {
				c := day.Add(time.Duration(st)*time.Minute - offset)
				if c.After(now) && !c.Before(t) && c.Before(end) {
					dst = append(dst, c)
				}
			}
		}
		if end.Before(horizon) && end.After(now) {
			dst = append(dst, end) // the offset changes here
		}
		t = end
	}
	return dst
}
