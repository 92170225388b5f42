package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

func ptr[T any](v T) *T { return &v }

// wantAPIError asserts err is an API error with the status and type.
func wantAPIError(t *testing.T, err error, status int, typ string) *client.Error {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want API error %d %s", err, status, typ)
	}
	if ae.StatusCode != status || ae.Type != typ {
		t.Fatalf("got %d %s (%q), want %d %s", ae.StatusCode, ae.Type, ae.Msg, status, typ)
	}
	return ae
}

func TestCreateUser(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	in := parley.UserCreate{
		PhoneNumber: parley.Some("+1 (415) 555-2671"),
		UserFields: parley.UserFields{
			FirstName:        parley.Some("Ann"),
			LastName:         parley.Some("Lee"),
			EmailAddress:     parley.Some("ann@example.com"),
			DateOfBirth:      parley.Some("02/29/2000"),
			MessagingConsent: parley.Some(true),
			PostalCode:       parley.Some("10001-1234"),
		},
		Channel: parley.Some("shopify"),
	}
	resp := mustDo(t, e.A, "POST", "/users", in)
	if resp.StatusCode != 201 {
		t.Fatalf("status = %d, want 201 (spec: POST /users returns 201)", resp.StatusCode)
	}
	var got map[string]any
	if err := json.Unmarshal(resp.Body, &got); err != nil {
		t.Fatal(err)
	}
	// D5: exactly these members; channel and postal_code are not returned.
	wantKeys := []string{"id", "phone_number", "first_name", "last_name", "email_address", "date_of_birth",
		"messaging_consent", "custom_data", "location", "is_deleted", "date_created", "date_last_updated"}
	if len(got) != len(wantKeys) {
		t.Errorf("members = %v, want exactly %v", keys(got), wantKeys)
	}
	for _, k := range wantKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("member %q missing (D1: nullable members are present as null)", k)
		}
	}
	if got["phone_number"] != "+14155552671" {
		t.Errorf("phone_number = %v, want E.164 +14155552671 (D5)", got["phone_number"])
	}
	loc, _ := got["location"].(map[string]any)
	if loc["postal_code"] != "10001-1234" || loc["city"] != "New York" || loc["state_code"] != "NY" ||
		loc["county"] != "New York" || loc["state"] != "New York" {
		t.Errorf("location = %v, want 10001-1234 New York (D7)", loc)
	}
	if got["custom_data"] != nil {
		t.Errorf("custom_data = %v, want null when not sent (D5)", got["custom_data"])
	}
	created, _ := got["date_created"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", created); err != nil {
		t.Errorf("date_created %q is not RFC 3339 UTC with microseconds (D1)", created)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q (D1)", ct)
	}
	var channel string
	e.App.DB.Writer().QueryRow(fmt.Sprintf("SELECT channel FROM users WHERE id = %v", got["id"])).Scan(&channel)
	if channel != "SHOPIFY" {
		t.Errorf("stored channel = %q, want SHOPIFY (D5: stored, case-insensitive input)", channel)
	}
}

func TestCreateUserMinimal(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	if u.FirstName != nil || u.Location != nil || u.MessagingConsent != nil || string(u.CustomData) != "null" || u.IsDeleted {
		t.Errorf("user = %+v, want nulls and is_deleted false", u)
	}
	if !u.DateCreated.Equal(u.DateLastUpdated.Time) {
		t.Errorf("date_created %v != date_last_updated %v on create", u.DateCreated, u.DateLastUpdated)
	}
}

func TestCreateUserDuplicate(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	before := e.State(t)
	_, err := e.A.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+1 415-555-2671")})
	ae := wantAPIError(t, err, 409, parley.EDuplicate)
	if ae.Msg != "Duplicate entry for '+14155552671'" {
		t.Errorf("msg = %q (D5)", ae.Msg)
	}
	if e.State(t) != before {
		t.Error("a rejected create changed the database")
	}
	// D5: uniqueness is per brand.
	if _, err := e.B.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")}); err != nil {
		t.Errorf("brand B cannot use a number brand A has: %v", err)
	}
}

