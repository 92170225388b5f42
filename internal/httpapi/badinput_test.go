package httpapi_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// badEndpoint is a JSON-body endpoint with a body it would accept.
type badEndpoint struct {
	name string
	path string
	// valid is a body the endpoint accepts (and that changes the database).
	valid string
	// member is the prefix of valid, an object left open, to which a
	// member can be appended: member + `,"foo":1}`.
	member string
}

// badSetup starts a server with one user of brand A and returns the three
// JSON-body endpoints.
func badSetup(t *testing.T) (*apitest.Env, *parley.User, []badEndpoint) {
	t.Helper()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	id := strconv.FormatInt(u.ID, 10)
	return e, u, []badEndpoint{
		{"CreateUser", "/api/v1/users", `{"phone_number":"+14155552672"}`, `{"phone_number":"+14155552672"`},
		{"UpdateUser", "/api/v1/users/" + id, `{"first_name":"Zed"}`, `{"first_name":"Zed"`},
		{"SendMessage", "/api/v1/messages", `{"user_id":` + id + `,"body":"hi"}`, `{"user_id":` + id + `,"body":"hi"`},
	}
}

// badDo sends a properly signed request as brand A.
func badDo(t *testing.T, e *apitest.Env, method, path string, body []byte, contentType string) authResp {
	t.Helper()
	resp, err := e.A.Do(t.Context(), method, path, body, contentType)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return authResp{status: resp.StatusCode, header: resp.Header, body: resp.Body}
}

// badWant checks an error answer and that the database did not change.
func badWant(t *testing.T, e *apitest.Env, r authResp, before string, status int, typ string) string {
	t.Helper()
	msg := authWantError(t, r, status, typ)
	if e.State(t) != before {
		t.Errorf("a rejected request (%d %s) changed the database", status, typ)
	}
	return msg
}

func TestBadInputValidBodiesAccepted(t *testing.T) {
	t.Parallel()
	// Positive control for the cases below: every endpoint accepts its valid
	// body, so each rejection is caused by the defect under test.
	e, _, eps := badSetup(t)
	for _, ep := range eps {
		before := e.State(t)
		r := badDo(t, e, "POST", ep.path, []byte(ep.valid), "application/json")
		if r.status != 200 && r.status != 201 {
			t.Errorf("%s with %s = %d %s, want success", ep.name, ep.valid, r.status, r.body)
		}
		if e.State(t) == before {
			t.Errorf("%s with a valid body changed nothing", ep.name)
		}
		// The member form must be a valid prefix of the body.
		if ep.member+"}" != ep.valid {
			t.Fatalf("test setup: member %q is not the open form of %q", ep.member, ep.valid)
		}
	}
	r := badDo(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+14155552673"}`), "application/json; charset=utf-8")
	if r.status != 201 {
		t.Errorf("Content-Type application/json; charset=utf-8 = %d %s, want 201", r.status, r.body)
	}
}

func TestBadInputNotAJSONObject(t *testing.T) {
	t.Parallel()
	e, _, eps := badSetup(t)
	before := e.State(t)
	for _, ep := range eps {
		bodies := []struct{ name, body string }{
			{"BrokenJSON", `{"phone_number":`},
			{"UnquotedKey", `{phone_number:"+14155552672"}`},
			{"SingleQuotes", `{'first_name':'Zed'}`},
			{"TrailingComma", ep.member + `,}`},
			{"UnclosedObject", ep.member},
			{"Array", `[` + ep.valid + `]`},
			{"EmptyArray", `[]`},
			{"String", `"` + strings.ReplaceAll(ep.valid, `"`, `\"`) + `"`},
			{"Number", `42`},
			{"Null", `null`},
			{"Boolean", `true`},
			{"Empty", ``},
			{"Whitespace", " \n\t "},
			{"TrailingGarbage", ep.valid + ` x`},
			{"TrailingObject", ep.valid + `{}`},
			{"TrailingSecondCopy", ep.valid + ep.valid},
			{"TrailingBracket", ep.valid + `]`},
			{"TrailingNull", ep.valid + ` null`},
			{"NotUTF8JSON", "\xff\xfe{}"},
		}
		for _, b := range bodies {
			t.Run(ep.name+"/"+b.name+"Is400", func(t *testing.T) {
				r := badDo(t, e, "POST", ep.path, []byte(b.body), "application/json")
				badWant(t, e, r, before, http.StatusBadRequest, parley.EInvalidRequest)
			})
		}
	}
}

func TestBadInputWrongContentType(t *testing.T) {
	t.Parallel()
	e, _, eps := badSetup(t)
	before := e.State(t)
	for _, ep := range eps {
		for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
			"application/jsonp", "text/json", "application/json;;"} {
			name := ct
			if name == "" {
				name = "missing"
			}
			t.Run(ep.name+"/"+name+"Is400", func(t *testing.T) {
				r := badDo(t, e, "POST", ep.path, []byte(ep.valid), ct)
				badWant(t, e, r, before, http.StatusBadRequest, parley.EInvalidRequest)
			})
		}
	}
}

