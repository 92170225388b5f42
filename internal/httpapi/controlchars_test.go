package httpapi_test

import (
	"strconv"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// ccSetup starts a server (with the admin API) whose brand A has a user, a
// STRING and a LIST custom data field.
func ccSetup(t *testing.T) (*apitest.Env, *parley.User) {
	t.Helper()
	e := admEnv(t)
	for _, f := range []*parley.CustomField{
		{BrandID: e.BrandA.ID, FieldName: "Note", CustomDataType: parley.CustomString},
		{BrandID: e.BrandA.ID, FieldName: "Tags", CustomDataType: parley.CustomList, Subtype: parley.CustomString},
	} {
		e.MustCreateField(t, f)
	}
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	return e, u
}

// ccState is everything a refused body could have written.
func ccState(t *testing.T, e *apitest.Env) string {
	return e.State(t) + e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id")
}

// TestControlCharsRefused: a C0 control character in any string of any
// JSON body — nested custom_data values and list items included, escaped
// as \u0000 or \t — is 422 naming the member, with the member's D3 type,
// and stores nothing, on SQLite and PostgreSQL alike (#15). Before, SQLite
// stored NUL and PostgreSQL answered 500.
func TestControlCharsRefused(t *testing.T) {
	t.Parallel()
	e, u := ccSetup(t)
	id := strconv.FormatInt(u.ID, 10)
	for _, c := range []struct {
		name, method, path, body string
		typ, field               string
	}{
		{"create first_name NUL", "POST", "/users", `{"phone_number":"+14155552672","first_name":"Ann\u0000"}`, parley.EValidation, "first_name"},
		{"create last_name tab", "POST", "/users", `{"phone_number":"+14155552672","last_name":"\t=1+1"}`, parley.EValidation, "last_name"},
		{"create email LF", "POST", "/users", `{"phone_number":"+14155552672","email_address":"a@example.com\n"}`, parley.EValidation, "email_address"},
		{"create date_of_birth", "POST", "/users", `{"phone_number":"+14155552672","date_of_birth":"01/02/2000\u001f"}`, parley.EValidation, "date_of_birth"},
		{"create phone NUL", "POST", "/users", `{"phone_number":"+1415555\u00002672"}`, parley.EInvalidPhoneNumber, "phone_number"},
		{"create postal_code", "POST", "/users", `{"phone_number":"+14155552672","postal_code":"10001\u0000"}`, parley.EInvalidPostalCode, "postal_code"},
		{"create channel", "POST", "/users", `{"phone_number":"+14155552672","channel":"FILE\b"}`, parley.EValidation, "channel"},
		{"create custom string", "POST", "/users", `{"phone_number":"+14155552672","custom_data":{"note":"a\u0000b"}}`, parley.EInvalidCustomData, "custom_data.note"},
		{"create custom string CR", "POST", "/users", `{"phone_number":"+14155552672","custom_data":{"note":"a\rb"}}`, parley.EInvalidCustomData, "custom_data.note"},
		{"create custom list item", "POST", "/users", `{"phone_number":"+14155552672","custom_data":{"tags":["ok","b\u0007"]}}`, parley.EInvalidCustomData, "custom_data.tags[1]"},
		{"create custom key", "POST", "/users", `{"phone_number":"+14155552672","custom_data":{"no\u0000te":"x"}}`, parley.EInvalidCustomData, "custom_data.no\x00te"},
		{"update first_name", "POST", "/users/" + id, `{"first_name":"\u001b[31mred"}`, parley.EValidation, "first_name"},
		{"update custom list item", "POST", "/users/" + id, `{"custom_data":{"tags":["\f"]}}`, parley.EInvalidCustomData, "custom_data.tags[0]"},
		{"message body NUL", "POST", "/messages", `{"user_id":` + id + `,"body":"hi\u0000"}`, parley.EValidation, "body"},
		{"message type", "POST", "/messages", `{"user_id":` + id + `,"body":"hi","type":"MARKETING\n"}`, parley.EValidation, "type"},
		{"message media item", "POST", "/messages", `{"user_id":` + id + `,"media_item_uuids":["\u0000"]}`, parley.EValidation, "media_item_uuids[0]"},
		{"webhook description NUL", "POST", "/webhooks", `{"url":"http://127.0.0.1:1/h","event_types":["user.created"],"description":"a\u0000"}`, parley.EValidation, "description"},
		{"webhook url tab", "POST", "/webhooks", `{"url":"http://127.0.0.1:1/h\t","event_types":["user.created"]}`, parley.EValidation, "url"},
		{"webhook event type", "POST", "/webhooks", `{"url":"http://127.0.0.1:1/h","event_types":["user.created\u0000"]}`, parley.EValidation, "event_types[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := ccState(t, e)
			r := badDo(t, e, c.method, c.path, []byte(c.body), "application/json")
			authWantError(t, r, 422, c.typ)
			if _, _, field := authEnvelope(t, r.body); field != c.field {
				t.Errorf("field = %q, want %q (%s)", field, c.field, r.body)
			}
			if ccState(t, e) != before {
				t.Errorf("a refused body changed the database")
			}
		})
	}
}

