package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"sync"
	"testing"
)

// testZoner loads tzf's polygons once for all tests (about a second).
var testZoner = sync.OnceValues(newZoner)

func zonerT(t *testing.T) *zoner {
	t.Helper()
	z, err := testZoner()
	if err != nil {
		t.Fatal(err)
	}
	return z
}

const sample = "" +
	"US\t90210\tBeverly Hills\tCalifornia\tCA\tLos Angeles\t037\t\t\t34.0901\t-118.4065\t4\n" +
	"US\t09001\tAPO AA\t\t\t\t\t\t\t38.1105\t15.6613\t\n" +
	"US\t57532\tFort Pierre\tSouth Dakota\tSD\tStanley\t117\t\t\t44.3426\t-100.4043\t4\n" +
	"US\t46320\tHammond\tIndiana\tIN\tLake\t089\t\t\t41.6099\t-87.5079\t4\n"

func TestGenerate(t *testing.T) {
	rows, err := parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if err := assignZones(zonerT(t), rows); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	// Zones sorted and indexed; the APO code gets none; Fort Pierre takes
	// its override rather than the lite polygons' America/Denver.
	want := "zip\tcity\tcounty\tstate\tstate_code\ttz\n" +
		"#tz\tAmerica/Chicago\tAmerica/Los_Angeles\n" +
		"09001\tAPO AA\t\t\t\t\n" +
		"46320\tHammond\tLake\tIndiana\tIN\t0\n" +
		"57532\tFort Pierre\tStanley\tSouth Dakota\tSD\t0\n" +
		"90210\tBeverly Hills\tLos Angeles\tCalifornia\tCA\t1\n"
	if string(got) != want {
		t.Errorf("generated:\n%s\nwant:\n%s", got, want)
	}
}

func TestAssignZonesRefuses(t *testing.T) {
	tests := map[string]struct {
		row  row
		want string
	}{
		// A California ZIP whose coordinates are in New York.
		"zone foreign to the state": {row{zip: "90210", stateCode: "CA", lat: 40.75, lon: -73.99}, "not among CA's"},
		// Mid-Atlantic: only the ocean's Etc/GMT+3.
		"open ocean": {row{zip: "10001", stateCode: "NY", lat: 35, lon: -45}, "in no land zone"},
		// An override the data no longer needs (Fort Pierre in Central time).
		"stale override": {row{zip: "57532", stateCode: "SD", lat: 44.3680, lon: -100.3364}, "drop it"},
	}
	for name, tt := range tests {
		rows := []row{tt.row}
		err := assignZones(zonerT(t), rows)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one containing %q", name, err, tt.want)
		}
	}
}
