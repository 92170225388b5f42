package sendwindow

//go:generate go run ./gen

import (
	"bytes"
	_ "embed"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zones must resolve on hosts without a zoneinfo database (scratch images)

	"github.com/nyaruka/phonenumbers"
)

// DefaultBrandZone is the brand time zone when none is set (D17).
const DefaultBrandZone = "America/New_York"

// Zones returns the time zones a contact may be in, for the sending window
// (D17), trying in order:
//
//  1. zipZone, the IANA zone of the contact's ZIP code, when it names a zone;
//  2. the zones libphonenumber gives the area code (or other prefix) of
//     phoneE164, when it places the number more precisely than its whole
//     country: several when the area code spans zones, and the window must
//     then be open in all of them;
//  3. brandZone, the brand's time_zone setting, or DefaultBrandZone when it
//     is empty or not a zone.
//
// The result is never empty. A prefix that libphonenumber places only at
// country level (a NANP area code it does not know, toll-free 800) is not
// used: for +1 that level lists some 40 zones from Guam to Newfoundland,
// with no common daytime.
func Zones(zipZone, phoneE164, brandZone string) []*time.Location {
	if loc := loadZone(zipZone); loc != nil {
		return []*time.Location{loc}
	}
	if locs := phoneZones(phoneE164); len(locs) > 0 {
		return locs
	}
	if loc := loadZone(brandZone); loc != nil {
		return []*time.Location{loc}
	}
	return []*time.Location{loadZone(DefaultBrandZone)}
}

// zoneCache holds the *time.Location of each name loaded so far (nil for a
// name that is not a zone): time.LoadLocation reads and parses tzdata on
// every call.
var zoneCache sync.Map // string → *time.Location

func loadZone(name string) *time.Location {
	// "" and "Local" would load the host's zone, which says nothing about a
	// contact; "UTC" is a valid zone and allowed.
	if name == "" || name == "Local" {
		return nil
	}
	if v, ok := zoneCache.Load(name); ok {
		return v.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = nil
	}
	zoneCache.Store(name, loc)
	return loc
}

func phoneZones(e164 string) []*time.Location {
	if len(e164) < 3 || e164[0] != '+' {
		return nil
	}
	names, err := phonenumbers.GetTimezonesForPrefix(e164)
	if err != nil || len(names) == 0 || names[0] == phonenumbers.UNKNOWN_TIMEZONE {
		return nil
	}
	if len(names) > 1 {
		if cc := countryCode(e164); cc != "" {
			if whole, err := phonenumbers.GetTimezonesForPrefix("+" + cc); err == nil && slices.Equal(names, whole) {
				return nil // placed at country level only
			}
		}
	}
	locs := make([]*time.Location, 0, len(names))
	for _, n := range names {
		if loc := loadZone(n); loc != nil {
			locs = append(locs, loc)
		}
	}
	return locs
}

// countryCode returns the calling code that e164 starts with, or "".
// Calling codes are prefix-free, so the first known prefix is the code.
func countryCode(e164 string) string {
	for n := 1; n <= 3 && n < len(e164); n++ {
		cc, err := strconv.Atoi(e164[1 : 1+n])
		if err == nil && phonenumbers.GetRegionCodeForCountryCode(cc) != phonenumbers.UNKNOWN_REGION {
			return e164[1 : 1+n]
		}
	}
	return ""
}

//go:embed area_codes.csv
var areaCodesCSV []byte

// areaCodes maps a NANP area code ("214") to its US state ("TX").
var areaCodes = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for line := range bytes.Lines(areaCodesCSV) {
		s := strings.TrimSpace(string(line))
		if s == "" || s[0] == '#' {
			continue
		}
		npa, st, ok := strings.Cut(s, ",")
		if !ok || len(npa) != 3 || len(st) != 2 {
			panic("sendwindow: area_codes.csv: bad line " + strconv.Quote(s))
		}
		m[npa] = st
	}
	return m
})

// State returns the US state whose rules apply to a contact: stateCode (the
// contact's state_code, e.g. from its ZIP) when set, else the state of the
// area code of a +1 phone number, else "" (no state rules; the baseline
// still applies).
//
// The area code is a fallback because numbers move with their owners; it is
// used so that a Texan without a ZIP code is still protected by the Texas
// rules. The area-code table (area_codes.csv) is generated from
// libphonenumber's geocoding data; see ./gen.
func State(stateCode, phoneE164 string) string {
	if s := strings.TrimSpace(stateCode); s != "" {
		return strings.ToUpper(s)
	}
	if len(phoneE164) == 12 && strings.HasPrefix(phoneE164, "+1") {
		return areaCodes()[phoneE164[2:5]]
	}
	return ""
}
