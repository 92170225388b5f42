package httpapi_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/service"
)

// CSV imports (issue #7). Files go up through POST /imports, signed like
// every request; the import runs as a River job, the same one a node runs.

// impMembers are the members of an Import, exactly.
var impMembers = []string{"id", "status", "file_name", "on_duplicate", "messaging_consent_default", "total_rows",
	"processed_rows", "created", "updated", "skipped", "failed", "error", "date_created", "date_completed",
	"default_country", "mapping"} // D22

// impUpload sends content as the part "file" named name, followed by the
// form fields (after the file, so the handler must not need them first).
func impUpload(t testing.TB, e *apitest.Env, c *client.Client, name string, content []byte, fields map[string]string) *client.Response {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(content)
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		mw.WriteField(k, fields[k])
	}
	mw.Close()
	resp, err := c.Do(e.Ctx, "POST", "/imports", buf.Bytes(), mw.FormDataContentType())
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// impDecode decodes an Import, checking its exact members.
func impDecode(t testing.TB, body []byte) *parley.Import {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	got := make([]string, 0, len(m))
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	want := slices.Clone(impMembers)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("import members = %v, want exactly %v", got, want)
	}
	var imp parley.Import
	if err := json.Unmarshal(body, &imp); err != nil {
		t.Fatal(err)
	}
	return &imp
}

// impCreate uploads a file that must be accepted.
func impCreate(t testing.TB, e *apitest.Env, c *client.Client, content string, fields map[string]string) *parley.Import {
	t.Helper()
	resp := impUpload(t, e, c, "users.csv", []byte(content), fields)
	if resp.StatusCode != 201 {
		t.Fatalf("POST /imports = %d %s, want 201 (D3)", resp.StatusCode, resp.Body)
	}
	return impDecode(t, resp.Body)
}

func impGet(t testing.TB, e *apitest.Env, c *client.Client, id int64) *parley.Import {
	t.Helper()
	resp, err := c.Do(e.Ctx, "GET", fmt.Sprintf("/imports/%d", id), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /imports/%d = %d %s", id, resp.StatusCode, resp.Body)
	}
	return impDecode(t, resp.Body)
}

