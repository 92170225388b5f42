package console

import (
	"strings"
	"time"
)

// The zone picker of the Settings page and the zone every page names
// (issue #32): the US zones first by the names marketers use, then the
// world's main zones by city. A brand's zone that is not in the list
// (any IANA name the API took) is offered too, by its IANA name.

// zoneChoice is one option of the picker.
type zoneChoice struct {
	// Name is the IANA name saved; Label is what the picker shows.
	Name, Label string
}

// usZones are the US zones, east to west, with the name of their time.
var usZones = []struct{ Name, Time, City string }{
	{"America/New_York", "Eastern", "New York"},
	{"America/Chicago", "Central", "Chicago"},
	{"America/Denver", "Mountain", "Denver"},
	{"America/Phoenix", "Arizona (Mountain, no daylight saving)", "Phoenix"},
	{"America/Los_Angeles", "Pacific", "Los Angeles"},
	{"America/Anchorage", "Alaska", "Anchorage"},
	{"Pacific/Honolulu", "Hawaii", "Honolulu"},
	{"America/Puerto_Rico", "Atlantic", "Puerto Rico"},
}

// worldZones are the other zones offered, by IANA name.
var worldZones = []string{
	"America/Toronto", "America/Vancouver", "America/Halifax", "America/St_Johns", "America/Mexico_City",
	"America/Bogota", "America/Lima", "America/Santiago", "America/Sao_Paulo", "America/Argentina/Buenos_Aires",
	"Atlantic/Reykjavik", "Europe/London", "Europe/Dublin", "Europe/Lisbon", "Europe/Paris", "Europe/Madrid",
	"Europe/Berlin", "Europe/Amsterdam", "Europe/Rome", "Europe/Stockholm", "Europe/Warsaw", "Europe/Athens",
	"Europe/Helsinki", "Europe/Istanbul", "Europe/Kyiv", "Europe/Moscow", "Africa/Lagos", "Africa/Cairo",
	"Africa/Johannesburg", "Africa/Nairobi", "Asia/Jerusalem", "Asia/Dubai", "Asia/Karachi", "Asia/Kolkata",
	"Asia/Dhaka", "Asia/Bangkok", "Asia/Jakarta", "Asia/Singapore", "Asia/Manila", "Asia/Hong_Kong",
	"Asia/Shanghai", "Asia/Seoul", "Asia/Tokyo", "Australia/Perth", "Australia/Adelaide", "Australia/Brisbane",
	"Australia/Sydney", "Pacific/Auckland", "UTC",
}

// zoneChoices are the picker's options: the US zones, then the world's,
// then current when it is another zone this server knows.
func zoneChoices(current string) (us, world []zoneChoice) {
	found := false
	for _, z := range usZones {
		us = append(us, zoneChoice{Name: z.Name, Label: z.Time + " — " + z.City})
		found = found || z.Name == current
	}
	for _, n := range worldZones {
		world = append(world, zoneChoice{Name: n, Label: cityOf(n) + " (" + n + ")"})
		found = found || n == current
	}
	if !found && current != "" && current != "Local" {
		if _, err := time.LoadLocation(current); err == nil {
			world = append(world, zoneChoice{Name: current, Label: cityOf(current) + " (" + current + ")"})
		}
	}
	return us, world
}

// cityOf is the last part of an IANA name, in words: "America/St_Johns" →
// "St Johns".
func cityOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return strings.ReplaceAll(name, "_", " ")
}

// zoneName names a zone for people: "Eastern Time (America/New_York)" for
// a US zone, else its IANA name.
func zoneName(loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	n := loc.String()
	for _, z := range usZones {
		if z.Name == n {
			t := z.Time
			if i := strings.IndexByte(t, ' '); i >= 0 {
				t = t[:i]
			}
			return t + " Time (" + n + ")"
		}
	}
	return n
}