func TestBadInputTooLarge(t *testing.T) {
	t.Parallel()
	e, _, eps := badSetup(t)
	before := e.State(t)
	const limit = 1 << 20
	for _, ep := range eps {
		// A JSON object of exactly n bytes: the valid body plus a huge unknown member.
		padded := func(n int) []byte {
			head := ep.member + `,"foo":"`
			tail := `"}`
			return []byte(head + strings.Repeat("x", n-len(head)-len(tail)) + tail)
		}
		t.Run(ep.name+"/Over1MiBIs413", func(t *testing.T) {
			body := padded(limit + 1)
			if len(body) != limit+1 {
				t.Fatalf("test setup: body is %d bytes", len(body))
			}
			r := badDo(t, e, "POST", ep.path, body, "application/json")
			badWant(t, e, r, before, http.StatusRequestEntityTooLarge, parley.EPayloadTooLarge)
		})
		t.Run(ep.name+"/Over1MiBChunkedIs413", func(t *testing.T) {
			// No Content-Length: the limit must hold while reading too (D4).
			body := padded(limit + 1)
			h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", ep.path, body, e.Now())
			r := badSendChunked(t, e, ep.path, body, h)
			badWant(t, e, r, before, http.StatusRequestEntityTooLarge, parley.EPayloadTooLarge)
		})
		t.Run(ep.name+"/Exactly1MiBIs422", func(t *testing.T) {
			body := padded(limit)
			if len(body) != limit {
				t.Fatalf("test setup: body is %d bytes", len(body))
			}
			r := badDo(t, e, "POST", ep.path, body, "application/json")
			msg := badWant(t, e, r, before, http.StatusUnprocessableEntity, parley.EValidation)
			if msg != "foo: unknown field" {
				t.Errorf("msg = %q, want %q: a body of exactly 1 MiB is read and decoded (D4)", msg, "foo: unknown field")
			}
		})
	}
}

