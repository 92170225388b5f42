package httpapi_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// isoPDF is a minimal document whose sniffed type is application/pdf (D9).
const isoPDF = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"

// isoNeverUsedFile is a UUID v4 no brand has uploaded.
const isoNeverUsedFile = "0f8fad5b-d9cb-469f-a165-70867728950e"

// isoAnswer is the comparable part of an answer: status and, for an error,
// type, msg and field, with the requested id in msg replaced by <id>.
type isoAnswer struct {
	status           int
	typ, msg, field  string
	body             string // success answers: the raw body
	normalizedFromID string
}

func isoRead(t *testing.T, r authResp, id string) isoAnswer {
	t.Helper()
	a := isoAnswer{status: r.status, normalizedFromID: id}
	if r.status < 300 {
		a.body = string(r.body)
		return a
	}
	a.typ, a.msg, a.field = authEnvelope(t, r.body)
	// Messages quote the id in brackets: "User with ID [7] not found."
	a.msg = strings.ReplaceAll(a.msg, "["+id+"]", "[<id>]")
	return a
}

// isoSame asserts that brand B's answer about brand A's resource equals its
// answer about a resource that never existed.
func isoSame(t *testing.T, foreign, never isoAnswer) {
	t.Helper()
	if foreign.status != never.status || foreign.typ != never.typ || foreign.msg != never.msg ||
		foreign.field != never.field || foreign.body != never.body {
		t.Errorf("brand B can tell brand A's resource %s from a never-used one:\n A's:   %+v\n never: %+v",
			foreign.normalizedFromID, foreign, never)
	}
}

// isoWorld is brand A's data and brand B's own user.
type isoWorld struct {
	e       *apitest.Env
	userA   *parley.User
	fileA   *parley.File
	msgA    *parley.Message
	userB   *parley.User
	neverID int64
}

func isoSetup(t *testing.T) *isoWorld {
	t.Helper()
	e := apitest.New(t)
	w := &isoWorld{e: e}
	w.userA = e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{FirstName: parley.Some("Ann")}})
	var err error
	if w.fileA, err = e.A.UploadFile(e.Ctx, "a.pdf", strings.NewReader(isoPDF)); err != nil {
		t.Fatalf("UploadFile: %v", err)
	}
	if w.msgA, err = e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(w.userA.ID),
		Body: parley.Some("hello"), MediaItemUUIDs: parley.Some([]string{w.fileA.ID})}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	// B needs a user of its own, so that a message with A's media gets as
	// far as the media check.
	w.userB = e.MustCreateUser(t, e.B, parley.UserCreate{PhoneNumber: parley.Some("+14155552672")})
	w.neverID = max(w.userA.ID, w.userB.ID, w.msgA.ID) + 1000
	return w
}

