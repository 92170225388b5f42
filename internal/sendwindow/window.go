package sendwindow

import (
	"encoding/json"
	"fmt"
)

// TimeOfDay is a wall-clock time in minutes after midnight, 0 (00:00)
// through 1439 (23:59).
type TimeOfDay int

// ParseTimeOfDay parses "HH:MM" on a 24-hour clock, 00:00 through 23:59,
// with exactly two ASCII digits on each side. Midnight as a window's end is
// "00:00", not "24:00".
func ParseTimeOfDay(s string) (TimeOfDay, error) {
	if len(s) != 5 || s[2] != ':' || !isDigit(s[0]) || !isDigit(s[1]) || !isDigit(s[3]) || !isDigit(s[4]) {
		return 0, fmt.Errorf("%q is not a time of day: want HH:MM, 00:00 to 23:59", s)
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 23 || m > 59 {
		return 0, fmt.Errorf("%q is not a time of day: want HH:MM, 00:00 to 23:59", s)
	}
	return TimeOfDay(h*60 + m), nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// String returns the time as "HH:MM".
func (t TimeOfDay) String() string { return fmt.Sprintf("%02d:%02d", int(t)/60, int(t)%60) }

// Window is a daily sending window in local wall-clock time: open from
// Start (included) to End (excluded). When End is before Start the window
// wraps midnight (22:00–02:00 is open late evening and early morning); when
// they are equal it is always open.
//
// Its JSON form is the brand setting `sending_window` of D17:
// {"start": "08:00", "end": "21:00"}.
type Window struct {
	Start, End TimeOfDay
}

// DefaultWindow is the brand sending window when none is set (D17).
var DefaultWindow = Window{Start: 8 * 60, End: 21 * 60}

// WindowError reports an invalid sending window member. Field is "start" or
// "end", so the admin API can name it in a 422 answer.
type WindowError struct {
	Field string
	Err   error
}

func (e *WindowError) Error() string { return "sending window " + e.Field + ": " + e.Err.Error() }
func (e *WindowError) Unwrap() error { return e.Err }

// ParseWindow parses a window's start and end, each "HH:MM". Errors are
// *WindowError naming the member at fault.
func ParseWindow(start, end string) (Window, error) {
	s, err := ParseTimeOfDay(start)
	if err != nil {
		return Window{}, &WindowError{Field: "start", Err: err}
	}
	e, err := ParseTimeOfDay(end)
	if err != nil {
		return Window{}, &WindowError{Field: "end", Err: err}
	}
	return Window{Start: s, End: e}, nil
}

// Contains reports whether the window is open at wall-clock time t.
func (w Window) Contains(t TimeOfDay) bool {
	switch {
	case w.Start == w.End:
		return true
	case w.Start < w.End:
		return w.Start <= t && t < w.End
	default: // wraps midnight
		return t >= w.Start || t < w.End
	}
}

// AlwaysOpen reports whether the window never closes (start = end).
func (w Window) AlwaysOpen() bool { return w.Start == w.End }

// String returns "HH:MM-HH:MM".
func (w Window) String() string { return w.Start.String() + "-" + w.End.String() }

type windowJSON struct {
	Start *string `json:"start"`
	End   *string `json:"end"`
}

// MarshalJSON encodes the window as {"start": "HH:MM", "end": "HH:MM"}.
func (w Window) MarshalJSON() ([]byte, error) {
	s, e := w.Start.String(), w.End.String()
	return json.Marshal(windowJSON{Start: &s, End: &e})
}

// UnmarshalJSON decodes {"start": "HH:MM", "end": "HH:MM"}; both members
// are required. Invalid members are reported as *WindowError.
func (w *Window) UnmarshalJSON(b []byte) error {
	var v windowJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("sending window: want {\"start\": \"HH:MM\", \"end\": \"HH:MM\"}: %w", err)
	}
	if v.Start == nil {
		return &WindowError{Field: "start", Err: fmt.Errorf("missing")}
	}
	if v.End == nil {
		return &WindowError{Field: "end", Err: fmt.Errorf("missing")}
	}
	p, err := ParseWindow(*v.Start, *v.End)
	if err != nil {
		return err
	}
	*w = p
	return nil
}
