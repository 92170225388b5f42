package httpapi_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// impRejected fetches the rejected-rows file (D22), the default of
// GET /imports/{id}/errors.
func impRejected(t testing.TB, e *apitest.Env, c *client.Client, id int64) []byte {
	t.Helper()
	resp, err := c.Do(e.Ctx, "GET", fmt.Sprintf("/imports/%d/errors", id), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("GET errors = %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Body)
	}
	return resp.Body
}

// TestImportNationalNumbers: a number without "+" is a national number of
// the import's default_country, the brand's setting unless the form sends
// one, after stripping spaces, -, ., ( and ); a 1 before ten US digits is
// the country code (D22).
func TestImportNationalNumbers(t *testing.T) {
	t.Parallel()
	e := admEnv(t)
	impStart(t, e)
	imp := impRun(t, e, e.A, "phone_number,first_name\n"+
		"305.876.7787,Dot\n"+
		"(212) 555-0100,Paren\n"+
		"1-212-555-0101,Trunk\n"+
		"+44 20 7946 0958,London\n"+
		"212 555,Short\n", nil)
	if imp.DefaultCountry != "US" {
		t.Errorf("default_country = %q, want US (the brand's default)", imp.DefaultCountry)
	}
	impWantCounts(t, imp, 4, 0, 0, 1)
	for phone, name := range map[string]string{"+13058767787": "Dot", "+12125550100": "Paren", "+12125550101": "Trunk", "+442079460958": "London"} {
		if u := impUser(t, e, e.A, phone); *u.FirstName != name {
			t.Errorf("%s is %q, want %q", phone, *u.FirstName, name)
		}
	}
	impWantErrors(t, impErrors(t, e, e.A, imp.ID), [][3]string{{"6", "phone_number", parley.EInvalidPhoneNumber}})

	// The form's default_country, then the brand's setting.
	imp = impRun(t, e, e.A, "phone_number\n020 7946 0959\n", map[string]string{"default_country": "gb"})
	impWantCounts(t, imp, 1, 0, 0, 0)
	impUser(t, e, e.A, "+442079460959")
	if st, body := admDo(t, e, admTok, "POST", "/brands/"+itoa(e.BrandA.ID)+"/settings", map[string]any{"default_country": "DE"}); st != 200 {
		t.Fatalf("settings: %d %v", st, body)
	}
	imp = impRun(t, e, e.A, "phone_number\n030 901821\n", nil)
	if imp.DefaultCountry != "DE" || imp.Created != 1 {
		t.Errorf("import %+v, want default_country DE from the brand's setting and one created", imp)
	}
	impUser(t, e, e.A, "+4930901821")

	resp := impUpload(t, e, e.A, "users.csv", []byte("phone_number\n3058767787\n"), map[string]string{"default_country": "XX"})
	if resp.StatusCode != 422 || !bytes.Contains(resp.Body, []byte(`"default_country"`)) {
		t.Errorf("default_country XX: %d %s, want 422 naming default_country", resp.StatusCode, resp.Body)
	}
}

// TestImportEnumAnyCase: an enum value matches ASCII case-insensitively
// and is stored as the enum spells it, in a LIST too (D22).
func TestImportEnumAnyCase(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Tier", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"Gold", "Silver"}})
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Tags", CustomDataType: parley.CustomList,
		Subtype: parley.CustomString, AvailableEnumValues: []string{"VIP", "News"}})
	imp := impRun(t, e, e.A, "phone_number,custom_tier,custom_tags\n"+
		"+14155550001,gold,vip|NEWS\n"+
		"+14155550002,SILVER,\n"+
		"+14155550003,Bronze,\n", nil)
	impWantCounts(t, imp, 2, 0, 0, 1)
	if u := impUser(t, e, e.A, "+14155550001"); string(u.CustomData) != `{"tags":["VIP","News"],"tier":"Gold"}` {
		t.Errorf("custom_data %s, want the enum's spelling", u.CustomData)
	}
	if u := impUser(t, e, e.A, "+14155550002"); string(u.CustomData) != `{"tier":"Silver"}` {
		t.Errorf("custom_data %s, want Silver", u.CustomData)
	}
}

// TestImportEveryErrorOfARow: a row is reported with every one of its
// errors, not only the first (D22).
func TestImportEveryErrorOfARow(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	expFields(t, e, e.BrandA.ID)
	imp := impRun(t, e, e.A, "phone_number,email_address,date_of_birth,messaging_consent,custom_visits\n"+
		"12,ann@,13/45/2000,maybe,many\n"+
		"+14155550002,bob@example.com,,,3\n", nil)
	impWantCounts(t, imp, 1, 0, 0, 1)
	impWantErrors(t, impErrors(t, e, e.A, imp.ID), [][3]string{
		{"2", "phone_number", parley.EInvalidPhoneNumber},
		{"2", "messaging_consent", parley.EValidation},
		{"2", "email_address", parley.EValidation},
		{"2", "date_of_birth", parley.EValidation},
		{"2", "custom_visits", parley.EInvalidCustomData},
	})
	recs, err := csv.NewReader(bytes.NewReader(impRejected(t, e, e.A, imp.ID))).ReadAll()
	if err != nil || len(recs) != 2 {
		t.Fatalf("rejected rows %v, %v: want the header and one row", recs, err)
	}
	msg := recs[1][5]
	for _, want := range []string{"Invalid phone number [12]", "messaging_consent:", "email_address:", "date_of_birth:", "custom_visits:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors cell %q does not say %q", msg, want)
		}
	}
}

