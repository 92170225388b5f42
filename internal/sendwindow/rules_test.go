package sendwindow

import (
	"strings"
	"testing"
	"time"
)

// TestUSRulesFile checks the embedded file against D17, day by day.
func TestUSRulesFile(t *testing.T) {
	r, err := parseRules(usRulesCSV)
	if err != nil {
		t.Fatal(err)
	}
	w := func(s, e TimeOfDay) Window { return Window{Start: s * 60, End: e * 60} }
	for d := time.Sunday; d <= time.Saturday; d++ {
		if got, want := r.base[d], w(8, 21); got != want {
			t.Errorf("baseline %v = %v, want %v", d, got, want)
		}
		for _, st := range []string{"FL", "OK", "MD"} {
			if got, want := r.states[st][d], (stateDay{w(8, 20), true}); got != want {
				t.Errorf("%s %v = %v, want %v", st, d, got, want)
			}
		}
		want := w(9, 21)
		if d == time.Sunday {
			want = w(12, 21)
		}
		if got := r.states["TX"][d]; got != (stateDay{want, true}) {
			t.Errorf("TX %v = %v, want %v", d, got, want)
		}
	}
	if got := len(r.states); got != 4 {
		t.Errorf("%d states have rules, want 4 (FL, OK, MD, TX)", got)
	}
}

func TestParseRulesErrors(t *testing.T) {
	base := "state,day,start,end\n" +
		"*,mon,08:00,21:00\n*,tue,08:00,21:00\n*,wed,08:00,21:00\n*,thu,08:00,21:00\n" +
		"*,fri,08:00,21:00\n*,sat,08:00,21:00\n*,sun,08:00,21:00\n"
	if _, err := parseRules([]byte(base)); err != nil {
		t.Fatalf("valid file: %v", err)
	}
	tests := map[string]struct{ data, wantErr string }{
		"header":           {strings.Replace(base, "state,day", "st,day", 1), "header"},
		"missing baseline": {strings.Replace(base, "*,sun,08:00,21:00\n", "", 1), "no * row for Sunday"},
		"duplicate":        {base + "*,mon,09:00,21:00\n", "second row"},
		"duplicate state":  {base + "TX,mon,09:00,21:00\nTX,mon,09:00,21:00\n", "second row"},
		"bad day":          {base + "TX,monday,09:00,21:00\n", `day "monday"`},
		"bad time":         {base + "TX,mon,9:00,21:00\n", "start"},
		"bad state":        {base + "Texas,mon,09:00,21:00\n", `state "Texas"`},
		"lower-case state": {base + "tx,mon,09:00,21:00\n", `state "tx"`},
		"fields":           {base + "TX,mon,09:00\n", "wrong number of fields"},
	}
	for name, tt := range tests {
		_, err := parseRules([]byte(tt.data))
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tt.wantErr)
		}
	}
}
