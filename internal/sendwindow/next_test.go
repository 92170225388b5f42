package sendwindow_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/sendwindow"
)

func TestNextOpening(t *testing.T) {
	def := sendwindow.DefaultWindow
	// Reference dates: 2026-05-04 is a Monday, 2026-05-09 a Saturday,
	// 2026-05-10 a Sunday.
	tests := []struct {
		name    string
		now     time.Time
		zones   []string
		state   string
		brand   sendwindow.Window
		usRules bool
		want    time.Time // zero: ErrNoOpening
	}{
		{"California 06:00 opens 08:00 PT", at(t, LA, "2026-05-04 06:00"), []string{LA}, "CA", def, true, at(t, LA, "2026-05-04 08:00")},
		{"Open now returns now to the second", at(t, LA, "2026-05-04 12:34:56"), []string{LA}, "CA", def, true, at(t, LA, "2026-05-04 12:34:56")},
		{"Start included", at(t, LA, "2026-05-04 08:00"), []string{LA}, "CA", def, true, at(t, LA, "2026-05-04 08:00")},
		{"Seconds before start wait", at(t, LA, "2026-05-04 07:59:59"), []string{LA}, "CA", def, true, at(t, LA, "2026-05-04 08:00")},
		{"Last minute open", at(t, LA, "2026-05-04 20:59:59"), []string{LA}, "CA", def, true, at(t, LA, "2026-05-04 20:59:59")},
		{"End excluded", at(t, LA, "2026-05-04 21:00"), []string{LA}, "CA", def, true, at(t, LA, "2026-05-05 08:00")},
		{"Florida 20:30 waits for next day 08:00", at(t, NY, "2026-05-04 20:30"), []string{NY}, "FL", def, true, at(t, NY, "2026-05-05 08:00")},
		{"Florida 19:59 open", at(t, NY, "2026-05-04 19:59"), []string{NY}, "FL", def, true, at(t, NY, "2026-05-04 19:59")},
		{"Oklahoma 20:00 closed", at(t, CT, "2026-05-04 20:00"), []string{CT}, "OK", def, true, at(t, CT, "2026-05-05 08:00")},
		{"Maryland 20:00 closed", at(t, NY, "2026-05-04 20:00"), []string{NY}, "MD", def, true, at(t, NY, "2026-05-05 08:00")},
		{"New York 20:30 open", at(t, NY, "2026-05-04 20:30"), []string{NY}, "NY", def, true, at(t, NY, "2026-05-04 20:30")},
		{"Lower-case state", at(t, NY, "2026-05-04 20:30"), []string{NY}, "fl", def, true, at(t, NY, "2026-05-05 08:00")},
		{"Texas Sunday 10:00 opens 12:00", at(t, CT, "2026-05-10 10:00"), []string{CT}, "TX", def, true, at(t, CT, "2026-05-10 12:00")},
		{"Texas Saturday 08:30 opens 09:00", at(t, CT, "2026-05-09 08:30"), []string{CT}, "TX", def, true, at(t, CT, "2026-05-09 09:00")},
		{"Texas Saturday 21:00 waits for Sunday noon", at(t, CT, "2026-05-09 21:00"), []string{CT}, "TX", def, true, at(t, CT, "2026-05-10 12:00")},
		{"Texas Monday 08:30 opens 09:00", at(t, CT, "2026-05-04 08:30"), []string{CT}, "TX", def, true, at(t, CT, "2026-05-04 09:00")},
		// The weekday is the recipient's: 2026-05-10 05:00 UTC is still
		// Saturday 2026-05-09 22:00 in Los Angeles.
		{"Weekday in local time", at(t, "UTC", "2026-05-10 05:00"), []string{LA}, "TX", def, true, at(t, LA, "2026-05-10 12:00")},
		{"No state: baseline", at(t, NY, "2026-05-04 07:00"), []string{NY}, "", def, true, at(t, NY, "2026-05-04 08:00")},
		{"Outside the US: baseline", at(t, "Europe/Paris", "2026-05-04 21:30"), []string{"Europe/Paris"}, "", def, true, at(t, "Europe/Paris", "2026-05-05 08:00")},
		{"Brand window narrower", at(t, NY, "2026-05-04 08:30"), []string{NY}, "NY", mustWindow(t, "09:00", "17:00"), true, at(t, NY, "2026-05-04 09:00")},
		{"Brand window 10:00-10:00 always open", at(t, NY, "2026-05-04 03:00"), []string{NY}, "", mustWindow(t, "10:00", "10:00"), false, at(t, NY, "2026-05-04 03:00")},
		{"Always-open brand still under US rules", at(t, NY, "2026-05-04 03:00"), []string{NY}, "", mustWindow(t, "00:00", "00:00"), true, at(t, NY, "2026-05-04 08:00")},
		{"US rules off: Florida 20:30 open", at(t, NY, "2026-05-04 20:30"), []string{NY}, "FL", def, false, at(t, NY, "2026-05-04 20:30")},
		{"US rules off: Texas Sunday 10:00 open", at(t, CT, "2026-05-10 10:00"), []string{CT}, "TX", def, false, at(t, CT, "2026-05-10 10:00")},
		{"US rules off: brand window only", at(t, NY, "2026-05-04 06:00"), []string{NY}, "", mustWindow(t, "07:00", "23:00"), false, at(t, NY, "2026-05-04 07:00")},
		{"Wrapping window open late", at(t, NY, "2026-05-04 23:30"), []string{NY}, "", mustWindow(t, "22:00", "02:00"), false, at(t, NY, "2026-05-04 23:30")},
		{"Wrapping window open after midnight", at(t, NY, "2026-05-04 01:59"), []string{NY}, "", mustWindow(t, "22:00", "02:00"), false, at(t, NY, "2026-05-04 01:59")},
		{"Wrapping window closed at its end", at(t, NY, "2026-05-04 02:00"), []string{NY}, "", mustWindow(t, "22:00", "02:00"), false, at(t, NY, "2026-05-04 22:00")},
		{"Wrapping window under US rules never opens", at(t, NY, "2026-05-04 12:00"), []string{NY}, "", mustWindow(t, "22:00", "02:00"), true, time.Time{}},
		{"Wrapping window overlapping US rules", at(t, NY, "2026-05-04 03:00"), []string{NY}, "", mustWindow(t, "20:00", "10:00"), true, at(t, NY, "2026-05-04 08:00")},
		{"Wrapping window overlapping US rules, evening", at(t, NY, "2026-05-04 10:00"), []string{NY}, "", mustWindow(t, "20:00", "10:00"), true, at(t, NY, "2026-05-04 20:00")},
		// +1 605 200: Central and Mountain. Open when 08:00 has come in
		// Denver, i.e. 09:00 in Chicago; closed when 21:00 comes in Chicago.
		{"Central and Mountain open together", at(t, CT, "2026-05-04 08:30"), []string{MT, CT}, "SD", def, true, at(t, CT, "2026-05-04 09:00")},
		{"Central and Mountain closed by Central", at(t, MT, "2026-05-04 20:30"), []string{MT, CT}, "SD", def, true, at(t, CT, "2026-05-05 09:00")},
		{"Zone order does not matter", at(t, MT, "2026-05-04 20:30"), []string{CT, MT}, "SD", def, true, at(t, CT, "2026-05-05 09:00")},
		{"Zones with no common hour", at(t, NY, "2026-05-04 12:00"), []string{NY, "Asia/Tokyo"}, "", mustWindow(t, "09:00", "12:00"), false, time.Time{}},
		{"Zones a day apart", at(t, "Pacific/Honolulu", "2026-05-04 12:00"), []string{"Pacific/Honolulu", "Pacific/Kiritimati"}, "", mustWindow(t, "08:00", "21:00"), false, at(t, "Pacific/Honolulu", "2026-05-04 12:00")},
		{"Half-hour zone", at(t, "Asia/Kolkata", "2026-05-04 07:00"), []string{"Asia/Kolkata", "UTC"}, "", def, true, at(t, "Asia/Kolkata", "2026-05-04 13:30")},
		// DST in New York: 2026-03-08 02:00 EST → 03:00 EDT, 2026-11-01
		// 02:00 EDT → 01:00 EST.
		{"Spring forward: 08:00 EDT", at(t, NY, "2026-03-07 22:00"), []string{NY}, "NY", def, true, at(t, "UTC", "2026-03-08 12:00")},
		{"Spring forward: window opening in the gap opens at 03:00", at(t, NY, "2026-03-08 01:00"), []string{NY}, "", mustWindow(t, "02:30", "21:00"), false, at(t, "UTC", "2026-03-08 07:00")},
		{"Fall back: 08:00 EST", at(t, NY, "2026-10-31 22:00"), []string{NY}, "NY", def, true, at(t, "UTC", "2026-11-01 13:00")},
		{"Fall back: opening in the repeated hour is its first", at(t, NY, "2026-11-01 00:00"), []string{NY}, "", mustWindow(t, "01:30", "21:00"), false, at(t, "UTC", "2026-11-01 05:30")},
		// A window ending at 01:30 closes at 01:30 EDT, then reopens when
		// the clock goes back to 01:00 EST.
		{"Fall back: window reopens in the repeated hour", at(t, "UTC", "2026-11-01 05:45"), []string{NY}, "", mustWindow(t, "22:00", "01:30"), false, at(t, "UTC", "2026-11-01 06:00")},
		{"Fall back: open at 01:15 EST", at(t, "UTC", "2026-11-01 06:15"), []string{NY}, "", mustWindow(t, "22:00", "01:30"), false, at(t, "UTC", "2026-11-01 06:15")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var zones []*time.Location
			for _, z := range tt.zones {
				zones = append(zones, mustZone(t, z))
			}
			got, err := sendwindow.NextOpening(tt.now, zones, tt.state, tt.brand, tt.usRules)
			if tt.want.IsZero() {
				if !errors.Is(err, sendwindow.ErrNoOpening) {
					t.Fatalf("NextOpening = %v, %v; want ErrNoOpening", got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("NextOpening: %v", err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("NextOpening(%v) = %v, want %v", tt.now, got, tt.want)
			}
			if got.Location() != tt.now.Location() {
				t.Errorf("result in %v, want now's location %v", got.Location(), tt.now.Location())
			}
		})
	}
}

func TestNextOpeningNoZone(t *testing.T) {
	_, err := sendwindow.NextOpening(time.Now(), nil, "", sendwindow.DefaultWindow, true)
	if !errors.Is(err, sendwindow.ErrNoZone) {
		t.Errorf("err = %v, want ErrNoZone", err)
	}
}

// d17 is the D17 rule table written out independently of us_rules.csv, so
// that the comparison below also checks the data file.
func d17(state string, wd time.Weekday, tod int) bool {
	if tod < 8*60 || tod >= 21*60 {
		return false
	}
	switch state {
	case "FL", "OK", "MD":
		return tod < 20*60
	case "TX":
		if wd == time.Sunday {
			return tod >= 12*60
		}
		return tod >= 9*60
	}
	return true
}

// reference is NextOpening by brute force: every minute for eight days.
func reference(now time.Time, zones []*time.Location, state string, brand sendwindow.Window, usRules bool) (time.Time, bool) {
	open := func(t time.Time) bool {
		for _, loc := range zones {
			lt := t.In(loc)
			tod := lt.Hour()*60 + lt.Minute()
			if !brand.Contains(sendwindow.TimeOfDay(tod)) {
				return false
			}
			if usRules && !d17(state, lt.Weekday(), tod) {
				return false
			}
		}
		return true
	}
	if open(now) {
		return now, true
	}
	t0 := now.Truncate(time.Minute)
	for k := 1; k < 8*24*60; k++ {
		if c := t0.Add(time.Duration(k) * time.Minute); open(c) {
			return c, true
		}
	}
	return time.Time{}, false
}

// TestNextOpeningAgainstReference compares NextOpening with the brute-force
// reference on random instants, concentrated around DST changes, zone sets
// and windows.
func TestNextOpeningAgainstReference(t *testing.T) {
	zoneNames := []string{NY, CT, MT, LA, "America/Phoenix", "America/Anchorage", "Pacific/Honolulu",
		"Europe/London", "Australia/Lord_Howe", "Asia/Kathmandu", "Asia/Tokyo", "UTC"}
	anchors := []time.Time{
		at(t, "UTC", "2026-03-08 00:00"), // US spring forward
		at(t, "UTC", "2026-10-31 12:00"), // US fall back
		at(t, "UTC", "2026-03-29 00:00"), // EU spring forward
		at(t, "UTC", "2026-04-04 12:00"), // Lord Howe, 30-minute shift
		at(t, "UTC", "2026-06-15 00:00"),
	}
	states := []string{"", "TX", "FL", "OK", "MD", "CA"}
	n := 300
	if testing.Short() {
		n = 60
	}
	rng := rand.New(rand.NewPCG(21, 17))
	for i := range n {
		now := anchors[rng.IntN(len(anchors))].Add(time.Duration(rng.Int64N(int64(72 * time.Hour))))
		if rng.IntN(2) == 0 {
			now = now.Truncate(time.Minute)
		}
		var zones []*time.Location
		for range 1 + rng.IntN(3) {
			zones = append(zones, mustZone(t, zoneNames[rng.IntN(len(zoneNames))]))
		}
		brand := sendwindow.Window{Start: sendwindow.TimeOfDay(rng.IntN(48) * 30), End: sendwindow.TimeOfDay(rng.IntN(48) * 30)}
		if rng.IntN(4) == 0 {
			brand = sendwindow.DefaultWindow
		}
		state := states[rng.IntN(len(states))]
		usRules := rng.IntN(3) > 0
		name := fmt.Sprintf("%d/%s/%v/%v/%s/%v", i, now.UTC().Format(time.RFC3339), zones, brand, state, usRules)
		got, err := sendwindow.NextOpening(now, zones, state, brand, usRules)
		want, ok := reference(now, zones, state, brand, usRules)
		switch {
		case !ok && !errors.Is(err, sendwindow.ErrNoOpening):
			t.Errorf("%s: NextOpening = %v, %v; reference finds none", name, got, err)
		case ok && err != nil:
			t.Errorf("%s: NextOpening: %v; reference %v", name, err, want)
		case ok && !got.Equal(want):
			t.Errorf("%s: NextOpening = %v, reference %v", name, got.UTC(), want.UTC())
		}
	}
}

func BenchmarkNextOpening(b *testing.B) {
	ny, ct, mt := mustZone(b, NY), mustZone(b, CT), mustZone(b, MT)
	cases := []struct {
		name  string
		now   time.Time
		zones []*time.Location
		state string
	}{
		{"OpenNow", at(b, NY, "2026-05-04 12:00"), []*time.Location{ny}, "NY"},
		{"ClosedTexasSaturdayNight", at(b, CT, "2026-05-09 22:00"), []*time.Location{ct}, "TX"},
		{"ClosedTwoZones", at(b, MT, "2026-05-04 20:30"), []*time.Location{mt, ct}, "SD"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sendwindow.NextOpening(c.now, c.zones, c.state, sendwindow.DefaultWindow, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("NeverOpens", func(b *testing.B) {
		w := sendwindow.Window{Start: 22 * 60, End: 2 * 60}
		now := at(b, NY, "2026-05-04 12:00")
		for b.Loop() {
			_, _ = sendwindow.NextOpening(now, []*time.Location{ny}, "", w, true)
		}
	})
}