// impWait polls the import until it ends.
func impWait(t testing.TB, e *apitest.Env, c *client.Client, id int64) *parley.Import {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		imp := impGet(t, e, c, id)
		if imp.Status == parley.ImportCompleted || imp.Status == parley.ImportFailed {
			return imp
		}
		if time.Now().After(deadline) {
			t.Fatalf("import %d still %s after 30 s: %+v", id, imp.Status, imp)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// impStart runs the env's workers, import jobs included.
func impStart(t testing.TB, e *apitest.Env) {
	t.Helper()
	if err := e.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// impRun uploads content as c and waits for its import to end.
func impRun(t testing.TB, e *apitest.Env, c *client.Client, content string, fields map[string]string) *parley.Import {
	t.Helper()
	imp := impCreate(t, e, c, content, fields)
	return impWait(t, e, c, imp.ID)
}

func impWantCounts(t testing.TB, imp *parley.Import, created, updated, skipped, failed int64) {
	t.Helper()
	if imp.Status != parley.ImportCompleted {
		t.Errorf("status = %s (error %v), want completed", imp.Status, imp.Error)
	}
	total := created + updated + skipped + failed
	if imp.Created != created || imp.Updated != updated || imp.Skipped != skipped || imp.Failed != failed ||
		imp.ProcessedRows != total || imp.TotalRows != total {
		t.Errorf("counts: total %d processed %d created %d updated %d skipped %d failed %d, want %d/%d created %d updated %d skipped %d failed %d",
			imp.TotalRows, imp.ProcessedRows, imp.Created, imp.Updated, imp.Skipped, imp.Failed,
			total, total, created, updated, skipped, failed)
	}
}

// impErrors fetches the list of errors (?format=list, one line per
// error), checking its media type and header.
func impErrors(t testing.TB, e *apitest.Env, c *client.Client, id int64) [][]string {
	t.Helper()
	resp, err := c.Do(e.Ctx, "GET", fmt.Sprintf("/imports/%d/errors?format=list", id), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET errors = %d %s", resp.StatusCode, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Errorf("errors Content-Type = %q, want text/csv; charset=utf-8", ct)
	}
	recs, err := csv.NewReader(bytes.NewReader(resp.Body)).ReadAll()
	if err != nil {
		t.Fatalf("errors CSV %q: %v", resp.Body, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], []string{"line", "field", "type", "msg"}) {
		t.Fatalf("errors CSV header = %v, want line,field,type,msg", recs)
	}
	return recs[1:]
}

// impWantErrors compares the errors CSV's line, field and type columns,
// and checks every msg says something.
func impWantErrors(t testing.TB, got [][]string, want [][3]string) {
	t.Helper()
	var g [][3]string
	for _, r := range got {
		g = append(g, [3]string{r[0], r[1], r[2]})
		if strings.TrimSpace(r[3]) == "" {
			t.Errorf("error on line %s has no msg", r[0])
		}
	}
	if !slices.Equal(g, want) {
		t.Errorf("errors (line, field, type) =\n%v\nwant\n%v\nfull: %q", g, want, got)
	}
}

func impUser(t testing.TB, e *apitest.Env, c *client.Client, phone string) *parley.User {
	t.Helper()
	u, err := c.FindUserByPhone(e.Ctx, phone)
	if err != nil {
		t.Fatalf("user %s: %v", phone, err)
	}
	return u
}

func impQueryInt(t testing.TB, e *apitest.Env, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx, impRebind(q), args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// impRebind writes ? placeholders as $n on PostgreSQL.
func impRebind(q string) string {
	if apitest.Engine() != "postgres" {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// impEvents counts the brand's outbox events by type.
func impEvents(t testing.TB, e *apitest.Env, brandID int64) map[string]int64 {
	t.Helper()
	rows, err := e.App.DB.Writer().QueryContext(e.Ctx, impRebind(`SELECT type, count(*) FROM events WHERE brand_id = ? GROUP BY type`), brandID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var typ string
		var n int64
		if err := rows.Scan(&typ, &n); err != nil {
			t.Fatal(err)
		}
		out[typ] = n
	}
	return out
}

// impFields configures one custom data field of every type for a brand.
func impFields(t testing.TB, e *apitest.Env, brandID int64) {
	t.Helper()
	for _, f := range []*parley.CustomField{
		{FieldName: "Loyalty Tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"gold", "silver", "bronze"}},
		{FieldName: "Tags", CustomDataType: parley.CustomList, Subtype: parley.CustomString, IsAppend: true},
		{FieldName: "Visits", CustomDataType: parley.CustomInteger},
		{FieldName: "Score", CustomDataType: parley.CustomFloat},
		{FieldName: "VIP", CustomDataType: parley.CustomBoolean},
		{FieldName: "Joined", CustomDataType: parley.CustomDate},
		{FieldName: "Lucky", CustomDataType: parley.CustomList, Subtype: parley.CustomInteger},
	} {
		f.BrandID = brandID
		e.MustCreateField(t, f)
	}
}

func impSameString(t testing.TB, what string, got, want *string) {
	t.Helper()
	if (got == nil) != (want == nil) || (got != nil && *got != *want) {
		t.Errorf("%s = %v, want %v", what, impVal(got), impVal(want))
	}
}

// impVal is what p points to, nil for nil: for messages.
func impVal[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestImportCreatesUsers: the happy path (issue #7): every column, custom
// data typed by each field's type, channel FILE, the counters, and the
// events the API would emit, batched in the import's transactions (D11).
func TestImportCreatesUsers(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impFields(t, e, e.BrandA.ID)
	rc := whNewReceiver(t, nil)
	whCreate(t, e.A, rc.URL(), parley.EventUserCreated, parley.EventUserSubscribed, parley.EventUserUnsubscribed)

	file := "phone_number,first_name,last_name,email_address,date_of_birth,messaging_consent,postal_code," +
		"custom_loyalty_tier,custom_tags,custom_visits,custom_score,custom_vip,custom_joined,custom_lucky\n" +
		"+14152000001,Ann,Lee,ann@example.com,02/29/2000,yes,10001,gold,a|b,3,1.5,true,2024-01-31,7|8\n" +
		"+14152000002,Bob,,,,,,,,,,,,\n" +
		"+1 (415) 200-0003,\"Cy, Jr.\",O'Neil,,,no,94105-1234,silver,x,0,-2,0,01/31/2024,\n"
	imp := impCreate(t, e, e.A, file, nil)
	if imp.Status != parley.ImportQueued || imp.TotalRows != 3 || imp.ProcessedRows != 0 || imp.FileName != "users.csv" ||
		imp.OnDuplicate != parley.OnDuplicateSkip || imp.MessagingConsentDefault != nil || imp.Error != nil || imp.DateCompleted != nil {
		t.Errorf("created import = %+v, want queued with 3 rows to go", imp)
	}
	impStart(t, e)
	imp = impWait(t, e, e.A, imp.ID)
	impWantCounts(t, imp, 3, 0, 0, 0)
	if imp.DateCompleted == nil || imp.DateCompleted.Before(imp.DateCreated.Time) {
		t.Errorf("date_completed = %v, want a time after date_created %v", imp.DateCompleted, imp.DateCreated)
	}

	ann := impUser(t, e, e.A, "+14152000001")
	impSameString(t, "Ann first_name", ann.FirstName, ptr("Ann"))
	impSameString(t, "Ann last_name", ann.LastName, ptr("Lee"))
	impSameString(t, "Ann email_address", ann.EmailAddress, ptr("ann@example.com"))
	impSameString(t, "Ann date_of_birth", ann.DateOfBirth, ptr("02/29/2000"))
	if ann.MessagingConsent == nil || !*ann.MessagingConsent {
		t.Errorf("Ann messaging_consent = %v, want true (yes)", impVal(ann.MessagingConsent))
	}
	if ann.Location == nil || impVal(ann.Location.City) != "New York" || impVal(ann.Location.PostalCode) != "10001" ||
		impVal(ann.Location.TimeZone) != "America/New_York" {
		t.Errorf("Ann location = %+v, want New York 10001 America/New_York (D7, D17)", ann.Location)
	}
	wantCD := `{"joined":"2024-01-31","loyalty_tier":"gold","lucky":[7,8],"score":1.5,"tags":["a","b"],"vip":"true","visits":3}`
	if string(ann.CustomData) != wantCD {
		t.Errorf("Ann custom_data = %s, want %s (typed by each field's type)", ann.CustomData, wantCD)
	}

	bob := impUser(t, e, e.A, "+14152000002")
	if bob.LastName != nil || bob.EmailAddress != nil || bob.MessagingConsent != nil || bob.Location != nil ||
		(bob.CustomData != nil && string(bob.CustomData) != "null") {
		t.Errorf("Bob = %+v, want empty cells stored as null", bob)
	}
	cy := impUser(t, e, e.A, "+14152000003")
	impSameString(t, "Cy first_name", cy.FirstName, ptr("Cy, Jr."))
	if cy.MessagingConsent == nil || *cy.MessagingConsent {
		t.Errorf("Cy messaging_consent = %v, want false (no)", impVal(cy.MessagingConsent))
	}
	if cy.Location == nil || impVal(cy.Location.PostalCode) != "94105-1234" || impVal(cy.Location.City) != "San Francisco" ||
		impVal(cy.Location.TimeZone) != "America/Los_Angeles" {
		t.Errorf("Cy location = %+v, want San Francisco America/Los_Angeles (D7, D17)", cy.Location)
	}
	if n := impQueryInt(t, e, `SELECT count(*) FROM users WHERE brand_id = ? AND time_zone = 'America/Los_Angeles'`, e.BrandA.ID); n != 1 {
		t.Errorf("%d imported users stored with time_zone America/Los_Angeles, want 1 (Cy)", n)
	}
	wantCD = `{"joined":"01/31/2024","loyalty_tier":"silver","score":-2,"tags":["x"],"vip":0,"visits":0}`
	if string(cy.CustomData) != wantCD {
		t.Errorf("Cy custom_data = %s, want %s", cy.CustomData, wantCD)
	}

	if n := impQueryInt(t, e, `SELECT count(*) FROM users WHERE brand_id = ? AND channel = 'FILE'`, e.BrandA.ID); n != 3 {
		t.Errorf("%d users with channel FILE, want 3", n)
	}
	if n := impQueryInt(t, e, `SELECT count(*) FROM user_history WHERE brand_id = ? AND source = 'import' AND field = 'messaging_consent'`, e.BrandA.ID); n != 2 {
		t.Errorf("%d consent events from the import, want 2 (Ann, Cy)", n)
	}
	ev := impEvents(t, e, e.BrandA.ID)
	if ev[parley.EventUserCreated] != 3 || ev[parley.EventUserSubscribed] != 1 || ev[parley.EventUserUnsubscribed] != 1 || len(ev) != 3 {
		t.Errorf("events = %v, want 3 user.created, 1 user.subscribed, 1 user.unsubscribed (D11)", ev)
	}
	// And they reach the endpoint like the API's.
	got := rc.event(t, parley.EventUserCreated, "phone_number", "+14152000003")
	var u parley.User
	json.Unmarshal(got.Data, &u)
	if u.ID != cy.ID || impVal(u.FirstName) != "Cy, Jr." {
		t.Errorf("user.created data = %s, want the user as the API returns it", got.Data)
	}
	if e.Count(t, "import_phones") != 0 {
		t.Error("import_phones still holds the numbers of a completed import")
	}
	if n := fileBlobCount(t, e); n != 0 {
		t.Errorf("the blob store still holds %d files after the import completed", n)
	}
}

// TestImportFileFormats: UTF-8 with or without BOM, comma or semicolon,
// quoted cells with newlines and delimiters, CRLF, header names in any case.
func TestImportFileFormats(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impFields(t, e, e.BrandA.ID)
	impStart(t, e)
	for _, tc := range []struct {
		name, file, phone, first string
	}{
		{"BOMCommaCRLF", "\xEF\xBB\xBFphone_number,first_name\r\n+14152000101,\"Ann, Marie\"\r\n", "+14152000101", "Ann, Marie"},
		{"Semicolon", "phone_number;first_name;custom_score\n+14152000102;\"Bo;b\";1.25\n", "+14152000102", "Bo;b"},
		{"HeaderCase", " Phone_Number , FIRST_NAME,Custom_Loyalty Tier\n+14152000103,Cy,gold\n", "+14152000103", "Cy"},
		{"NoFinalNewline", "phone_number,first_name\n+14152000104,Di", "+14152000104", "Di"},
		{"BlankLines", "phone_number,first_name\n\n+14152000105,Ed\n\n", "+14152000105", "Ed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp := impRun(t, e, e.A, tc.file, nil)
			impWantCounts(t, imp, 1, 0, 0, 0)
			u := impUser(t, e, e.A, tc.phone)
			impSameString(t, "first_name", u.FirstName, &tc.first)
		})
	}
	if u := impUser(t, e, e.A, "+14152000102"); string(u.CustomData) != `{"score":1.25}` {
		t.Errorf("semicolon file custom_data = %s", u.CustomData)
	}
	if u := impUser(t, e, e.A, "+14152000103"); string(u.CustomData) != `{"loyalty_tier":"gold"}` {
		t.Errorf("custom_<Field Name> column: custom_data = %s, want the field's snake_case key", u.CustomData)
	}
}

// TestImportRowErrors: every row passes the validation of POST /users; a
// bad row is reported with the error type the API would answer and
// skipped, and the rest of the file is imported. The errors CSV lists
// line, field, type and msg in file order.
func TestImportRowErrors(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impFields(t, e, e.BrandA.ID)
	impStart(t, e)
	file := "phone_number,first_name,email_address,date_of_birth,messaging_consent,postal_code,custom_visits,custom_loyalty_tier\n" +
		"+14152000201,Ann,,,,,,\n" + // 2 ok
		"+1415,Bob,,,,,,\n" + // 3 invalid phone
		",Cy,,,,,,\n" + // 4 no phone
		"+14152000204,Di,not-an-email,,,,,\n" + // 5
		"+14152000205,Ed,,13/01/2000,,,,\n" + // 6
		"+14152000206,Flo,,,maybe,,,\n" + // 7
		"+14152000207,Gus,,,,1234,,\n" + // 8
		"+14152000208,Hal,,,,,1.5,\n" + // 9
		"+14152000209,Ida,,,,,,platinum\n" + // 10
		"+14152000210,Jo,,,\n" + // 11 too few cells
		"+14152000211,K\"im,,,,,,\n" + // 12 bare quote
		"+14152000212," + strings.Repeat("L", 51) + ",,,,,,\n" + // 13 name too long
		"+14152000213,Max,,,,,,\n" // 14 ok
	imp := impRun(t, e, e.A, file, nil)
	impWantCounts(t, imp, 2, 0, 0, 11)
	got := impErrors(t, e, e.A, imp.ID)
	impWantErrors(t, got, [][3]string{
		{"3", "phone_number", parley.EInvalidPhoneNumber},
		{"4", "phone_number", parley.EValidation},
		{"5", "email_address", parley.EValidation},
		{"6", "date_of_birth", parley.EValidation},
		{"7", "messaging_consent", parley.EValidation},
		{"8", "postal_code", parley.EInvalidPostalCode},
		{"9", "custom_visits", parley.EInvalidCustomData},
		{"10", "custom_loyalty_tier", parley.EInvalidCustomData},
		{"11", "", parley.EValidation},
		{"12", "", parley.EValidation},
		{"13", "first_name", parley.EValidation},
	})
	if len(got) == 11 {
		for i, want := range []string{"Invalid phone number [+1415] provided.", "phone_number: required",
			"email_address: must be an email address", "date_of_birth: must be a date",
			"messaging_consent: must be true, false, yes, no, 1, 0 or empty", "Invalid postal code [1234]",
			"custom_visits: must be a whole number", "custom_loyalty_tier: must be one of gold, silver, bronze",
			"the row has 5 cells; the header has 8 columns", `not valid CSV: bare "`, "first_name: at most 50 characters"} {
			if !strings.HasPrefix(got[i][3], want) {
				t.Errorf("line %s msg = %q, want it to say %q (the API's message)", got[i][0], got[i][3], want)
			}
		}
	}
	impUser(t, e, e.A, "+14152000201")
	impUser(t, e, e.A, "+14152000213")
	if n := e.Count(t, "users"); n != 2 {
		t.Errorf("%d users, want the 2 good rows only", n)
	}
}

// TestImportDuplicatesInFile: the first row with a number wins; later rows
// with it (however formatted, in the same batch or a later one) are
// reported as duplicate_record_found naming the first row's line. A row
// rejected for another reason does not claim its number.
func TestImportDuplicatesInFile(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.App.Importer.BatchSize = 2
	impStart(t, e)
	file := "phone_number,first_name,email_address\n" +
		"+14152000301,A1,\n" + // 2
		"+14152000302,B1,\n" + // 3
		"+14152000301,A2,\n" + // 4 dup of 2, next batch
		"+1 (415) 200-0302,B2,\n" + // 5 dup of 3
		"+14152000303,C1,\n" + // 6
		"+14152000303,C2,\n" + // 7 dup of 6, same batch
		"+14152000304,D1,bad\n" + // 8 rejected: claims nothing
		"+14152000304,D2,\n" // 9 imported
	imp := impRun(t, e, e.A, file, map[string]string{"on_duplicate": "update"})
	impWantCounts(t, imp, 4, 0, 0, 4)
	got := impErrors(t, e, e.A, imp.ID)
	impWantErrors(t, got, [][3]string{
		{"4", "phone_number", parley.EDuplicate},
		{"5", "phone_number", parley.EDuplicate},
		{"7", "phone_number", parley.EDuplicate},
		{"8", "email_address", parley.EValidation},
	})
	for i, line := range []string{"line 2 ", "line 3 ", "line 6 "} {
		if i < len(got) && !strings.Contains(got[i][3], line) || !strings.Contains(got[i][3], "Duplicate entry for '+1415200030") {
			t.Errorf("duplicate msg %q, want the number and %q", got[i][3], line)
		}
	}
	for phone, first := range map[string]string{"+14152000301": "A1", "+14152000302": "B1", "+14152000303": "C1", "+14152000304": "D2"} {
		impSameString(t, phone+" first_name", impUser(t, e, e.A, phone).FirstName, &first)
	}
}

// TestImportOnDuplicate: a row of a user the brand has is skipped by
// default; with on_duplicate=update it is merged as POST /users/{id} would
// merge it: only cells with a value change, an is_append list gains items,
// nothing changed is a skip, and the changes emit user.updated.
func TestImportOnDuplicate(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impFields(t, e, e.BrandA.ID)
	rc := whNewReceiver(t, nil)
	whCreate(t, e.A, rc.URL(), "*")
	impStart(t, e)
	old := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14152000401"), UserFields: parley.UserFields{
		FirstName: parley.Some("Old"), LastName: parley.Some("Keep"), MessagingConsent: parley.Some(true),
		CustomData: parley.Some(json.RawMessage(`{"tags":["a"],"visits":1}`))}})
	same := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14152000402"),
		UserFields: parley.UserFields{FirstName: parley.Some("Same")}})
	gone := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14152000403")})
	if _, err := e.A.DeleteUser(e.Ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	userRow := func(id int64) string {
		return e.Snapshot(t, fmt.Sprintf("SELECT * FROM users WHERE id = %d", id))
	}
	oldRow, sameRow := userRow(old.ID), userRow(same.ID)
	file := "phone_number,first_name,last_name,messaging_consent,custom_tags,custom_visits\n" +
		"+14152000401,New,,no,b,\n" +
		"+14152000402,Same,,,,\n" +
		"+14152000403,Back,,,,\n" + // a deleted user's number is free (D5)
		"+14152000404,Fresh,,,,\n"

	t.Run("SkipByDefault", func(t *testing.T) {
		before := impEvents(t, e, e.BrandA.ID)
		imp := impRun(t, e, e.A, file, nil)
		impWantCounts(t, imp, 2, 0, 2, 0)
		if userRow(old.ID) != oldRow || userRow(same.ID) != sameRow {
			t.Error("on_duplicate=skip changed an existing user")
		}
		if back := impUser(t, e, e.A, "+14152000403"); back.ID == gone.ID || impVal(back.FirstName) != "Back" {
			t.Errorf("deleted user's number: got user %d %v, want a new user", back.ID, impVal(back.FirstName))
		}
		after := impEvents(t, e, e.BrandA.ID)
		if after[parley.EventUserUpdated] != before[parley.EventUserUpdated] ||
			after[parley.EventUserCreated] != before[parley.EventUserCreated]+2 {
			t.Errorf("events %v → %v, want 2 more user.created and no user.updated", before, after)
		}
	})
	t.Run("Update", func(t *testing.T) {
		before := impEvents(t, e, e.BrandA.ID)
		imp := impRun(t, e, e.A, file, map[string]string{"on_duplicate": "update"})
		if imp.OnDuplicate != parley.OnDuplicateUpdate {
			t.Errorf("on_duplicate = %q", imp.OnDuplicate)
		}
		// 401 changes; 402, 403 and 404 are already as the file says.
		impWantCounts(t, imp, 0, 1, 3, 0)
		u := impUser(t, e, e.A, "+14152000401")
		impSameString(t, "first_name", u.FirstName, ptr("New"))
		impSameString(t, "last_name (empty cell)", u.LastName, ptr("Keep"))
		if u.MessagingConsent == nil || *u.MessagingConsent {
			t.Errorf("messaging_consent = %v, want false", impVal(u.MessagingConsent))
		}
		if string(u.CustomData) != `{"tags":["a","b"],"visits":1}` {
			t.Errorf("custom_data = %s, want the is_append list extended and visits kept (D6)", u.CustomData)
		}
		if !u.DateLastUpdated.After(old.DateLastUpdated.Time) && !u.DateLastUpdated.Equal(old.DateLastUpdated.Time) {
			t.Errorf("date_last_updated went back")
		}
		if userRow(same.ID) != sameRow {
			t.Error("a row that changes nothing rewrote the user (D5: date_last_updated moves only on change)")
		}
		after := impEvents(t, e, e.BrandA.ID)
		if after[parley.EventUserUpdated] != before[parley.EventUserUpdated]+1 ||
			after[parley.EventUserUnsubscribed] != before[parley.EventUserUnsubscribed]+1 ||
			after[parley.EventUserCreated] != before[parley.EventUserCreated] {
			t.Errorf("events %v → %v, want one user.updated and one user.unsubscribed", before, after)
		}
		if n := impQueryInt(t, e, `SELECT count(*) FROM user_history WHERE user_id = ? AND source = 'import' AND field = 'messaging_consent' AND new_value = ?`,
			old.ID, "false"); n != 1 {
			t.Errorf("%d consent events true → false from the import, want 1", n)
		}
		rc.event(t, parley.EventUserUpdated, "first_name", "New")
	})
}

// TestImportMessagingConsent: true/false/yes/no/1/0 in any case, empty for
// none; messaging_consent_default fills the empty cells of created users
// only, never an existing user's consent.
func TestImportMessagingConsent(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	existing := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14152000599"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(false), FirstName: parley.Some("Ex")}})
	values := []struct {
		cell string
		want *bool
	}{{"true", ptr(true)}, {"false", ptr(false)}, {"yes", ptr(true)}, {"no", ptr(false)}, {"1", ptr(true)},
		{"0", ptr(false)}, {"TRUE", ptr(true)}, {"No", ptr(false)}, {"", nil}}
	file := func(base int) string {
		var b strings.Builder
		b.WriteString("phone_number,messaging_consent,first_name\n")
		for i, v := range values {
			fmt.Fprintf(&b, "+1415200%04d,%s,\n", base+i, v.cell)
		}
		fmt.Fprintf(&b, "+14152000599,,Ex%d\n", base) // the existing user, consent cell empty
		return b.String()
	}
	t.Run("NoDefault", func(t *testing.T) {
		imp := impRun(t, e, e.A, file(500), map[string]string{"on_duplicate": "update"})
		if imp.MessagingConsentDefault != nil {
			t.Errorf("messaging_consent_default = %v, want null", *imp.MessagingConsentDefault)
		}
		impWantCounts(t, imp, int64(len(values)), 1, 0, 0)
		for i, v := range values {
			u := impUser(t, e, e.A, fmt.Sprintf("+1415200%04d", 500+i))
			if fmt.Sprint(impVal(u.MessagingConsent)) != fmt.Sprint(impVal(v.want)) {
				t.Errorf("cell %q: messaging_consent = %v, want %v", v.cell, impVal(u.MessagingConsent), impVal(v.want))
			}
		}
	})
	t.Run("DefaultTrue", func(t *testing.T) {
		imp := impRun(t, e, e.A, file(520), map[string]string{"messaging_consent_default": "yes", "on_duplicate": "update"})
		if imp.MessagingConsentDefault == nil || !*imp.MessagingConsentDefault {
			t.Errorf("messaging_consent_default = %v, want true", impVal(imp.MessagingConsentDefault))
		}
		impWantCounts(t, imp, int64(len(values)), 1, 0, 0)
		if u := impUser(t, e, e.A, fmt.Sprintf("+1415200%04d", 520+len(values)-1)); u.MessagingConsent == nil || !*u.MessagingConsent {
			t.Errorf("empty cell with default true: messaging_consent = %v, want true", impVal(u.MessagingConsent))
		}
		if u := impUser(t, e, e.A, fmt.Sprintf("+1415200%04d", 521)); u.MessagingConsent == nil || *u.MessagingConsent {
			t.Error("the default overrode a cell that said false")
		}
		u, err := e.A.GetUser(e.Ctx, existing.ID)
		if err != nil {
			t.Fatal(err)
		}
		if u.MessagingConsent == nil || *u.MessagingConsent {
			t.Errorf("existing user's consent = %v, want false kept: the default is for created users only", impVal(u.MessagingConsent))
		}
	})
	t.Run("BadValue", func(t *testing.T) {
		imp := impRun(t, e, e.A, "phone_number,messaging_consent\n+14152000540,maybe\n", nil)
		impWantCounts(t, imp, 0, 0, 0, 1)
		impWantErrors(t, impErrors(t, e, e.A, imp.ID), [][3]string{{"2", "messaging_consent", parley.EValidation}})
	})
}

// impNothingStored asserts a refused upload left the database, the queue
// and the blob store as they were.
func impNothingStored(t *testing.T, e *apitest.Env, state string) {
	t.Helper()
	if e.State(t) != state {
		t.Error("a refused import changed the database or queued a job")
	}
	if n := e.Count(t, "imports"); n != 0 {
		t.Errorf("%d imports recorded after a refused upload", n)
	}
	if n := fileBlobCount(t, e); n != 0 {
		t.Errorf("the blob store holds %d files after a refused upload", n)
	}
}

// TestImportBadFiles: files that cannot be imported are refused at once
// with a clear message, and nothing is stored (issue #7 "Bad input").
func TestImportBadFiles(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impFields(t, e, e.BrandA.ID)
	state := e.State(t)
	megaLine := "+14152000601," + strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name     string
		content  []byte
		status   int
		typ      string
		contains []string
	}{
		{"NotCSV", filePNG, 415, parley.EUnsupportedMediaType, []string{"not a CSV file", "image/png"}},
		{"PDF", filePDF, 415, parley.EUnsupportedMediaType, []string{"application/pdf"}},
		{"Binary", fileELF, 415, parley.EUnsupportedMediaType, []string{"not a CSV file"}},
		{"Zip", fileZip, 415, parley.EUnsupportedMediaType, []string{"not a CSV file"}},
		{"Empty", nil, 422, parley.EValidation, []string{"must not be empty"}},
		{"OnlyBlankLines", []byte("\n\r\n"), 422, parley.EValidation, []string{"must not be empty"}},
		{"HeaderOnly", []byte("phone_number,first_name\n"), 422, parley.EValidation, []string{"no rows"}},
		{"OneMegabyteLine", []byte("phone_number,first_name\n+14152000600,Ann\n" + megaLine + "\n"), 422, parley.EValidation,
			[]string{"line 3", "longer than 65536 bytes"}},
		{"UnknownColumns", []byte("phone_number,nickname,custom_loyalty_tier,custom_shoe_size\n+14152000602,A,gold,9\n"),
			422, parley.EValidation, []string{"unknown columns: nickname, custom_shoe_size", "custom_loyalty_tier", "first_name"}},
		{"NoPhoneColumn", []byte("first_name,last_name\nAnn,Lee\n"), 422, parley.EValidation, []string{"no phone_number column"}},
		{"SameColumnTwice", []byte("phone_number,First_Name,first_name\n+14152000603,A,B\n"), 422, parley.EValidation,
			[]string{"same column"}},
		{"UnnamedColumn", []byte("phone_number,,first_name\n+14152000604,x,A\n"), 422, parley.EValidation, []string{"column 2"}},
		{"Latin1", []byte("phone_number,first_name\n+14152000605,Zo\xEB\n"), 415, parley.EUnsupportedMediaType,
			[]string{"line 2 is not valid UTF-8"}},
		{"UTF16", []byte("\xFF\xFEp\x00h\x00o\x00n\x00e\x00"), 415, parley.EUnsupportedMediaType, []string{"UTF-16"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := impUpload(t, e, e.A, "users.csv", tc.content, nil)
			ae := wantAPIError(t, resp.Err(), tc.status, tc.typ)
			for _, s := range tc.contains {
				if !strings.Contains(ae.Msg, s) {
					t.Errorf("msg %q does not say %q", ae.Msg, s)
				}
			}
			if ae.Field != "file" {
				t.Errorf("field = %q, want file", ae.Field)
			}
			impNothingStored(t, e, state)
		})
	}
}

// TestImportSizeLimit: a file over the limit (100 MiB by default,
// configurable) is 413 payload_too_large and nothing is stored; a file of
// exactly the limit is taken.
func TestImportSizeLimit(t *testing.T) {
	t.Parallel()
	const limit = 4096
	e := apitest.New(t, func(c *app.Config) { c.MaxImportSize = limit })
	state := e.State(t)
	sized := func(n int) []byte {
		b := []byte("phone_number,first_name\n+14152000701,")
		return append(b, bytes.Repeat([]byte("x"), n-len(b))...)
	}
	t.Run("OneByteOver", func(t *testing.T) {
		resp := impUpload(t, e, e.A, "users.csv", sized(limit+1), nil)
		ae := wantAPIError(t, resp.Err(), 413, parley.EPayloadTooLarge)
		if !strings.Contains(ae.Msg, "4096") {
			t.Errorf("msg %q does not name the limit", ae.Msg)
		}
		impNothingStored(t, e, state)
	})
	t.Run("BodyFarOver", func(t *testing.T) {
		// Over the whole-body bound too: refused while it is read.
		resp := impUpload(t, e, e.A, "users.csv", sized(2<<20), nil)
		wantAPIError(t, resp.Err(), 413, parley.EPayloadTooLarge)
		impNothingStored(t, e, state)
	})
	t.Run("Exact", func(t *testing.T) {
		imp := impCreate(t, e, e.A, string(sized(limit)), nil)
		if imp.TotalRows != 1 {
			t.Errorf("total_rows = %d", imp.TotalRows)
		}
	})
}

// TestImportOptionsAndForm: the form is checked before anything is stored.
func TestImportOptionsAndForm(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	state := e.State(t)
	good := []byte("phone_number\n+14152000801\n")
	for _, tc := range []struct {
		name   string
		fields map[string]string
		field  string
	}{
		{"BadOnDuplicate", map[string]string{"on_duplicate": "sometimes"}, "on_duplicate"},
		{"BadConsentDefault", map[string]string{"messaging_consent_default": "perhaps"}, "messaging_consent_default"},
		{"UnknownField", map[string]string{"dry_run": "true"}, "dry_run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := impUpload(t, e, e.A, "users.csv", good, tc.fields)
			if ae := wantAPIError(t, resp.Err(), 422, parley.EValidation); ae.Field != tc.field {
				t.Errorf("field = %q, want %q", ae.Field, tc.field)
			}
			impNothingStored(t, e, state)
		})
	}
	t.Run("NoFilePart", func(t *testing.T) {
		body, ct := fileMultipart(t, [2]string{`form-data; name="on_duplicate"`, "update"})
		resp, err := e.A.Do(e.Ctx, "POST", "/imports", body, ct)
		if err != nil {
			t.Fatal(err)
		}
		wantAPIError(t, resp.Err(), 422, parley.EValidation)
		impNothingStored(t, e, state)
	})
	t.Run("NotMultipart", func(t *testing.T) {
		resp, err := e.A.Do(e.Ctx, "POST", "/imports", good, "text/csv")
		if err != nil {
			t.Fatal(err)
		}
		wantAPIError(t, resp.Err(), 400, parley.EInvalidRequest)
		impNothingStored(t, e, state)
	})
	t.Run("OptionsBeforeFile", func(t *testing.T) {
		body, ct := fileMultipart(t, [2]string{`form-data; name="on_duplicate"`, "update"},
			[2]string{`form-data; name="file"; filename="../x/contacts.csv"`, string(good)})
		resp, err := e.A.Do(e.Ctx, "POST", "/imports", body, ct)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 201 {
			t.Fatalf("status %d %s", resp.StatusCode, resp.Body)
		}
		imp := impDecode(t, resp.Body)
		if imp.OnDuplicate != parley.OnDuplicateUpdate || imp.FileName != "contacts.csv" {
			t.Errorf("import = %+v, want on_duplicate update and the base name of the file", imp)
		}
	})
}

// impPhones builds a file of n rows numbered from base; rows at dupOf
// repeat an earlier row's number and rows at bad have a bad email.
func impPhones(n, base int, dupOf map[int]int, bad map[int]bool) string {
	var b strings.Builder
	b.WriteString("phone_number,first_name,email_address\n")
	for i := range n {
		num := base + i
		if j, ok := dupOf[i]; ok {
			num = base + j
		}
		email := ""
		if bad[i] {
			email = "nope"
		}
		fmt.Fprintf(&b, "+1415%07d,Row%d,%s\n", num, i, email)
	}
	return b.String()
}

// impExactlyOnce checks that an import of impPhones(n, base, dupOf, bad)
// stored every good row exactly once, reported every bad one exactly once,
// and emitted one user.created per created user.
func impExactlyOnce(t *testing.T, e *apitest.Env, imp *parley.Import, n int, dupOf map[int]int, bad map[int]bool) {
	t.Helper()
	good := int64(n - len(dupOf) - len(bad))
	impWantCounts(t, imp, good, 0, 0, int64(len(dupOf)+len(bad)))
	if got := impQueryInt(t, e, `SELECT count(*) FROM users WHERE brand_id = ?`, e.BrandA.ID); got != good {
		t.Errorf("%d users stored, want %d: a row was imported twice or lost", got, good)
	}
	if got := impQueryInt(t, e, `SELECT count(DISTINCT phone_number) FROM users WHERE brand_id = ?`, e.BrandA.ID); got != good {
		t.Errorf("%d distinct numbers, want %d", got, good)
	}
	if got := impQueryInt(t, e, `SELECT count(*) FROM import_errors WHERE import_id = ?`, imp.ID); got != int64(len(dupOf)+len(bad)) {
		t.Errorf("%d rejected rows recorded, want %d", got, len(dupOf)+len(bad))
	}
	if got := impEvents(t, e, e.BrandA.ID)[parley.EventUserCreated]; got != good {
		t.Errorf("%d user.created events, want %d (one per user)", got, good)
	}
}

// TestImportResumesAfterStop: a run stopped after two committed batches
// (as a crash would stop it) leaves the import at its last batch, though
// its reader had read further (issue #35: it reads ahead of the commits);
// the job then goes on from there and every row is imported exactly once,
// its event emitted once and its error reported once.
func TestImportResumesAfterStop(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.App.Importer.BatchSize = 3
	whCreate(t, e.A, whNewReceiver(t, nil).URL(), parley.EventUserCreated)
	const n = 20
	dupOf, bad := map[int]int{7: 1, 16: 15}, map[int]bool{4: true, 11: true}
	imp := impCreate(t, e, e.A, impPhones(n, 2000900, dupOf, bad), nil)

	ctx, cancel := context.WithCancel(e.Ctx)
	batches := 0
	done, err := e.App.Importer.RunImport(ctx, e.BrandA.ID, imp.ID, service.RunOptions{Progress: func(*parley.Import) {
		if batches++; batches == 2 {
			cancel()
		}
	}})
	if done || !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped run: done %v, err %v; want it stopped by its context", done, err)
	}
	mid := impGet(t, e, e.A, imp.ID)
	if mid.Status != parley.ImportRunning || mid.ProcessedRows != 6 {
		t.Fatalf("after 2 batches of 3: %+v, want running with 6 rows processed", mid)
	}
	if got := impQueryInt(t, e, `SELECT count(*) FROM users WHERE brand_id = ?`, e.BrandA.ID); got != mid.Created {
		t.Fatalf("%d users stored, import says %d created: progress and rows did not commit together", got, mid.Created)
	}

	impStart(t, e) // the queued job picks the import up where it stopped
	impExactlyOnce(t, e, impWait(t, e, e.A, imp.ID), n, dupOf, bad)
}

// TestImportConcurrentRuns: two runs of one import at once (a job taken
// over while its first run still works) never import a row twice.
func TestImportConcurrentRuns(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.App.Importer.BatchSize = 4
	whCreate(t, e.A, whNewReceiver(t, nil).URL(), parley.EventUserCreated)
	const n = 60
	dupOf, bad := map[int]int{10: 2, 41: 40}, map[int]bool{5: true, 33: true}
	imp := impCreate(t, e, e.A, impPhones(n, 2001000, dupOf, bad), nil)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				done, err := e.App.Importer.RunImport(e.Ctx, e.BrandA.ID, imp.ID, service.RunOptions{})
				if err != nil || done {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a run failed: %v", err)
		}
	}
	impExactlyOnce(t, e, impGet(t, e, e.A, imp.ID), n, dupOf, bad)
}