// b sends a signed request as brand B.
func (w *isoWorld) b(t *testing.T, method, path string, body []byte) authResp {
	t.Helper()
	resp, err := w.e.B.Do(t.Context(), method, path, body, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	return authResp{status: resp.StatusCode, header: resp.Header, body: resp.Body}
}

func TestIsolationForeignIDsLookMissing(t *testing.T) {
	t.Parallel()
	w := isoSetup(t)
	e := w.e
	aUser := strconv.FormatInt(w.userA.ID, 10)
	aMsg := strconv.FormatInt(w.msgA.ID, 10)
	never := strconv.FormatInt(w.neverID, 10)
	bUser := strconv.FormatInt(w.userB.ID, 10)
	before := e.State(t)

	cases := []struct {
		name       string
		method     string
		path       func(id string) string
		body       func(id string) []byte
		foreignID  string
		neverID    string
		wantStatus int
		wantType   string
	}{
		{name: "GetUser", method: "GET", path: func(id string) string { return "/api/v1/users/" + id },
			foreignID: aUser, neverID: never, wantStatus: 404, wantType: parley.EUserNotFound},
		{name: "UpdateUser", method: "POST", path: func(id string) string { return "/api/v1/users/" + id },
			body:      func(string) []byte { return []byte(`{"first_name":"Mallory","messaging_consent":false}`) },
			foreignID: aUser, neverID: never, wantStatus: 404, wantType: parley.EUserNotFound},
		{name: "UpdateUserEmptyBody", method: "POST", path: func(id string) string { return "/api/v1/users/" + id },
			body:      func(string) []byte { return []byte(`{}`) },
			foreignID: aUser, neverID: never, wantStatus: 404, wantType: parley.EUserNotFound},
		{name: "DeleteUser", method: "DELETE", path: func(id string) string { return "/api/v1/users/" + id },
			foreignID: aUser, neverID: never, wantStatus: 404, wantType: parley.EUserNotFound},
		{name: "FindUserByPhone", method: "GET", path: func(p string) string { return "/api/v1/users?phone_number=%2B" + p[1:] },
			foreignID: "+14155552671", neverID: "+14155552673", wantStatus: 404, wantType: parley.EUserNotFound},
		{name: "SendMessageToUser", method: "POST", path: func(string) string { return "/api/v1/messages" },
			body:      func(id string) []byte { return []byte(`{"user_id":` + id + `,"body":"hi"}`) },
			foreignID: aUser, neverID: never, wantStatus: 404, wantType: parley.EUserNotFound},
		{name: "GetMessage", method: "GET", path: func(id string) string { return "/api/v1/messages/" + id },
			foreignID: aMsg, neverID: never, wantStatus: 404, wantType: parley.ENotFound},
		{name: "ListMessagesOfUser", method: "GET", path: func(id string) string { return "/api/v1/messages?user_id=" + id },
			foreignID: aUser, neverID: never, wantStatus: 200},
		{name: "GetFile", method: "GET", path: func(id string) string { return "/api/v1/files/" + id },
			foreignID: w.fileA.ID, neverID: isoNeverUsedFile, wantStatus: 404, wantType: parley.ENotFound},
		{name: "SendMessageWithMedia", method: "POST", path: func(string) string { return "/api/v1/messages" },
			body: func(id string) []byte {
				return []byte(`{"user_id":` + bUser + `,"body":"hi","media_item_uuids":["` + id + `"]}`)
			},
			foreignID: w.fileA.ID, neverID: isoNeverUsedFile, wantStatus: 422, wantType: parley.EInvalidMediaItem},
		{name: "SendMediaOnlyMessage", method: "POST", path: func(string) string { return "/api/v1/messages" },
			body: func(id string) []byte {
				return []byte(`{"user_id":` + bUser + `,"media_item_uuids":["` + id + `"]}`)
			},
			foreignID: w.fileA.ID, neverID: isoNeverUsedFile, wantStatus: 422, wantType: parley.EInvalidMediaItem},
	}
	for _, tc := range cases {
		t.Run(tc.name+"AnswersLikeMissing", func(t *testing.T) {
			var fb, nb []byte
			if tc.body != nil {
				fb, nb = tc.body(tc.foreignID), tc.body(tc.neverID)
			}
			fr := w.b(t, tc.method, tc.path(tc.foreignID), fb)
			nr := w.b(t, tc.method, tc.path(tc.neverID), nb)
			foreign, nev := isoRead(t, fr, tc.foreignID), isoRead(t, nr, tc.neverID)
			if nev.status != tc.wantStatus || nev.typ != tc.wantType {
				t.Errorf("never-used id: %d %s %q, want %d %s", nev.status, nev.typ, nev.msg, tc.wantStatus, tc.wantType)
			}
			isoSame(t, foreign, nev)
			if tc.wantStatus >= 300 && !strings.Contains(nev.msg, "[<id>]") {
				t.Errorf("msg %q does not quote the id; the comparison would not be modulo the id", nev.msg)
			}
			if e.State(t) != before {
				t.Errorf("brand B's %s on brand A's resource changed the database", tc.name)
			}
		})
	}

	// The list answer is B's (empty) list, not A's message.
	t.Run("ListMessagesOfForeignUserEmpty", func(t *testing.T) {
		r := w.b(t, "GET", "/api/v1/messages?user_id="+aUser, nil)
		var page struct {
			Data []json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 || len(page.Data) != 0 {
			t.Errorf("B lists A's user's messages: %d %s", r.status, r.body)
		}
		all := w.b(t, "GET", "/api/v1/messages", nil)
		if bytes.Contains(all.body, []byte(`"hello"`)) {
			t.Errorf("B's message list contains A's message: %s", all.body)
		}
	})

	// A still sees everything as it was.
	t.Run("BrandADataUnchanged", func(t *testing.T) {
		u, err := e.A.GetUser(e.Ctx, w.userA.ID)
		if err != nil || u.IsDeleted || u.FirstName == nil || *u.FirstName != "Ann" || u.MessagingConsent != nil {
			t.Errorf("A's user after B's attempts = %+v, %v", u, err)
		}
		if _, err := e.A.GetFile(e.Ctx, w.fileA.ID); err != nil {
			t.Errorf("A's file: %v", err)
		}
		m, err := e.A.GetMessage(e.Ctx, w.msgA.ID)
		if err != nil || m.Body != "hello" {
			t.Errorf("A's message = %+v, %v", m, err)
		}
		msgs, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: w.userA.ID})
		if err != nil || len(msgs) != 1 || msgs[0].ID != w.msgA.ID {
			t.Errorf("A's messages of its user = %v, %v; want exactly message %d", msgs, err, w.msgA.ID)
		}
		if got, err := e.A.FindUserByPhone(e.Ctx, "+14155552671"); err != nil || got.ID != w.userA.ID {
			t.Errorf("A's lookup = %v, %v", got, err)
		}
	})
}

