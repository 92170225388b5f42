package phone

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// NormalizeIn is Normalize for a number that may be written nationally
// (D22, CSV imports): s with a leading "+" is read as Normalize reads it;
// otherwise, after stripping spaces, '-', '.', '(' and ')', it must be
// ASCII digits and is read as a number of region, an ISO 3166-1 alpha-2
// code (its national prefix, or an international prefix, as dialled
// there): 305.876.7787 in US is +13058767787, and so is 1-305-876-7787,
// whose 1 is the country code. The result is held to the same rules as
// Normalize's.
func NormalizeIn(s, region string, m Mode) (e164 string, ok bool) {
	if strings.HasPrefix(s, "+") {
		return Normalize(s, m)
	}
	if len(s) > MaxInputLen || !Region(region) {
		return "", false
	}
	var buf [MaxInputLen]byte
	n := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			buf[n] = c
			n++
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return "", false
		}
	}
	if n == 0 {
		return "", false
	}
	num, err := phonenumbers.Parse(string(buf[:n]), strings.ToUpper(region))
	if err != nil || num.GetExtension() != "" {
		return "", false
	}
	return Normalize(phonenumbers.Format(num, phonenumbers.E164), m)
}

// Region reports whether code is an ISO 3166-1 alpha-2 country code
// (upper case) with a telephone country code: one NormalizeIn can read
// national numbers of.
func Region(code string) bool {
	return len(code) == 2 && code == strings.ToUpper(code) && phonenumbers.GetCountryCodeForRegion(code) != 0
}
