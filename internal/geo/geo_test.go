package geo_test

import (
	"bytes"
	"compress/gzip"
	"slices"
	"testing"
	"time"

	_ "time/tzdata"

	"github.com/parleyhq/parley/internal/geo"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		zip  string
		want geo.Place
	}{
		{"10001", geo.Place{City: "New York", County: "New York", State: "New York", StateCode: "NY"}},
		{"90210", geo.Place{City: "Beverly Hills", County: "Los Angeles", State: "California", StateCode: "CA"}},
		// First and last ZIP in the table.
		{"00501", geo.Place{City: "Holtsville", County: "Suffolk", State: "New York", StateCode: "NY"}},
		{"99950", geo.Place{City: "Ketchikan", County: "Ketchikan Gateway", State: "Alaska", StateCode: "AK"}},
		// Leading zero, county shared with another state's county name.
		{"02134", geo.Place{City: "Allston", County: "Suffolk", State: "Massachusetts", StateCode: "MA"}},
		{"20500", geo.Place{City: "Washington", County: "District of Columbia", State: "District of Columbia", StateCode: "DC"}},
		{"60614", geo.Place{City: "Chicago", County: "Cook", State: "Illinois", StateCode: "IL"}},
		{"33109", geo.Place{City: "Miami Beach", County: "Miami-Dade", State: "Florida", StateCode: "FL"}},
		// Non-ASCII (UTF-8) county name.
		{"88001", geo.Place{City: "Las Cruces", County: "Doña Ana", State: "New Mexico", StateCode: "NM"}},
		// Duplicated in the source; the first (Hawaii) row wins over "FPO AA".
		{"96860", geo.Place{City: "Jbphh", County: "Honolulu", State: "Hawaii", StateCode: "HI"}},
		{"96863", geo.Place{City: "Mcbh Kaneohe Bay", County: "Honolulu", State: "Hawaii", StateCode: "HI"}},
		// Military codes have no county, state or time zone.
		{"09001", geo.Place{City: "APO AA"}},
		{"96365", geo.Place{City: "APO STA"}},
		{"96960", geo.Place{City: "Marshall Islands", County: "Marshall Islands", State: "Marshall Islands", StateCode: "MH"}},
	}
	for _, tt := range tests {
		got, ok := geo.Lookup(tt.zip)
		got.TimeZone = "" // TestLookupTimeZone covers it
		if !ok || got != tt.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, true", tt.zip, got, ok, tt.want)
		}
	}
}

func TestLookupTimeZone(t *testing.T) {
	tests := []struct{ zip, want string }{
		{"10001", "America/New_York"},
		{"90210", "America/Los_Angeles"},
		{"85001", "America/Phoenix"}, // Arizona keeps standard time
		{"86045", "America/Denver"},  // Tuba City, Navajo Nation (observes DST)
		{"60601", "America/Chicago"},
		{"80202", "America/Denver"},
		{"83702", "America/Boise"},
		{"99501", "America/Anchorage"},
		{"96813", "Pacific/Honolulu"},
		{"48226", "America/Detroit"},
		// Indiana: the northwest corner keeps Chicago time, Indianapolis its own zone.
		{"46320", "America/Chicago"},
		{"46204", "America/Indiana/Indianapolis"},
		{"40202", "America/Kentucky/Louisville"},
		{"97201", "America/Los_Angeles"},
		{"97914", "America/Boise"}, // Ontario, Oregon: Malheur County keeps Mountain time
		{"58501", "America/Chicago"},
		{"57532", "America/Chicago"}, // Fort Pierre, SD: the generator's one override
		{"57701", "America/Denver"},  // Rapid City, SD
		// Leading zero, first ZIP of the table.
		{"00501", "America/New_York"},
		{"96960", "Pacific/Majuro"},
		// Military codes locate a post office, not the recipient: no zone.
		{"09001", ""},
		{"96365", ""},
		{"34002", ""},
	}
	for _, tt := range tests {
		got, ok := geo.Lookup(tt.zip)
		if !ok || got.TimeZone != tt.want {
			t.Errorf("Lookup(%q).TimeZone = %q, %v; want %q, true", tt.zip, got.TimeZone, ok, tt.want)
		}
	}
}

