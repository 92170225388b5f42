package main

import (
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"

	"github.com/ringsaturn/tzf"
	tzfrellite "github.com/ringsaturn/tzf-rel-lite"
	pb "github.com/ringsaturn/tzf/gen/go/tzf/v1"
	"google.golang.org/protobuf/proto"
)

// zoner finds the IANA zone of a point in the timezone-boundary-builder
// polygons as reduced by tzf (tzf-rel-lite).
type zoner struct {
	f tzf.F
}

// newZoner loads the polygons. It uses tzf's polygon Finder rather than its
// DefaultFinder, whose tile index answers faster but coarser near borders,
// where ZIPs disagree most; 41k lookups take well under a second either way.
func newZoner() (*zoner, error) {
	var in pb.CompressedTimezones
	if err := proto.Unmarshal(tzfrellite.LiteCompressData, &in); err != nil {
		return nil, fmt.Errorf("tzf data: %w", err)
	}
	f, err := tzf.NewFinderFromCompressed(&in, tzf.SetDropPBTZ)
	if err != nil {
		return nil, fmt.Errorf("tzf data: %w", err)
	}
	log.Printf("tzf data version %s", f.DataVersion())
	return &zoner{f: f}, nil
}

// land returns the land zones containing (lat, lon), sorted. The polygons
// include the oceans' Etc/GMT±N zones, which are no one's local time zone.
func (z *zoner) land(lat, lon float64) []string {
	names, _ := z.f.GetTimezoneNames(lon, lat) // the error only says "none"
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, "Etc/") })
}

// zone returns the land zone containing (lat, lon). timezone-boundary-builder
// extends each country's zones over its territorial waters, so a ZIP centre
// on a shore or an island still falls inside one; a ZIP that falls in none
// (only an ocean's Etc/GMT±N) is an error for a person to look at rather
// than something to guess.
func (z *zoner) zone(lat, lon float64) (string, error) {
	names := z.land(lat, lon)
	switch {
	case len(names) == 0:
		return "", fmt.Errorf("%.4f,%.4f: in no land zone", lat, lon)
	case len(names) > 1:
		// Overlapping (disputed) areas; none is in the US today.
		return "", fmt.Errorf("%.4f,%.4f: in %d zones %v", lat, lon, len(names), names)
	}
	return names[0], nil
}

// assignZones sets tz on every row that has a state. Military APO/FPO rows
// have none and keep tz empty: their coordinates are the post office's,
// wherever in the world the unit is, and say nothing of the recipient.
// Every zone found must be one the ZIP's state plausibly uses (stateZones),
// so a shifted coordinate or a data change that moves a ZIP into a
// neighbouring country or an unexpected zone fails the generation.
func assignZones(z *zoner, rows []row) error {
	var errs []error
	for i := range rows {
		r := &rows[i]
		if r.stateCode == "" {
			continue
		}
		tz, err := z.zone(r.lat, r.lon)
		if err != nil {
			errs = append(errs, fmt.Errorf("ZIP %s (%s, %s): %w", r.zip, r.city, r.stateCode, err))
			continue
		}
		if fix, ok := overrides[r.zip]; ok {
			if fix == tz {
				errs = append(errs, fmt.Errorf("ZIP %s: override %s is now what the data says; drop it", r.zip, fix))
			}
			tz = fix
		}
		if !slices.Contains(stateZones[r.stateCode], tz) {
			errs = append(errs, fmt.Errorf("ZIP %s (%s, %s) at %.4f,%.4f: zone %s not among %s's %v", r.zip, r.city, r.stateCode, r.lat, r.lon, tz, r.stateCode, stateZones[r.stateCode]))
			continue
		}
		r.tz = tz
	}
	return errors.Join(errs...)
}

// overrides corrects the ZIPs where the reduced (lite) polygons put the point
// on the wrong side of a border. They are the ZIPs on which the lite 2025b data
// and tzf's full-precision polygons (tzf-rel 2023d, the newest the Go proxy
// serves; 80 MB, too big to pin for one ZIP) disagreed, each checked by hand.
var overrides = map[string]string{
	// Fort Pierre, Stanley County, SD keeps Central time with Pierre across
	// the Missouri; the simplified Central/Mountain line runs down the river.
	"57532": "America/Chicago",
}

// stateZones lists the zones each state's ZIPs may take.
var stateZones = map[string][]string{
	"AK": {"America/Adak", "America/Anchorage", "America/Juneau", "America/Metlakatla", "America/Nome", "America/Sitka", "America/Yakutat"},
	"AL": {"America/Chicago", "America/New_York"}, // Phenix City and around keep Columbus, GA time
	"AR": {"America/Chicago"},
	"AZ": {"America/Denver", "America/Phoenix"}, // the Navajo Nation observes DST
	"CA": {"America/Los_Angeles"},
	"CO": {"America/Denver"},
	"CT": {"America/New_York"},
	"DC": {"America/New_York"},
	"DE": {"America/New_York"},
	"FL": {"America/Chicago", "America/New_York"},
	"GA": {"America/New_York"},
	"HI": {"Pacific/Honolulu", "Pacific/Wake"}, // Wake Island has a Hawaii ZIP
	"IA": {"America/Chicago"},
	"ID": {"America/Boise", "America/Los_Angeles"},
	"IL": {"America/Chicago"},
	"IN": {"America/Chicago", "America/Indiana/Indianapolis", "America/Indiana/Knox", "America/Indiana/Marengo", "America/Indiana/Petersburg", "America/Indiana/Tell_City", "America/Indiana/Vevay", "America/Indiana/Vincennes", "America/Indiana/Winamac", "America/Kentucky/Louisville", "America/New_York"},
	"KS": {"America/Chicago", "America/Denver"},
	"KY": {"America/Chicago", "America/Kentucky/Louisville", "America/Kentucky/Monticello", "America/New_York"},
	"LA": {"America/Chicago"},
	"MA": {"America/New_York"},
	"MD": {"America/New_York"},
	"ME": {"America/New_York"},
	"MH": {"Pacific/Kwajalein", "Pacific/Majuro"},
	"MI": {"America/Detroit", "America/Menominee"},
	"MN": {"America/Chicago"},
	"MO": {"America/Chicago"},
	"MS": {"America/Chicago"},
	"MT": {"America/Denver"},
	"NC": {"America/New_York"},
	"ND": {"America/Chicago", "America/Denver", "America/North_Dakota/Beulah", "America/North_Dakota/Center", "America/North_Dakota/New_Salem"},
	"NE": {"America/Chicago", "America/Denver"},
	"NH": {"America/New_York"},
	"NJ": {"America/New_York"},
	"NM": {"America/Denver"},
	"NV": {"America/Boise", "America/Denver", "America/Los_Angeles"},
	"NY": {"America/New_York"},
	"OH": {"America/New_York"},
	"OK": {"America/Chicago"},
	"OR": {"America/Boise", "America/Los_Angeles"},
	"PA": {"America/New_York"},
	"RI": {"America/New_York"},
	"SC": {"America/New_York"},
	"SD": {"America/Chicago", "America/Denver"},
	"TN": {"America/Chicago", "America/New_York"},
	"TX": {"America/Chicago", "America/Denver"},
	"UT": {"America/Denver"},
	"VA": {"America/New_York"},
	"VT": {"America/New_York"},
	"WA": {"America/Los_Angeles"},
	"WI": {"America/Chicago"},
	"WV": {"America/New_York"},
	"WY": {"America/Denver"},
}
