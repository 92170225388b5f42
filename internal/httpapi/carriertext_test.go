package httpapi_test

import (
	"encoding/json"
	"io"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// carrierCases are texts a carrier may send that the API would refuse: each
// is stored, cleaned and cut as parley.CarrierText says (#31 item 8).
var carrierCases = []struct {
	name, body, want string
	truncated        bool
}{
	{"NUL", "a\x00b", "a\uFFFDb", false},
	{"Escape", "\x1b[31mred", "\uFFFD[31mred", false},
	{"Lines", "line 1\r\nline 2\tend", "line 1\r\nline 2\tend", false},
	{"Longest", strings.Repeat("é", parley.MaxMessageBody), strings.Repeat("é", parley.MaxMessageBody), false},
	{"TooLong", strings.Repeat("x", parley.MaxMessageBody) + "cut off", strings.Repeat("x", parley.MaxMessageBody), true},
	{"TooLongWithNUL", "\x00" + strings.Repeat("y", 3000), "\uFFFD" + strings.Repeat("y", parley.MaxMessageBody-1), true},
}

// wantCarrierText checks a stored inbound message against its case, as
// answered and as read back through the API.
func wantCarrierText(t *testing.T, e *apitest.Env, m *parley.Message, want string, truncated bool) {
	t.Helper()
	got, err := e.A.GetMessage(e.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*parley.Message{m, got} {
		if g.Body != want || g.BodyTruncated != truncated {
			t.Errorf("stored body %.30q… (%d chars), body_truncated %v; want %.30q… (%d chars), %v",
				g.Body, utf8.RuneCountInString(g.Body), g.BodyTruncated, want, utf8.RuneCountInString(want), truncated)
		}
	}
}

// TestTwilioInboundCarrierText: a signed Twilio inbound whose Body holds
// NUL or other controls, invalid UTF-8, or more than 1,600 characters is
// stored (200, never 500: before, NUL was a 500 on PostgreSQL and the
// message was lost), cleaned and cut with body_truncated set (#31 item 8).
// An unreadable To or MessageSid does not fail the engine either.
func TestTwilioInboundCarrierText(t *testing.T) {
	t.Parallel()
	e, _, _ := twEnv(t)
	path := "/providers/twilio/inbound"
	post := func(t *testing.T, sid, to, body string) string {
		t.Helper()
		form := url.Values{"MessageSid": {sid}, "From": {"+14155552671"}, "To": {to}, "Body": {body}, "NumMedia": {"0"}}
		r := twPost(t, e, path, form, twSign(e.Server.URL+path, form))
		twiml, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 {
			t.Fatalf("inbound %.30q = %d %s, want 200", body, r.StatusCode, twiml)
		}
		return string(twiml)
	}
	find := func(t *testing.T) *parley.Message {
		t.Helper()
		u, err := e.A.FindUserByPhone(e.Ctx, "+14155552671")
		if err != nil {
			t.Fatal(err)
		}
		ms, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID, Limit: 1})
		if err != nil || len(ms) != 1 {
			t.Fatalf("latest message: %v %v", ms, err)
		}
		return ms[0]
	}
	for i, c := range carrierCases {
		t.Run(c.name, func(t *testing.T) {
			post(t, "SMtext"+itoa(int64(i)), e.BrandA.PhoneNumber, c.body)
			wantCarrierText(t, e, find(t), c.want, c.truncated)
		})
	}
	t.Run("InvalidUTF8", func(t *testing.T) {
		post(t, "SMutf8", e.BrandA.PhoneNumber, "caf\xe9 \xff")
		wantCarrierText(t, e, find(t), "caf\uFFFD \uFFFD", false)
	})
	t.Run("SidWithNUL", func(t *testing.T) {
		before := e.Count(t, "messages")
		for range 2 { // a retry of the same callback is still one message
			post(t, "SM\x00sid", e.BrandA.PhoneNumber, "sid")
		}
		if n := e.Count(t, "messages"); n != before+1 {
			t.Errorf("%d messages stored for one callback sent twice, want 1", n-before)
		}
		wantCarrierText(t, e, find(t), "sid", false)
	})
	t.Run("ToWithNUL", func(t *testing.T) {
		// Users and messages: the jobs of the texts before may still run.
		state := func() string {
			return e.Snapshot(t, "SELECT * FROM users ORDER BY id") + e.Snapshot(t, "SELECT * FROM messages ORDER BY id")
		}
		before := state()
		if twiml := post(t, "SMto", e.BrandA.PhoneNumber+"\x00", "to nobody"); strings.Contains(twiml, "<Message>") {
			t.Errorf("answer to an unknown number: %s", twiml)
		}
		if state() != before {
			t.Error("an inbound text to an unreadable number changed the database")
		}
	})
}