// TestTimeZonesLoad checks every zone in the table is a name time.LoadLocation
// knows. Like cmd/parley, the test links time/tzdata, so it holds on hosts
// without a zoneinfo database too.
func TestTimeZonesLoad(t *testing.T) {
	zones := geo.TimeZones()
	if len(zones) < 10 {
		t.Fatalf("TimeZones() = %v, want the table's zones", zones)
	}
	for _, z := range zones {
		if _, err := time.LoadLocation(z); err != nil || z == "" || z == "UTC" || z == "Local" {
			t.Errorf("zone %q: %v", z, err)
		}
	}
}

func TestLookupMissing(t *testing.T) {
	for _, zip := range []string{
		"00000", "00500", "99951", "99999", // well-formed, absent (before first, after last)
		"00601", // Puerto Rico is not in the GeoNames US data set
		"",
		"1000", "100010", "10001-1234", " 10001", "10001 ", "1000a", "١٠٠٠١",
	} {
		if got, ok := geo.Lookup(zip); ok || got != (geo.Place{}) {
			t.Errorf("Lookup(%q) = %+v, %v; want zero Place, false", zip, got, ok)
		}
	}
}

func TestEmbeddedTable(t *testing.T) {
	n, err := geo.ParseEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if n != 41488 {
		t.Errorf("embedded table has %d ZIP codes, want 41488 (regenerated? update this test)", n)
	}
}

func TestParseTable(t *testing.T) {
	const head = "zip\tcity\tcounty\tstate\tstate_code\ttz\n"
	gz := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	zones, err := geo.ParseTable(gz(head + "#tz\tAmerica/Chicago\tAmerica/New_York\n" +
		"00501\tHoltsville\tSuffolk\tNew York\tNY\t1\n" +
		"09001\tAPO AA\t\t\t\t\n"))
	if err != nil || !slices.Equal(zones, []string{"America/Chicago", "America/New_York"}) {
		t.Fatalf("well-formed table: %v, %v", zones, err)
	}
	for name, table := range map[string]string{
		"old header":      "zip\tcity\tcounty\tstate\tstate_code\n#tz\tA/B\n00501\ta\tb\tc\td\t0\n",
		"no zone line":    head + "00501\ta\tb\tc\td\t0\n",
		"unsorted zones":  head + "#tz\tB/C\tA/B\n00501\ta\tb\tc\td\t0\n",
		"empty zone":      head + "#tz\tA/B\t\n00501\ta\tb\tc\td\t0\n",
		"index too big":   head + "#tz\tA/B\n00501\ta\tb\tc\td\t1\n",
		"index not digit": head + "#tz\tA/B\n00501\ta\tb\tc\td\tx\n",
		"five fields":     head + "#tz\tA/B\n00501\ta\tb\tc\td\n",
		"ZIPs unsorted":   head + "#tz\tA/B\n00502\ta\tb\tc\td\t0\n00501\ta\tb\tc\td\t0\n",
	} {
		if _, err := geo.ParseTable(gz(table)); err == nil {
			t.Errorf("%s: parsed, want an error", name)
		}
	}
}

func TestLookupAllocs(t *testing.T) {
	geo.Lookup("10001")
	if n := testing.AllocsPerRun(100, func() { geo.Lookup("90210") }); n != 0 {
		t.Errorf("Lookup allocates %v times, want 0", n)
	}
}

var sink geo.Place

func BenchmarkLookup(b *testing.B) {
	zips := []string{"10001", "90210", "00501", "99950", "60614", "30301", "00000", "73301"}
	geo.Lookup("10001") // load outside the timed loop
	i := 0
	for b.Loop() {
		sink, _ = geo.Lookup(zips[i%len(zips)])
		i++
	}
}

// BenchmarkFirstLoad measures what the first Lookup pays: decompressing and
// indexing the embedded table.
func BenchmarkFirstLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := geo.ParseEmbedded(); err != nil {
			b.Fatal(err)
		}
	}
}
