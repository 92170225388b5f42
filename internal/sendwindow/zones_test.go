package sendwindow_test

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/sendwindow"
)

func TestZones(t *testing.T) {
	tests := []struct {
		name                      string
		zipZone, phone, brandZone string
		want                      []string
	}{
		{"ZIP zone wins", MT, "+12125550100", LA, []string{MT}},
		{"Unknown ZIP zone falls to the phone", "Mars/Olympus", "+12125550100", LA, []string{NY}},
		{"Local is not a contact's zone", "Local", "+13105550100", "", []string{LA}},
		{"Area code zone", "", "+13105550100", NY, []string{LA}},
		{"Area code spanning Central and Mountain", "", "+16052000100", NY, []string{MT, "America/North_Dakota/Center"}},
		{"Alaska: two zones", "", "+19072345678", NY, []string{"America/Adak", "America/Anchorage"}},
		{"Non-NANP number", "", "+442071234567", NY, []string{"Europe/London"}},
		{"Unknown area code: brand zone", "", "+15005550100", CT, []string{CT}},
		{"Toll-free: brand zone", "", "+18005550100", CT, []string{CT}},
		{"No phone: brand zone", "", "", LA, []string{LA}},
		{"Garbage phone: brand zone", "", "12125550100", LA, []string{LA}},
		{"Unknown calling code: brand zone", "", "+999123456", LA, []string{LA}},
		{"Nothing: New York", "", "", "", []string{NY}},
		{"Bad brand zone: New York", "", "", "Not/AZone", []string{NY}},
		{"UTC is a zone", "UTC", "+13105550100", "", []string{"UTC"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sendwindow.Zones(tt.zipZone, tt.phone, tt.brandZone)
			if g, w := fmt.Sprint(got), fmt.Sprint(tt.want); g != w {
				t.Errorf("Zones(%q, %q, %q) = %v, want %v", tt.zipZone, tt.phone, tt.brandZone, g, w)
			}
		})
	}
}

func TestState(t *testing.T) {
	tests := []struct{ stateCode, phone, want string }{
		{"TX", "+13105550100", "TX"}, // the contact's state wins over the area code
		{"fl", "", "FL"},
		{" md ", "", "MD"},
		{"", "+12145550100", "TX"},
		{"", "+13055550100", "FL"},
		{"", "+14055550100", "OK"},
		{"", "+14105550100", "MD"},
		{"", "+12125550100", "NY"},
		{"", "+12025550100", "DC"},
		{"", "+12065550100", "WA"},
		{"", "+19155550100", "TX"},
		{"", "+14165550100", ""}, // Toronto
		{"", "+18005550100", ""}, // toll-free
		{"", "+442071234567", ""},
		{"", "", ""},
		{"", "+1214555010", ""}, // too short
	}
	for _, tt := range tests {
		if got := sendwindow.State(tt.stateCode, tt.phone); got != tt.want {
			t.Errorf("State(%q, %q) = %q, want %q", tt.stateCode, tt.phone, got, tt.want)
		}
	}
}

// TestZonesThenNextOpening runs the two together as the caller will: a
// Texan without a ZIP is held until Sunday noon.
func TestZonesThenNextOpening(t *testing.T) {
	phone := "+12145550100"
	zones := sendwindow.Zones("", phone, "")
	now := at(t, CT, "2026-05-10 10:00") // Sunday
	got, err := sendwindow.NextOpening(now, zones, sendwindow.State("", phone), sendwindow.DefaultWindow, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := at(t, CT, "2026-05-10 12:00"); !got.Equal(want) {
		t.Errorf("NextOpening = %v, want %v", got, want)
	}
}

func BenchmarkZones(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = sendwindow.Zones("", "+16052000100", "")
	}
}