// TestImportRejectedRowsRoundTrip: the rejected-rows file is the uploaded
// header and each rejected row's cells exactly, plus an errors column;
// fixed, it uploads again as it is (the errors column is ignored) and
// imports (D22).
func TestImportRejectedRowsRoundTrip(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	file := "Phone_Number;first_name;email_address;custom_visits\n" +
		"+14155550001;Ann;ann@example.com;1\n" +
		"(415) 555-0002;\"Bob, Jr.\";bob@;x\n" +
		"+14155550003;Cy;cy at example;\n" +
		"+14155550001;Ann again;;\n"
	expFields(t, e, e.BrandA.ID)
	imp := impRun(t, e, e.A, file, nil)
	impWantCounts(t, imp, 1, 0, 0, 3)
	got := string(impRejected(t, e, e.A, imp.ID))
	if !strings.HasPrefix(got, "Phone_Number;first_name;email_address;custom_visits;errors\n") ||
		!strings.Contains(got, "\n(415) 555-0002;Bob, Jr.;bob@;x;\"email_address: must be an email address (name@example.com); custom_visits: ") ||
		!strings.Contains(got, "\n+14155550003;Cy;cy at example;;email_address:") ||
		!strings.Contains(got, "\n+14155550001;Ann again;;;Duplicate entry for '+14155550001': line 2 of the file has this number\n") {
		t.Fatalf("rejected rows:\n%s\nwant the uploaded header and cells and an errors column", got)
	}
	if n := strings.Count(got, "\n"); n != 4 {
		t.Errorf("rejected rows have %d lines, want the header and 3 rows", n)
	}
	// Fix the file as a marketer would, in place, and upload it as it is.
	fixed := strings.NewReplacer("bob@;x", "bob@example.com;2", "cy at example;", "cy@example.com;",
		"+14155550001;Ann again", "+14155550004;Ann again").Replace(got)
	imp = impRun(t, e, e.A, fixed, nil)
	impWantCounts(t, imp, 3, 0, 0, 0)
	if u := impUser(t, e, e.A, "+14155550002"); *u.FirstName != "Bob, Jr." || string(u.CustomData) != `{"visits":2}` {
		t.Errorf("fixed row imported as %q %s", *u.FirstName, u.CustomData)
	}
	// Still wrong after the fix: the file has one errors column, the new errors.
	imp = impRun(t, e, e.A, "phone_number,errors,first_name\n+1415,old error,Dee\n", nil)
	impWantCounts(t, imp, 0, 0, 0, 1)
	if got := string(impRejected(t, e, e.A, imp.ID)); got != "phone_number,first_name,errors\n+1415,Dee,Invalid phone number [+1415] provided.\n" {
		t.Errorf("rejected rows of a rejected-rows file:\n%s", got)
	}
}

// TestImportMapping: the form field mapping reads a file's columns as the
// contact fields it names, "" leaving a column out (D22).
func TestImportMapping(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	expFields(t, e, e.BrandA.ID)
	file := "Mobile,Name,Visits,Notes\n(415) 555-0011,Eve,4,call back\n"
	imp := impRun(t, e, e.A, file, map[string]string{"mapping": `{"Mobile":"phone_number","Name":"first_name","Visits":"custom_visits","Notes":""}`})
	impWantCounts(t, imp, 1, 0, 0, 0)
	if !maps.Equal(imp.Mapping, map[string]string{"Mobile": "phone_number", "Name": "first_name", "Visits": "custom_visits", "Notes": ""}) {
		t.Errorf("mapping = %v", imp.Mapping)
	}
	if u := impUser(t, e, e.A, "+14155550011"); *u.FirstName != "Eve" || string(u.CustomData) != `{"visits":4}` {
		t.Errorf("mapped row imported as %q %s", *u.FirstName, u.CustomData)
	}
	for _, m := range []string{`{"Mobile":"phone_number","Cell":"first_name"}`, `{"Mobile":"phone_number","Name":"nickname"}`, `["Mobile"]`} {
		resp := impUpload(t, e, e.A, "users.csv", []byte(file), map[string]string{"mapping": m})
		if resp.StatusCode != 422 || !bytes.Contains(resp.Body, []byte(`"mapping"`)) {
			t.Errorf("mapping %s: %d %s, want 422 naming mapping", m, resp.StatusCode, resp.Body)
		}
	}
	// Without a mapping the same header is unknown columns, as before.
	if resp := impUpload(t, e, e.A, "users.csv", []byte(file), nil); resp.StatusCode != 422 {
		t.Errorf("unmapped: %d, want 422", resp.StatusCode)
	}
}