// TestImportIsolation: brand B can neither read brand A's import nor its
// errors, nor see it listed, and A's import touches only A's users.
func TestImportIsolation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	imp := impRun(t, e, e.A, "phone_number\n+14152001101\nnope\n", nil)
	for _, path := range []string{fmt.Sprintf("/imports/%d", imp.ID), fmt.Sprintf("/imports/%d/errors", imp.ID)} {
		resp, err := e.B.Do(e.Ctx, "GET", path, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		ae := wantAPIError(t, resp.Err(), 404, parley.ENotFound)
		if ae.Msg != fmt.Sprintf("Import with ID [%d] not found.", imp.ID) {
			t.Errorf("msg = %q", ae.Msg)
		}
	}
	resp, err := e.B.Do(e.Ctx, "GET", "/imports", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != `{"data":[],"next_cursor":null}` {
		t.Errorf("brand B's list = %s, want empty", resp.Body)
	}
	if _, err := e.B.FindUserByPhone(e.Ctx, "+14152001101"); err == nil {
		t.Error("brand B sees a user brand A imported")
	}
	for _, path := range []string{"/imports/0", "/imports/x", "/imports/01/errors"} {
		resp, err := e.A.Do(e.Ctx, "GET", path, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		wantAPIError(t, resp.Err(), 422, parley.EValidation)
	}
}

// TestImportList: GET /imports pages the brand's imports newest first
// (D8's list shape).
func TestImportList(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	var ids []int64
	for i := range 3 {
		ids = append(ids, impCreate(t, e, e.A, fmt.Sprintf("phone_number\n+1415200120%d\n", i), nil).ID)
	}
	type page struct {
		Data       []json.RawMessage `json:"data"`
		NextCursor *string           `json:"next_cursor"`
	}
	get := func(q string) page {
		resp, err := e.A.Do(e.Ctx, "GET", "/imports"+q, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("GET /imports%s = %d %s", q, resp.StatusCode, resp.Body)
		}
		var p page
		if err := json.Unmarshal(resp.Body, &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := get("?limit=2")
	if len(p.Data) != 2 || p.NextCursor == nil {
		t.Fatalf("first page: %d items, cursor %v", len(p.Data), p.NextCursor)
	}
	first, second := impDecode(t, p.Data[0]), impDecode(t, p.Data[1])
	p2 := get("?limit=2&cursor=" + *p.NextCursor)
	if len(p2.Data) != 1 || p2.NextCursor != nil {
		t.Fatalf("second page: %d items, cursor %v", len(p2.Data), p2.NextCursor)
	}
	third := impDecode(t, p2.Data[0])
	if got := []int64{first.ID, second.ID, third.ID}; !slices.Equal(got, []int64{ids[2], ids[1], ids[0]}) {
		t.Errorf("ids %v, want newest first %v", got, ids)
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?cursor=nope"} {
		resp, err := e.A.Do(e.Ctx, "GET", "/imports"+q, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		wantAPIError(t, resp.Err(), 422, parley.EValidation)
	}
}

// TestImportFails: an import that cannot go on (here its stored file is
// gone) is retried; on the job's last attempt it ends as failed, with a
// message and a completion date, and runs no more.
func TestImportFails(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	imp := impCreate(t, e, e.A, "phone_number\n+14152001301\n", nil)
	it := e.App.Bucket.List(&blob.ListOptions{Prefix: "imports/"})
	obj, err := it.Next(e.Ctx)
	if err != nil {
		t.Fatalf("the uploaded file is not in the blob store: %v", err)
	}
	if err := e.App.Bucket.Delete(e.Ctx, obj.Key); err != nil {
		t.Fatal(err)
	}
	if done, err := e.App.Importer.Work(e.Ctx, e.BrandA.ID, imp.ID, time.Time{}, false); done || err == nil {
		t.Fatalf("run without its file: done %v err %v, want an error to retry", done, err)
	}
	if got := impGet(t, e, e.A, imp.ID); got.Status != parley.ImportQueued {
		t.Errorf("status after a failed attempt = %s, want queued (it will be retried)", got.Status)
	}
	if _, err := e.App.Importer.Work(e.Ctx, e.BrandA.ID, imp.ID, time.Time{}, true); err == nil {
		t.Fatal("last attempt without its file succeeded")
	}
	got := impGet(t, e, e.A, imp.ID)
	if got.Status != parley.ImportFailed || got.Error == nil || !strings.Contains(*got.Error, "could not be completed") ||
		got.DateCompleted == nil {
		t.Errorf("after the last attempt: %+v, want failed with a message and a date", got)
	}
	if strings.Contains(impVal(got.Error).(string), "no such file") {
		t.Errorf("error %q leaks internals", *got.Error)
	}
	if done, err := e.App.Importer.Work(e.Ctx, e.BrandA.ID, imp.ID, time.Time{}, false); !done || err != nil {
		t.Errorf("a failed import ran again: done %v err %v", done, err)
	}
}