// TestControlCharsLines: tab, LF and CR are text in the members that allow
// lines (a message body, a description), other controls are not; a
// literal backslash is no control (#15).
func TestControlCharsLines(t *testing.T) {
	t.Parallel()
	e, u := ccSetup(t)
	id := strconv.FormatInt(u.ID, 10)
	for _, c := range []struct{ path, body string }{
		{"/messages", `{"user_id":` + id + `,"body":"line 1\r\nline 2\tend"}`},
		{"/webhooks", `{"url":"http://127.0.0.1:1/h","event_types":["user.created"],"description":"a\nb\tc"}`},
		{"/users/" + id, `{"first_name":"back\\nslash \\\\u0000","custom_data":{"note":"C:\\temp"}}`},
	} {
		r := badDo(t, e, "POST", c.path, []byte(c.body), "application/json")
		if r.status != 200 && r.status != 201 {
			t.Errorf("POST %s %s = %d %s, want success", c.path, c.body, r.status, r.body)
		}
	}
	got, err := e.A.GetUser(e.Ctx, u.ID)
	if err != nil || got.FirstName == nil || *got.FirstName != `back\nslash \\u0000` {
		t.Errorf("first_name with backslashes = %v, %v", got, err)
	}
	for _, body := range []string{
		`{"user_id":` + id + `,"body":"a\u0000b"}`,
		`{"user_id":` + id + `,"body":"a\u000bb"}`,
	} {
		before := ccState(t, e)
		r := badDo(t, e, "POST", "/messages", []byte(body), "application/json")
		authWantError(t, r, 422, parley.EValidation)
		if ccState(t, e) != before {
			t.Errorf("a refused message changed the database")
		}
	}
}

// TestControlCharsAdmin: the operators' API decodes through the same check.
func TestControlCharsAdmin(t *testing.T) {
	t.Parallel()
	e, _ := ccSetup(t)
	brand := "/brands/" + strconv.FormatInt(e.BrandA.ID, 10)
	before := ccState(t, e)
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/brands", map[string]any{"name": "Acme\x00", "phone_number": "+14155550199"}, "name"},
		{brand + "/custom_data_fields", map[string]any{"field_name": "Size\x00", "custom_data_type": 3}, "field_name"},
		{brand + "/custom_data_fields", map[string]any{"field_name": "Size", "custom_data_type": 3, "extraction_prompt": "x\x00"}, "extraction_prompt"},
		{brand, map[string]any{"help_reply": "Help\x01"}, "help_reply"},
	} {
		st, out := admDo(t, e, admTok, "POST", c.path, c.body)
		d, _ := out["detail"].(map[string]any)
		if st != 422 || d["type"] != parley.EValidation || d["field"] != c.field {
			t.Errorf("POST %s %v = %d %v, want 422 validation_error on %s", c.path, c.body, st, out, c.field)
		}
	}
	if ccState(t, e) != before {
		t.Errorf("a refused admin body changed the database")
	}
	if st, out := admDo(t, e, admTok, "POST", brand, map[string]any{"help_reply": "Line 1\nLine 2"}); st != 200 {
		t.Errorf("help_reply with a line break = %d %v, want 200", st, out)
	}
}
