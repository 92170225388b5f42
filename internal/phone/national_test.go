package phone_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/phone"
)

// D22: a number without "+" is a national number of the import's default
// country, separators stripped; a 1 before ten US digits is the country code.
func TestNormalizeInNational(t *testing.T) {
	for _, c := range []struct{ in, region, want string }{
		{"305.876.7787", "US", "+13058767787"},
		{"(212) 555-0100", "US", "+12125550100"},
		{"1-212-555-0100", "US", "+12125550100"},
		{"12125550100", "US", "+12125550100"},
		{"+44 20 7946 0958", "US", "+442079460958"},
		{"020 7946 0958", "GB", "+442079460958"},
		{"030 901820", "DE", "+4930901820"},
		{"12345", "GB", ""},            // too short for a British number
		{"305.876.7787", "ZZ", ""},     // no such country
		{"305.876.7787", "us", ""},     // codes are upper case
		{"305-876-7787 x12", "US", ""}, // no extensions
		{"3058767787", "", ""},
		{"", "US", ""},
	} {
		got, ok := phone.NormalizeIn(c.in, c.region, phone.Possible)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("NormalizeIn(%q, %q) = %q, %v; want %q", c.in, c.region, got, ok, c.want)
		}
	}
}