// badSendChunked sends a POST whose length is not announced.
func badSendChunked(t *testing.T, e *apitest.Env, path string, body []byte, hdr http.Header) authResp {
	t.Helper()
	// Over a connection of its own: the server answers 413 and closes while
	// the body is still being sent, and an http.Client may then report the
	// broken write instead of the answer that came first.
	conn, err := net.Dial("tcp", e.Server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, err := http.NewRequestWithContext(t.Context(), "POST", e.Server.URL+path, io.NopCloser(bytes.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	req.Header = hdr.Clone()
	go req.Write(conn) // chunked, as ContentLength is -1; a write the server cut short is expected
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return authResp{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestBadInputUnknownMember(t *testing.T) {
	t.Parallel()
	e, _, eps := badSetup(t)
	before := e.State(t)
	for _, ep := range eps {
		t.Run(ep.name+"/FooIs422", func(t *testing.T) {
			r := badDo(t, e, "POST", ep.path, []byte(ep.member+`,"foo":1}`), "application/json")
			msg := badWant(t, e, r, before, http.StatusUnprocessableEntity, parley.EValidation)
			if msg != "foo: unknown field" {
				t.Errorf("msg = %q, want %q (D4)", msg, "foo: unknown field")
			}
			if _, _, field := authEnvelope(t, r.body); field != "" && field != "foo" {
				t.Errorf("field = %q, want foo (D3)", field)
			}
		})
		t.Run(ep.name+"/NullUnknownMemberIs422", func(t *testing.T) {
			r := badDo(t, e, "POST", ep.path, []byte(ep.member+`,"foo":null}`), "application/json")
			msg := badWant(t, e, r, before, http.StatusUnprocessableEntity, parley.EValidation)
			if msg != "foo: unknown field" {
				t.Errorf("msg = %q, want %q (D4)", msg, "foo: unknown field")
			}
		})
		t.Run(ep.name+"/CaseVariantIs422", func(t *testing.T) {
			// D4: members are matched exactly; "Foo" is not "foo", and a
			// differently cased known member is unknown, not an alias.
			r := badDo(t, e, "POST", ep.path, []byte(ep.member+`,"Foo":1}`), "application/json")
			msg := badWant(t, e, r, before, http.StatusUnprocessableEntity, parley.EValidation)
			if msg != "Foo: unknown field" {
				t.Errorf("msg = %q, want %q (D4)", msg, "Foo: unknown field")
			}
		})
	}
}

func TestBadInputUpdateNotAllowed(t *testing.T) {
	t.Parallel()
	e, u, _ := badSetup(t)
	path := "/api/v1/users/" + strconv.FormatInt(u.ID, 10)
	before := e.State(t)
	for _, tc := range []struct{ name, body, msg string }{
		{"PhoneNumberIs422", `{"phone_number":"+14155552679"}`, "phone_number: not allowed on update"},
		{"PhoneNumberWithOthersIs422", `{"first_name":"Zed","phone_number":"+14155552679"}`, "phone_number: not allowed on update"},
		{"PhoneNumberNullIs422", `{"phone_number":null}`, "phone_number: not allowed on update"},
		{"ChannelIs422", `{"channel":"SHOPIFY"}`, "channel: not allowed on update"},
		{"ChannelWithOthersIs422", `{"first_name":"Zed","channel":"FILE"}`, "channel: not allowed on update"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := badDo(t, e, "POST", path, []byte(tc.body), "application/json")
			msg := badWant(t, e, r, before, http.StatusUnprocessableEntity, parley.EValidation)
			if msg != tc.msg {
				t.Errorf("msg = %q, want %q (D4)", msg, tc.msg)
			}
		})
	}
}

func TestBadInputPathID(t *testing.T) {
	t.Parallel()
	e, u, _ := badSetup(t)
	before := e.State(t)
	ids := []string{"abc", "0", "-1", "1.5", "99999999999999999999", "1e3", "0x1", "%2B" + strconv.FormatInt(u.ID, 10), "0" + strconv.FormatInt(u.ID, 10), "%20" + strconv.FormatInt(u.ID, 10)}
	for _, id := range ids {
		for _, m := range []struct {
			method, prefix string
			body           []byte
		}{
			{"GET", "/api/v1/users/", nil},
			{"POST", "/api/v1/users/", []byte(`{"first_name":"Zed"}`)},
			{"DELETE", "/api/v1/users/", nil},
			{"GET", "/api/v1/messages/", nil},
		} {
			t.Run(m.method+"_"+strings.TrimSuffix(strings.TrimPrefix(m.prefix, "/api/v1/"), "/")+"_"+id+"Is422", func(t *testing.T) {
				r := badDo(t, e, m.method, m.prefix+id, m.body, "application/json")
				msg := badWant(t, e, r, before, http.StatusUnprocessableEntity, parley.EValidation)
				// D3: validation_error msg names the field and the rule.
				param := "user_id"
				if strings.Contains(m.prefix, "messages") {
					param = "message_id"
				}
				if !strings.HasPrefix(msg, param+": ") {
					t.Errorf("msg = %q, want it to name %s (D3)", msg, param)
				}
			})
		}
	}
	// Positive control: the same requests with the real id work.
	if _, err := e.A.GetUser(e.Ctx, u.ID); err != nil {
		t.Errorf("GET with a valid id: %v", err)
	}
}

func TestBadInputFindByPhone(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	before := e.State(t)

	find := func(t *testing.T, query string) authResp {
		t.Helper()
		return badDo(t, e, "GET", "/api/v1/users"+query, nil, "")
	}
	t.Run("MissingParameterIs422", func(t *testing.T) {
		for _, q := range []string{"", "?", "?phone=%2B14155552671", "?phone_number", "?phone_number="} {
			msg := badWant(t, e, find(t, q), before, http.StatusUnprocessableEntity, parley.EValidation)
			if !strings.HasPrefix(msg, "phone_number: ") {
				t.Errorf("query %q: msg = %q, want it to name phone_number (D3, D5)", q, msg)
			}
		}
	})
	t.Run("EncodedPlusFound", func(t *testing.T) {
		r := find(t, "?phone_number=%2B14155552671")
		if r.status != 200 || !bytes.Contains(r.body, []byte(`"id":`+strconv.FormatInt(u.ID, 10)+`,`)) {
			t.Errorf("lookup = %d %s, want user %d", r.status, r.body, u.ID)
		}
	})
	t.Run("LiteralPlusFound", func(t *testing.T) {
		// A literal '+' in a query decodes as a space; D5 reads it as '+'.
		r := find(t, "?phone_number=+14155552671")
		if r.status != 200 || !bytes.Contains(r.body, []byte(`"id":`+strconv.FormatInt(u.ID, 10)+`,`)) {
			t.Errorf("lookup with a literal + = %d %s, want user %d (D5)", r.status, r.body, u.ID)
		}
	})
	for _, tc := range []struct{ name, query, value string }{
		{"TooShortIs422", "?phone_number=%2B1415555267", "+1415555267"},
		{"TooShortLiteralPlusIs422", "?phone_number=+1415555267", "+1415555267"},
		{"LettersIs422", "?phone_number=abc", "abc"},
		{"NoPlusIs422", "?phone_number=14155552671", "14155552671"},
		{"TooLongIs422", "?phone_number=%2B141555526710000000000", "+141555526710000000000"},
	} {
		t.Run("Invalid"+tc.name, func(t *testing.T) {
			msg := badWant(t, e, find(t, tc.query), before, http.StatusUnprocessableEntity, parley.EInvalidPhoneNumber)
			if want := "Invalid phone number [" + tc.value + "] provided."; msg != want {
				t.Errorf("msg = %q, want %q (D5)", msg, want)
			}
		})
	}
	for _, tc := range []struct{ name, query string }{
		{"UnknownEncodedIs404", "?phone_number=%2B14155552672"},
		{"UnknownLiteralPlusIs404", "?phone_number=+14155552672"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := badWant(t, e, find(t, tc.query), before, http.StatusNotFound, parley.EUserNotFound)
			if want := "User with phone number [+14155552672] not found."; msg != want {
				t.Errorf("msg = %q, want %q (D5)", msg, want)
			}
		})
	}
	t.Run("DeletedUserIs404", func(t *testing.T) {
		if _, err := e.A.DeleteUser(e.Ctx, u.ID); err != nil {
			t.Fatal(err)
		}
		after := e.State(t)
		msg := badWant(t, e, find(t, "?phone_number=%2B14155552671"), after, http.StatusNotFound, parley.EUserNotFound)
		if want := "User with phone number [+14155552671] not found."; msg != want {
			t.Errorf("msg = %q, want %q (D5)", msg, want)
		}
	})
}