func TestDeletedUserNumberReusable(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	if _, err := e.A.DeleteUser(e.Ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	u2 := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	if u2.ID == u.ID {
		t.Errorf("re-created user kept id %d; D5 wants a new id", u.ID)
	}
	got, err := e.A.FindUserByPhone(e.Ctx, "+14155552671")
	if err != nil || got.ID != u2.ID {
		t.Errorf("lookup = %v, %v; want the new user %d", got, err, u2.ID)
	}
}

func TestCreateUserValidation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	long := strings.Repeat("é", 51) // 51 runes, 102 bytes: limits count runes (D5)
	tests := []struct {
		name      string
		body      string
		wantType  string
		wantMsg   string // prefix
		wantField string
	}{
		{"PhoneMissing", `{}`, parley.EValidation, "phone_number: required", "phone_number"},
		{"PhoneNull", `{"phone_number":null}`, parley.EValidation, "phone_number: required", "phone_number"},
		{"PhoneWrongType", `{"phone_number":14155552671}`, parley.EValidation, "phone_number: must be a string", "phone_number"},
		{"PhoneNoPlus", `{"phone_number":"14155552671"}`, parley.EInvalidPhoneNumber, "Invalid phone number [14155552671] provided.", "phone_number"},
		{"PhoneInvalid", `{"phone_number":"+1415555267"}`, parley.EInvalidPhoneNumber, "Invalid phone number [+1415555267] provided.", "phone_number"},
		{"PhoneTooLong", `{"phone_number":"+1 (415) 555-2671 0000"}`, parley.EInvalidPhoneNumber, "Invalid phone number", "phone_number"},
		{"PhoneLetters", `{"phone_number":"+1415555CALL"}`, parley.EInvalidPhoneNumber, "Invalid phone number", "phone_number"},
		{"FirstNameTooLong", `{"phone_number":"+14155552671","first_name":"` + long + `"}`, parley.EValidation, "first_name: at most 50 characters", "first_name"},
		{"LastNameTooLong", `{"phone_number":"+14155552671","last_name":"` + long + `"}`, parley.EValidation, "last_name: at most 50 characters", "last_name"},
		{"FirstNameWrongType", `{"phone_number":"+14155552671","first_name":5}`, parley.EValidation, "first_name: must be a string", "first_name"},
		{"EmailInvalid", `{"phone_number":"+14155552671","email_address":"not-an-email"}`, parley.EValidation, "email_address:", "email_address"},
		{"EmailDisplayName", `{"phone_number":"+14155552671","email_address":"Ann <ann@example.com>"}`, parley.EValidation, "email_address:", "email_address"},
		{"EmailTooLong", `{"phone_number":"+14155552671","email_address":"` + strings.Repeat("a", 40) + `@example.com"}`, parley.EValidation, "email_address: at most 50 characters", "email_address"},
		{"DOBFormat", `{"phone_number":"+14155552671","date_of_birth":"2000-01-31"}`, parley.EValidation, "date_of_birth:", "date_of_birth"},
		{"DOBNotADate", `{"phone_number":"+14155552671","date_of_birth":"02/30/2000"}`, parley.EValidation, "date_of_birth:", "date_of_birth"},
		{"DOBNotLeap", `{"phone_number":"+14155552671","date_of_birth":"02/29/2001"}`, parley.EValidation, "date_of_birth:", "date_of_birth"},
		{"DOBUnpadded", `{"phone_number":"+14155552671","date_of_birth":"1/2/2000"}`, parley.EValidation, "date_of_birth:", "date_of_birth"},
		{"DOBFuture", `{"phone_number":"+14155552671","date_of_birth":"01/01/2999"}`, parley.EValidation, "date_of_birth: must not be in the future", "date_of_birth"},
		{"DOBBefore1900", `{"phone_number":"+14155552671","date_of_birth":"12/31/1899"}`, parley.EValidation, "date_of_birth: year must be 1900 or later", "date_of_birth"},
		{"ConsentWrongType", `{"phone_number":"+14155552671","messaging_consent":"yes"}`, parley.EValidation, "messaging_consent: must be a boolean", "messaging_consent"},
		{"PostalEmpty", `{"phone_number":"+14155552671","postal_code":""}`, parley.EInvalidPostalCode, "Invalid postal code", "postal_code"},
		{"PostalLetters", `{"phone_number":"+14155552671","postal_code":"ABCDE"}`, parley.EInvalidPostalCode, "Invalid postal code", "postal_code"},
		{"PostalShort", `{"phone_number":"+14155552671","postal_code":"1234"}`, parley.EInvalidPostalCode, "Invalid postal code", "postal_code"},
		{"PostalBadPlus4", `{"phone_number":"+14155552671","postal_code":"12345-67"}`, parley.EInvalidPostalCode, "Invalid postal code", "postal_code"},
		{"ChannelUnknown", `{"phone_number":"+14155552671","channel":"EMAIL"}`, parley.EValidation, "channel: must be one of FILE, SHOPIFY, KLAVIYO, GORGIAS, SLACK", "channel"},
		{"ChannelLookalikeRune", `{"phone_number":"+14155552671","channel":"\u017fLACK"}`, parley.EValidation, "channel: must be one of", "channel"},
		{"UnknownMember", `{"phone_number":"+14155552671","foo":1}`, parley.EValidation, "foo: unknown field", "foo"},
		{"IsDeletedNotInput", `{"phone_number":"+14155552671","is_deleted":true}`, parley.EValidation, "is_deleted: unknown field", "is_deleted"},
		{"LocationNotInput", `{"phone_number":"+14155552671","location":null}`, parley.EValidation, "location: unknown field", "location"},
	}
	before := e.State(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := e.A.Do(e.Ctx, "POST", "/users", []byte(tt.body), "application/json")
			if err != nil {
				t.Fatal(err)
			}
			ae := wantAPIError(t, resp.Err(), 422, tt.wantType)
			if !strings.HasPrefix(ae.Msg, tt.wantMsg) {
				t.Errorf("msg = %q, want prefix %q", ae.Msg, tt.wantMsg)
			}
			if ae.Field != tt.wantField {
				t.Errorf("field = %q, want %q", ae.Field, tt.wantField)
			}
		})
	}
	if e.State(t) != before {
		t.Error("rejected creates changed the database")
	}
}