// Positive control: each request of the table above, made by brand A on its
// own resource, succeeds, so B's 404s come from brand scoping and not from
// a malformed request.
func TestIsolationOwnerSucceeds(t *testing.T) {
	t.Parallel()
	w := isoSetup(t)
	e := w.e
	aUser := strconv.FormatInt(w.userA.ID, 10)
	for _, tc := range []struct {
		name, method, path, body string
		want                     int
	}{
		{"GetUser", "GET", "/api/v1/users/" + aUser, "", 200},
		{"FindUserByPhone", "GET", "/api/v1/users?phone_number=%2B14155552671", "", 200},
		{"GetMessage", "GET", "/api/v1/messages/" + strconv.FormatInt(w.msgA.ID, 10), "", 200},
		{"GetFile", "GET", "/api/v1/files/" + w.fileA.ID, "", 200},
		{"SendMessageWithMedia", "POST", "/api/v1/messages", `{"user_id":` + aUser + `,"body":"hi","media_item_uuids":["` + w.fileA.ID + `"]}`, 201},
		{"SendMediaOnlyMessage", "POST", "/api/v1/messages", `{"user_id":` + aUser + `,"media_item_uuids":["` + w.fileA.ID + `"]}`, 201},
		{"SendMessageToUser", "POST", "/api/v1/messages", `{"user_id":` + aUser + `,"body":"hi"}`, 201},
		{"UpdateUser", "POST", "/api/v1/users/" + aUser, `{"first_name":"Mallory"}`, 200},
		{"DeleteUser", "DELETE", "/api/v1/users/" + aUser, "", 200},
	} {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		resp, err := e.A.Do(e.Ctx, tc.method, tc.path, body, "application/json")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.want {
			t.Errorf("A's own %s = %d %s, want %d", tc.name, resp.StatusCode, resp.Body, tc.want)
		}
	}
}

func TestIsolationSamePhoneNumberPerBrand(t *testing.T) {
	t.Parallel()
	// Both brands hold a user with the same number: each lookup, read,
	// update and delete reaches only the caller's own user (D5).
	e := apitest.New(t)
	ua := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{FirstName: parley.Some("Ann")}})
	ub := e.MustCreateUser(t, e.B, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{FirstName: parley.Some("Bob")}})
	if ua.ID == ub.ID {
		t.Fatal("two brands' users share an id")
	}
	got, err := e.B.FindUserByPhone(e.Ctx, "+14155552671")
	if err != nil || got.ID != ub.ID {
		t.Fatalf("B's lookup = %+v, %v; want B's user %d", got, err, ub.ID)
	}
	if _, err := e.B.DeleteUser(e.Ctx, ub.ID); err != nil {
		t.Fatal(err)
	}
	// B's user is gone; A's user with the same number is still not B's.
	_, err = e.B.FindUserByPhone(e.Ctx, "+14155552671")
	wantAPIError(t, err, 404, parley.EUserNotFound)
	got, err = e.A.FindUserByPhone(e.Ctx, "+14155552671")
	if err != nil || got.ID != ua.ID || got.IsDeleted || *got.FirstName != "Ann" {
		t.Errorf("A's user after B deleted its own = %+v, %v", got, err)
	}
}
