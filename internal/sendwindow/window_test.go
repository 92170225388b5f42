package sendwindow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/sendwindow"
)

func TestParseTimeOfDay(t *testing.T) {
	good := map[string]sendwindow.TimeOfDay{"00:00": 0, "08:00": 480, "21:00": 1260, "23:59": 1439, "09:05": 545}
	for s, want := range good {
		got, err := sendwindow.ParseTimeOfDay(s)
		if err != nil || got != want {
			t.Errorf("ParseTimeOfDay(%q) = %v, %v; want %v", s, got, err, want)
		}
		if got.String() != s {
			t.Errorf("%q round-trips as %q", s, got.String())
		}
	}
	for _, s := range []string{"", "8:00", "08:0", "0800", "24:00", "12:60", "-1:00", "ab:cd", "08:00:00", " 08:00", "08:00 ", "08.00", "０８:００", "8am"} {
		if _, err := sendwindow.ParseTimeOfDay(s); err == nil {
			t.Errorf("ParseTimeOfDay(%q): no error", s)
		} else if !strings.Contains(err.Error(), "HH:MM") {
			t.Errorf("ParseTimeOfDay(%q) error %q does not say the format", s, err)
		}
	}
}

func TestParseWindowErrorNamesField(t *testing.T) {
	for _, tt := range []struct{ start, end, field string }{
		{"8:00", "21:00", "start"},
		{"08:00", "24:00", "end"},
		{"x", "y", "start"},
	} {
		_, err := sendwindow.ParseWindow(tt.start, tt.end)
		var we *sendwindow.WindowError
		if !errors.As(err, &we) || we.Field != tt.field {
			t.Errorf("ParseWindow(%q, %q) = %v, want a WindowError on %q", tt.start, tt.end, err, tt.field)
		}
	}
}

func TestWindowContains(t *testing.T) {
	tests := []struct {
		start, end string
		open       []string
		closed     []string
	}{
		{"08:00", "21:00", []string{"08:00", "12:00", "20:59"}, []string{"00:00", "07:59", "21:00", "23:59"}},
		{"22:00", "02:00", []string{"22:00", "23:59", "00:00", "01:59"}, []string{"02:00", "12:00", "21:59"}},
		{"09:00", "09:00", []string{"00:00", "08:59", "09:00", "23:59"}, nil},
		{"00:00", "00:00", []string{"00:00", "12:00", "23:59"}, nil},
		{"08:00", "00:00", []string{"08:00", "23:59"}, []string{"00:00", "07:59"}},
	}
	for _, tt := range tests {
		w := mustWindow(t, tt.start, tt.end)
		for _, s := range tt.open {
			if tod, _ := sendwindow.ParseTimeOfDay(s); !w.Contains(tod) {
				t.Errorf("%v closed at %s, want open", w, s)
			}
		}
		for _, s := range tt.closed {
			if tod, _ := sendwindow.ParseTimeOfDay(s); w.Contains(tod) {
				t.Errorf("%v open at %s, want closed", w, s)
			}
		}
		if got, want := w.AlwaysOpen(), tt.start == tt.end; got != want {
			t.Errorf("%v.AlwaysOpen() = %v", w, got)
		}
	}
}

func TestWindowJSON(t *testing.T) {
	b, err := json.Marshal(sendwindow.DefaultWindow)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"start":"08:00","end":"21:00"}`; got != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	var w sendwindow.Window
	if err := json.Unmarshal([]byte(`{"start":"22:00","end":"02:00"}`), &w); err != nil {
		t.Fatal(err)
	}
	if got, want := w, mustWindow(t, "22:00", "02:00"); got != want {
		t.Errorf("Unmarshal = %v, want %v", got, want)
	}
	for in, field := range map[string]string{
		`{"end":"21:00"}`:                   "start",
		`{"start":"08:00"}`:                 "end",
		`{"start":null,"end":"21:00"}`:      "start",
		`{"start":"08:00","end":"9:00 pm"}`: "end",
	} {
		var w sendwindow.Window
		err := json.Unmarshal([]byte(in), &w)
		var we *sendwindow.WindowError
		if !errors.As(err, &we) || we.Field != field {
			t.Errorf("Unmarshal(%s) = %v, want a WindowError on %q", in, err, field)
		}
	}
	for _, in := range []string{`"08:00-21:00"`, `{"start":8,"end":21}`, `[]`} {
		var w sendwindow.Window
		if err := json.Unmarshal([]byte(in), &w); err == nil {
			t.Errorf("Unmarshal(%s): no error", in)
		}
	}
}

func mustWindow(tb testing.TB, start, end string) sendwindow.Window {
	tb.Helper()
	w, err := sendwindow.ParseWindow(start, end)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}
