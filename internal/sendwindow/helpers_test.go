package sendwindow_test

import (
	"testing"
	"time"
)

const (
	NY = "America/New_York"
	LA = "America/Los_Angeles"
	CT = "America/Chicago"
	MT = "America/Denver"
)

func mustZone(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

// at parses a local time "2006-01-02 15:04[:05]" in the zone named.
func at(tb testing.TB, zone, s string) time.Time {
	tb.Helper()
	layout := "2006-01-02 15:04"
	if len(s) > len(layout) {
		layout += ":05"
	}
	t, err := time.ParseInLocation(layout, s, mustZone(tb, zone))
	if err != nil {
		tb.Fatal(err)
	}
	return t
}
