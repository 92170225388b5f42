package geo_test

import (
	"testing"

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
		// Military codes have no county or state.
		{"09001", geo.Place{City: "APO AA"}},
		{"96365", geo.Place{City: "APO STA"}},
		{"96960", geo.Place{City: "Marshall Islands", County: "Marshall Islands", State: "Marshall Islands", StateCode: "MH"}},
	}
	for _, tt := range tests {
		got, ok := geo.Lookup(tt.zip)
		if !ok || got != tt.want {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, true", tt.zip, got, ok, tt.want)
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
