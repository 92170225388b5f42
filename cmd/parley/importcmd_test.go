package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

const testSecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// importEnv is the environment of admin commands on a fresh database:
// SQLite, or PostgreSQL when postgres is set.
func importEnv(t *testing.T, postgres bool) (map[string]string, func(string) string) {
	t.Helper()
	dir := t.TempDir()
	m := map[string]string{"PARLEY_DATA_DIR": dir, "PARLEY_SECRET_KEY": testSecretKey,
		"PARLEY_DB": "sqlite:" + filepath.Join(dir, "parley.db")}
	if postgres {
		m["PARLEY_DB"] = apitest.PostgresURL(t)
	}
	return m, env(m)
}

// mustRun runs a command that must succeed and returns its stdout.
func mustRun(t *testing.T, e func(string) string, args ...string) string {
	t.Helper()
	out, err := runCmd(t, e, args...)
	if err != nil {
		t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// newBrandWithFields creates a brand with one custom data field of every
// type, in the same order each time, and returns its id.
func newBrandWithFields(t *testing.T, e func(string) string, name string) string {
	t.Helper()
	out := mustRun(t, e, "brand", "create", "--name", name, "--phone", "+14155550100", "--json")
	var b struct{ ID int64 }
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(b.ID, 10)
	for _, f := range [][]string{
		{"--name", "Loyalty Tier", "--type", "STRING", "--enum", "gold,silver"},
		{"--name", "Tags", "--type", "LIST", "--subtype", "STRING", "--append"},
		{"--name", "Visits", "--type", "INTEGER"},
		{"--name", "Score", "--type", "FLOAT"},
		{"--name", "VIP", "--type", "BOOLEAN"},
		{"--name", "Joined", "--type", "DATE"},
		{"--name", "Lucky", "--type", "LIST", "--subtype", "INTEGER"},
	} {
		mustRun(t, e, append([]string{"field", "create", "--brand", id}, f...)...)
	}
	return id
}

// progressLine is a progress line of import off a terminal.
var progressLine = regexp.MustCompile(`^import (\d+): (\d+)/(\d+) rows \((\d+)%\), \d+ rows/s, ETA \S+$`)

// TestImportCommand: parley import runs an import on the database with
// progress lines (not on a terminal), reports rejected rows, writes them
// with --errors, and updates with --on-duplicate update (issue #7).
func TestImportCommand(t *testing.T) {
	_, e := importEnv(t, false)
	id := newBrandWithFields(t, e, "Acme")
	dir := t.TempDir()
	file := filepath.Join(dir, "users.csv")
	os.WriteFile(file, []byte("phone_number;first_name;email_address;custom_loyalty_tier\r\n"+
		"+14152000001;Ann;;gold\r\n+14152000002;Bob;bob@;\r\n+14152000003;Cy;;\r\n+14152000001;Ann again;;\r\n+14152000004;Di;;\r\n"), 0o600)

	var out, errOut bytes.Buffer
	errFile := filepath.Join(dir, "rejected.csv")
	if err := run(t.Context(), []string{"import", file, "--brand", id, "--errors", errFile}, e, &out, &errOut); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	if got, want := out.String(), "Import 1 completed: 5 rows: 3 created, 0 updated, 0 skipped, 2 failed\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	var lines []string
	prev := int64(-1)
	for _, l := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
		m := progressLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		lines = append(lines, l)
		done, _ := strconv.ParseInt(m[2], 10, 64)
		if m[1] != "1" || m[3] != "5" || done < prev {
			t.Errorf("progress line %q: want import 1 of 5 rows, never going back", l)
		}
		prev = done
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "import 1: 0/5 rows (0%)") || !strings.HasPrefix(lines[len(lines)-1], "import 1: 5/5 rows (100%)") {
		t.Errorf("progress lines %q, want plain lines from 0/5 to 5/5 (not a terminal: no bar)\nstderr:\n%s", lines, errOut.String())
	}
	if strings.Contains(errOut.String(), "\r") {
		t.Error("progress off a terminal redraws with \\r")
	}
	for _, want := range []string{"line 3: email_address: must be an email address", "line 5: phone_number: Duplicate entry for '+14152000001'"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not report %q:\n%s", want, errOut.String())
		}
	}
	rejected, _ := os.ReadFile(errFile)
	// D22: the rejected rows with their cells and an errors column.
	if !strings.HasPrefix(string(rejected), "phone_number;first_name;email_address;custom_loyalty_tier;errors\n+14152000002;Bob;bob@;;email_address: must be") ||
		!strings.Contains(string(rejected), "\n+14152000001;Ann again;;;Duplicate entry for '+14152000001'") {
		t.Errorf("--errors file:\n%s", rejected)
	}

	// Again with updates, flags before the file, as JSON.
	os.WriteFile(file, []byte("phone_number,first_name\n+14152000001,Anne\n+14152000003,Cy\n"), 0o600)
	out.Reset()
	errOut.Reset()
	if err := run(t.Context(), []string{"import", "--brand", id, "--on-duplicate", "update", "--json", file}, e, &out, &errOut); err != nil {
		t.Fatalf("import --on-duplicate update: %v\n%s", err, errOut.String())
	}
	var imp parley.Import
	if err := json.Unmarshal(out.Bytes(), &imp); err != nil {
		t.Fatalf("--json: %v\n%s", err, out.String())
	}
	if imp.ID != 2 || imp.Status != parley.ImportCompleted || imp.Updated != 1 || imp.Skipped != 1 || imp.OnDuplicate != "update" {
		t.Errorf("import = %+v, want 1 updated and 1 unchanged", imp)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"import", file}, "--brand"},
		{[]string{"import", "--brand", id}, "FILE"},
		{[]string{"import", file, "--brand", "99"}, "Brand not found"},
		{[]string{"import", filepath.Join(dir, "missing.csv"), "--brand", id}, "no such file"},
		{[]string{"import", file, "--brand", id, "--on-duplicate", "merge"}, "on_duplicate: must be skip or update"},
		{[]string{"import", file, "extra", "--brand", id}, "unexpected argument"},
	} {
		_, err := runCmd(t, e, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parley %s: error %v, want one saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	png := filepath.Join(dir, "photo.csv")
	os.WriteFile(png, []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"), 0o600)
	if _, err := runCmd(t, e, "import", png, "--brand", id); err == nil || !strings.Contains(err.Error(), "not a CSV file") {
		t.Errorf("import of a PNG: %v, want it refused as not CSV", err)
	}
}

// TestProgress: off a terminal, lines at most once a second and always the
// last; on one, a bar redrawn in place.
func TestProgress(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	var b bytes.Buffer
	p := newProgress(&b, &parley.Import{ID: 7, TotalRows: 1000}, clock)
	for _, step := range []struct {
		rows int64
		dt   time.Duration
	}{{0, 0}, {100, 500 * time.Millisecond}, {200, 600 * time.Millisecond}, {300, 100 * time.Millisecond}, {1000, 100 * time.Millisecond}} {
		now = now.Add(step.dt)
		p.show(&parley.Import{ProcessedRows: step.rows})
	}
	p.done()
	want := "import 7: 0/1000 rows (0%), 0 rows/s, ETA ?\n" +
		"import 7: 200/1000 rows (20%), 182 rows/s, ETA 4s\n" +
		"import 7: 1000/1000 rows (100%), 769 rows/s, ETA 0s\n"
	if b.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	p = newProgress(&b, &parley.Import{ID: 7, TotalRows: 10}, clock)
	p.terminal = true
	now = now.Add(2 * time.Second)
	p.show(&parley.Import{ProcessedRows: 5})
	p.done()
	if got := b.String(); got != "\r 50% [###############---------------] 5/10 rows  2 rows/s  ETA 2s\x1b[K\n" {
		t.Errorf("bar = %q", got)
	}
}

// TestExportImportRoundTrip: export writes a brand's live users in the
// import format, and importing the file into an empty brand with the same
// fields reproduces them: the second brand's export is the same file.
func TestExportImportRoundTrip(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { testRoundTrip(t, false) })
	t.Run("PostgreSQL", func(t *testing.T) {
		if os.Getenv(apitest.EnvPostgresURL) == "" {
			t.Skip("needs PostgreSQL: set " + apitest.EnvPostgresURL)
		}
		testRoundTrip(t, true)
	})
}

func testRoundTrip(t *testing.T, postgres bool) {
	m, e := importEnv(t, postgres)
	from := newBrandWithFields(t, e, "From")
	fromID, _ := strconv.ParseInt(from, 10, 64)

	a, err := app.Open(t.Context(), app.Config{DB: m["PARLEY_DB"], DataDir: m["PARLEY_DATA_DIR"], SecretKey: testSecretKey, Role: "api"})
	if err != nil {
		t.Fatal(err)
	}
	create := func(phone string, f parley.UserFields, channel string) *parley.User {
		in := parley.UserCreate{PhoneNumber: parley.Some(phone), UserFields: f}
		if channel != "" {
			in.Channel = parley.Some(channel)
		}
		u, err := a.Service.CreateUser(t.Context(), parley.Origin{}, fromID, in)
		if err != nil {
			t.Fatalf("CreateUser %s: %v", phone, err)
		}
		return u
	}
	raw := func(s string) parley.Optional[json.RawMessage] { return parley.Some(json.RawMessage(s)) }
	create("+14152000001", parley.UserFields{FirstName: parley.Some("Ann"), LastName: parley.Some("Lee"),
		EmailAddress: parley.Some("ann@example.com"), DateOfBirth: parley.Some("02/29/2000"), MessagingConsent: parley.Some(true),
		PostalCode: parley.Some("10001"), CustomData: raw(`{"loyalty_tier":"gold","tags":["a","b c"],"visits":3,"score":1.5,` +
			`"vip":"true","joined":"2024-01-31","lucky":[7,8]}`)}, "SHOPIFY")
	create("+14152000002", parley.UserFields{FirstName: parley.Some(`Bo "Bobby", Jr.`), LastName: parley.Some("-Ünal, Second"),
		MessagingConsent: parley.Some(false), PostalCode: parley.Some("94105-1234"),
		CustomData: raw(`{"visits":3.0,"score":-2e3,"vip":1,"joined":"01/31/2024","tags":["x"]}`)}, "")
	create("+14152000003", parley.UserFields{PostalCode: parley.Some("00000")}, "")
	create("+14152000004", parley.UserFields{}, "")
	gone := create("+14152000005", parley.UserFields{FirstName: parley.Some("Gone")}, "")
	if _, err := a.Service.DeleteUser(t.Context(), parley.Origin{}, fromID, gone.ID); err != nil {
		t.Fatal(err)
	}
	a.Close()

	dir := t.TempDir()
	exported := filepath.Join(dir, "from.csv")
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"export", "--brand", from, "--out", exported}, e, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if got := errOut.String(); got != "Exported 4 users to "+exported+"\n" {
		t.Errorf("export said %q, want 4 users (the deleted one left out)", got)
	}
	file, _ := os.ReadFile(exported)
	header := "phone_number,first_name,last_name,email_address,date_of_birth,messaging_consent,postal_code," +
		"custom_loyalty_tier,custom_tags,custom_visits,custom_score,custom_vip,custom_joined,custom_lucky\n"
	if !strings.HasPrefix(string(file), header+"+14152000001,Ann,Lee,ann@example.com,02/29/2000,true,10001,gold,a|b c,3,1.5,true,2024-01-31,7|8\n") {
		t.Errorf("export:\n%s", file)
	}

	to := newBrandWithFields(t, e, "To")
	toID, _ := strconv.ParseInt(to, 10, 64)
	out.Reset()
	if err := run(t.Context(), []string{"import", exported, "--brand", to}, e, &out, &errOut); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "4 rows: 4 created, 0 updated, 0 skipped, 0 failed") {
		t.Errorf("import: %s", out.String())
	}
	again := mustRun(t, e, "export", "--brand", to)
	if again != string(file) {
		t.Errorf("the imported brand exports\n%s\nthe original exported\n%s", again, file)
	}

	// Field by field, beyond what the file shows.
	a, err = app.Open(t.Context(), app.Config{DB: m["PARLEY_DB"], DataDir: m["PARLEY_DATA_DIR"], SecretKey: testSecretKey, Role: "api"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	users := func(brandID int64) []string {
		var out []string
		err := a.DB.EachUser(t.Context(), brandID, func(u *parley.User) error {
			u.ID, u.BrandID, u.Channel = 0, 0, nil
			u.DateCreated, u.DateLastUpdated = parley.Time{}, parley.Time{}
			b, _ := json.Marshal(u)
			out = append(out, string(b))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := users(toID), users(fromID)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("imported users:\n%s\nwant the exported brand's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestExportHistory: `parley export --history FILE` writes every history
// entry of the brand as CSV, a deleted user's included (D18).
func TestExportHistory(t *testing.T) {
	m, e := importEnv(t, false)
	brand := newBrandWithFields(t, e, "Hist")
	brandID, _ := strconv.ParseInt(brand, 10, 64)
	a, err := app.Open(t.Context(), app.Config{DB: m["PARLEY_DB"], DataDir: m["PARLEY_DATA_DIR"], SecretKey: testSecretKey, Role: "api"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := a.Service.CreateUser(t.Context(), parley.Origin{}, brandID, parley.UserCreate{PhoneNumber: parley.Some("+14152000001"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true), CustomData: parley.Some(json.RawMessage(`{"tags":["a"]}`))}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Service.DeleteUser(t.Context(), parley.Origin{}, brandID, u.ID); err != nil {
		t.Fatal(err)
	}
	a.Close()
	users, history := filepath.Join(t.TempDir(), "users.csv"), filepath.Join(t.TempDir(), "history.csv")
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"export", "--brand", brand, "--out", users, "--history", history}, e, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "Exported 2 history entries to "+history) {
		t.Errorf("export said %q", errOut.String())
	}
	rows, err := csv.NewReader(mustOpen(t, history)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(u.ID, 10)
	want := [][]string{
		{"user_id", "phone_number", "field", "old_value", "new_value", "source", "detail", "message_id", "occurred_at"},
		{id, "+14152000001", "messaging_consent", "null", "true", "api", "", ""},
		{id, "+14152000001", "custom_data.tags", "null", `["a"]`, "api", "", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("history file:\n%q", rows)
	}
	for i, w := range want {
		if got := rows[i][:len(w)]; strings.Join(got, ",") != strings.Join(w, ",") || i > 0 && len(rows[i][8]) != len(parley.TimeFormat) {
			t.Errorf("row %d: %q, want %q and a time", i, rows[i], w)
		}
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
