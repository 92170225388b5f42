package sendwindow

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

//go:embed us_rules.csv
var usRulesCSV []byte

// usRuleSet is the embedded rule set, parsed on first use. The file is
// checked by the tests, so a parse failure here is a build defect.
var usRuleSet = sync.OnceValue(func() *rules {
	r, err := parseRules(usRulesCSV)
	if err != nil {
		panic("sendwindow: us_rules.csv: " + err.Error())
	}
	return r
})

// rules is a parsed rule file: a baseline window for each weekday, and for
// some states a further window on some weekdays.
type rules struct {
	base   [7]Window
	states map[string]*[7]stateDay
}

type stateDay struct {
	w   Window
	set bool
}

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// parseRules reads the rule file format described in us_rules.csv.
func parseRules(data []byte) (*rules, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.Comment = '#'
	cr.FieldsPerRecord = 4
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if fmt.Sprint(head) != "[state day start end]" {
		return nil, fmt.Errorf("header is %q, want state,day,start,end", head)
	}
	r := &rules{states: map[string]*[7]stateDay{}}
	var haveBase [7]bool
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		state, dayName := rec[0], rec[1]
		day, ok := dayNames[dayName]
		if !ok {
			return nil, fmt.Errorf("line %d: day %q: want mon, tue, wed, thu, fri, sat or sun", line, dayName)
		}
		w, err := ParseWindow(rec[2], rec[3])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case state == "*":
			if haveBase[day] {
				return nil, fmt.Errorf("line %d: second row for *,%s", line, dayName)
			}
			r.base[day], haveBase[day] = w, true
		case len(state) == 2 && isUpper(state[0]) && isUpper(state[1]):
			days := r.states[state]
			if days == nil {
				days = new([7]stateDay)
				r.states[state] = days
			}
			if days[day].set {
				return nil, fmt.Errorf("line %d: second row for %s,%s", line, state, dayName)
			}
			days[day] = stateDay{w: w, set: true}
		default:
			return nil, fmt.Errorf("line %d: state %q: want a two-letter USPS code or *", line, state)
		}
	}
	for d, ok := range haveBase {
		if !ok {
			return nil, fmt.Errorf("no * row for %s", time.Weekday(d))
		}
	}
	return r, nil
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// open reports whether the rules allow sending at wall-clock time t on day
// d in the given state ("" or a state without rules: the baseline only).
func (r *rules) open(state string, d time.Weekday, t TimeOfDay) bool {
	if !r.base[d].Contains(t) {
		return false
	}
	if s := r.states[state]; s != nil && s[d].set {
		return s[d].w.Contains(t)
	}
	return true
}

// starts appends the times on day d at which a rule window for the state
// opens: where the open set can begin, apart from midnight and DST shifts.
func (r *rules) starts(dst []TimeOfDay, state string, d time.Weekday) []TimeOfDay {
	dst = append(dst, r.base[d].Start)
	if s := r.states[state]; s != nil && s[d].set {
		dst = append(dst, s[d].w.Start)
	}
	return dst
}