// TestSimulatorInboundCarrierText: the simulator's inbound body stands for
// a carrier's text (D12), so it is stored as Twilio's would be — cleaned
// and cut, 201 — where the API refuses the same text in POST /messages
// (#31 item 8). Its from is API input and still refused.
func TestSimulatorInboundCarrierText(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, c := range carrierCases {
		t.Run(c.name, func(t *testing.T) {
			wantCarrierText(t, e, simMessage(t, simInbound(t, e, "+14155552671", c.body)), c.want, c.truncated)
		})
	}
	t.Run("InvalidUTF8", func(t *testing.T) {
		b := `{"from":"+14155552671","body":"caf` + "\xe9" + `"}`
		m := simMessage(t, hardSend(t, e, "POST", simPath, b, "Content-Type", "application/json"))
		wantCarrierText(t, e, m, "caf\uFFFD", false)
	})
	t.Run("FromWithNUL", func(t *testing.T) {
		before := e.State(t)
		b, _ := json.Marshal(map[string]string{"from": "+1415555\x002671", "body": "hi"})
		r := hardSend(t, e, "POST", simPath, string(b), "Content-Type", "application/json")
		authWantError(t, r, 422, parley.EValidation)
		if e.State(t) != before {
			t.Error("a refused simulated inbound changed the database")
		}
	})
}

// TestTwilioStatusCarrierText: a status callback's error text is a
// carrier's text too: NUL or invalid UTF-8 in ErrorMessage is stored
// cleaned (not a 500 on PostgreSQL, after which the report was lost),
// and a MessageSid with NUL names no message (#31 item 8).
func TestTwilioStatusCarrierText(t *testing.T) {
	t.Parallel()
	e, _, _ := twEnv(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("Hi")})
	if err != nil {
		t.Fatal(err)
	}
	dlvWait(t, e, m.ID, parley.StatusSent)
	path := "/providers/twilio/status"
	post := func(form url.Values) {
		t.Helper()
		r := twPost(t, e, path, form, twSign(e.Server.URL+path, form))
		if r.StatusCode/100 != 2 {
			b, _ := io.ReadAll(r.Body)
			t.Fatalf("status callback %v = %d %s, want 2xx", form, r.StatusCode, b)
		}
	}
	// The messages alone: the send's job may still be finishing.
	messages := func() string { return e.Snapshot(t, "SELECT * FROM messages ORDER BY id") }
	before := messages()
	post(url.Values{"MessageSid": {"SM0123456789abcdef\x00"}, "MessageStatus": {"delivered"}, "AccountSid": {twSID}})
	if messages() != before {
		t.Error("a report naming an unreadable MessageSid changed the database")
	}
	post(url.Values{"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "MessageStatus": {"undelivered"},
		"ErrorCode": {"30003"}, "ErrorMessage": {"Unreachable\x00 handset \xff"}, "AccountSid": {twSID}})
	got, err := e.A.GetMessage(e.Ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != parley.StatusUndelivered || got.ErrorMessage == nil || *got.ErrorMessage != "Unreachable\uFFFD handset \uFFFD" {
		t.Errorf("after the report: %s, error_message %v; want undelivered with the text cleaned", got.Status, impVal(got.ErrorMessage))
	}
}