func TestPhoneValidationPossible(t *testing.T) {
	t.Parallel()
	// Area code 555 does not exist: such numbers are possible but not valid (D5).
	strict := apitest.New(t)
	_, err := strict.A.CreateUser(strict.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+15555550123")})
	wantAPIError(t, err, 422, parley.EInvalidPhoneNumber)

	loose := apitest.New(t, func(c *app.Config) { c.PhoneValidation = "possible" })
	u, err := loose.A.CreateUser(loose.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+15555550123")})
	if err != nil {
		t.Fatalf("possible mode rejected a possible number: %v", err)
	}
	if u.PhoneNumber != "+15555550123" {
		t.Errorf("phone = %q", u.PhoneNumber)
	}
}

func TestUnknownZIPHasEmptyLocation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{PostalCode: parley.Some("00000")}})
	if u.Location == nil || u.Location.PostalCode == nil || *u.Location.PostalCode != "00000" ||
		u.Location.City != nil || u.Location.County != nil || u.Location.State != nil || u.Location.StateCode != nil ||
		u.Location.TimeZone != nil {
		t.Errorf("location = %+v, want postal_code 00000 and other members null (D7, D17)", u.Location)
	}
}

// TestUserLocationTimeZone: location.time_zone is the IANA zone of the ZIP
// (D17), follows the postal code through updates, is null when the ZIP has
// none, and is stored for segments (D14).
func TestUserLocationTimeZone(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	// location reads the raw answer: the member is present, as a string or null.
	location := func(resp *client.Response) map[string]any {
		t.Helper()
		var got struct {
			Location map[string]any `json:"location"`
		}
		if err := json.Unmarshal(resp.Body, &got); err != nil {
			t.Fatal(err)
		}
		return got.Location
	}
	stored := func(id any) *string {
		t.Helper()
		var tz *string
		q := fmt.Sprintf("SELECT time_zone FROM users WHERE id = %v", id)
		if err := e.App.DB.Writer().QueryRowContext(e.Ctx, q).Scan(&tz); err != nil {
			t.Fatal(err)
		}
		return tz
	}

	resp := mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+14155552671", "postal_code": "90210"})
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
	}
	var u struct{ ID int64 }
	json.Unmarshal(resp.Body, &u)
	loc := location(resp)
	if loc["time_zone"] != "America/Los_Angeles" || len(loc) != 6 {
		t.Errorf("location = %v, want six members with time_zone America/Los_Angeles (D17)", loc)
	}
	if tz := stored(u.ID); tz == nil || *tz != "America/Los_Angeles" {
		t.Errorf("stored time_zone = %v, want America/Los_Angeles (D14 segments read it)", tz)
	}

	path := "/users/" + itoa(u.ID)
	for _, tt := range []struct {
		postal any
		want   any // time_zone; nil for null
	}{
		{"85001-1234", "America/Phoenix"}, // ZIP+4: the zone of its ZIP
		{"46320", "America/Chicago"},      // Hammond, IN
		{"46204", "America/Indiana/Indianapolis"},
		{"00000", nil}, // well-formed, not in the data set
		{"09001", nil}, // APO AA: a military post office, no zone
		{"10001", "America/New_York"},
	} {
		resp := mustDo(t, e.A, "POST", path, map[string]any{"postal_code": tt.postal})
		if resp.StatusCode != 200 {
			t.Fatalf("update to %v: %d %s", tt.postal, resp.StatusCode, resp.Body)
		}
		loc := location(resp)
		if tz, ok := loc["time_zone"]; !ok || tz != tt.want {
			t.Errorf("postal_code %v: location = %v, want time_zone %v (D17)", tt.postal, loc, tt.want)
		}
		got, err := e.A.GetUser(e.Ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got.Location.TimeZone, tt.want; (g == nil) != (w == nil) || g != nil && *g != w {
			t.Errorf("postal_code %v: read back time_zone %v, want %v", tt.postal, impVal(g), w)
		}
		if g, w := stored(u.ID), tt.want; (g == nil) != (w == nil) || g != nil && *g != w {
			t.Errorf("postal_code %v: stored time_zone %v, want %v", tt.postal, impVal(g), w)
		}
	}

	resp = mustDo(t, e.A, "POST", path, map[string]any{"postal_code": nil})
	if resp.StatusCode != 200 || !strings.Contains(string(resp.Body), `"location":null`) {
		t.Errorf("postal_code null: %d %s, want location null (D7)", resp.StatusCode, resp.Body)
	}
	if tz := stored(u.ID); tz != nil {
		t.Errorf("stored time_zone = %q after postal_code null, want NULL", *tz)
	}
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// mustDo sends v as JSON and returns the raw answer.
func mustDo(t *testing.T, c *client.Client, method, path string, v any) *client.Response {
	t.Helper()
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := c.Do(t.Context(), method, path, body, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
