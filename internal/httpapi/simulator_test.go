package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// The sim provider's inbound endpoint (D12): a text from a phone to the
// calling brand's number, handled as a carrier's inbound callback is.

const simPath = "/api/v1/simulator/inbound"

// simInbound posts a simulated inbound text as brand A.
func simInbound(t *testing.T, e *apitest.Env, from, body string, extra ...string) authResp {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"from": from, "body": body})
	return hardSend(t, e, "POST", simPath, string(b), append([]string{"Content-Type", "application/json"}, extra...)...)
}

// simMessage decodes a 201 answer as the stored inbound Message.
func simMessage(t *testing.T, r authResp) *parley.Message {
	t.Helper()
	if r.status != http.StatusCreated {
		t.Fatalf("POST %s = %d %s, want 201 (D12)", simPath, r.status, r.body)
	}
	var m parley.Message
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Direction != parley.DirectionInbound || m.Status != parley.StatusDelivered || m.ID < 1 || m.UserID < 1 {
		t.Errorf("answer %s, want a stored inbound, delivered message", r.body)
	}
	return &m
}

func TestSimulatorInbound(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, nil)
	whCreate(t, e.A, rc.URL(), "*")
	const from = "+14155552671"

	// A number the brand does not know: the user is created.
	first := simMessage(t, simInbound(t, e, "+1 (415) 555-2671", "Hello there"))
	u, err := e.A.FindUserByPhone(e.Ctx, from)
	if err != nil {
		t.Fatalf("the sender was not created as a user: %v", err)
	}
	if first.UserID != u.ID || first.Body != "Hello there" {
		t.Errorf("message %+v, want user %d and the body sent", first, u.ID)
	}
	if got, err := e.A.GetMessage(e.Ctx, first.ID); err != nil || got.Body != "Hello there" || got.Direction != parley.DirectionInbound {
		t.Errorf("GET /messages/%d = %+v, %v: not stored as answered", first.ID, got, err)
	}
	if _, err := e.B.FindUserByPhone(e.Ctx, from); err == nil {
		t.Error("brand B got brand A's sender")
	}
	rc.event(t, parley.EventUserCreated, "id", u.ID)
	rc.event(t, parley.EventMessageReceived, "id", first.ID)

	t.Run("OrdinaryTextNoReply", func(t *testing.T) {
		r := simInbound(t, e, from, "STOP please")
		simMessage(t, r)
		if reply := r.header.Get("Parley-Sim-Reply"); reply != "" {
			t.Errorf("reply %q to a text that is not a keyword", reply)
		}
		if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent != nil && !*got.MessagingConsent {
			t.Error("\"STOP please\" unsubscribed the user (D12: whole-message keywords)")
		}
	})
	t.Run("StopUnsubscribes", func(t *testing.T) {
		r := simInbound(t, e, from, " stop ")
		m := simMessage(t, r)
		if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent == nil || *got.MessagingConsent {
			t.Errorf("consent after STOP = %v, want false", got.MessagingConsent)
		}
		if reply := r.header.Get("Parley-Sim-Reply"); !strings.Contains(reply, "unsubscribed") {
			t.Errorf("reply to STOP = %q", reply)
		}
		rc.event(t, parley.EventUserUnsubscribed, "id", u.ID)
		rc.event(t, parley.EventMessageReceived, "id", m.ID)
	})
	t.Run("StartResubscribes", func(t *testing.T) {
		r := simInbound(t, e, from, "Start")
		simMessage(t, r)
		if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent == nil || !*got.MessagingConsent {
			t.Errorf("consent after START = %v, want true", got.MessagingConsent)
		}
		rc.event(t, parley.EventUserSubscribed, "id", u.ID)
	})
	t.Run("HelpReplies", func(t *testing.T) {
		r := simInbound(t, e, from, "HELP")
		simMessage(t, r)
		if got, want := r.header.Get("Parley-Sim-Reply"), "Brand A: Reply STOP to unsubscribe. Msg&data rates may apply."; got != want {
			t.Errorf("reply to HELP = %q, want %q", got, want)
		}
	})
	t.Run("ClientMethod", func(t *testing.T) {
		m, err := e.A.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some("+14155552672"), Body: parley.Some("hi")})
		if err != nil || m.Direction != parley.DirectionInbound || m.Body != "hi" {
			t.Fatalf("SimulateInbound = %+v, %v", m, err)
		}
	})
	t.Run("IdempotencyKeyReplays", func(t *testing.T) {
		first := simMessage(t, simInbound(t, e, from, "once", "Idempotency-Key", "sim-1"))
		again := simInbound(t, e, from, "once", "Idempotency-Key", "sim-1")
		if again.status != http.StatusCreated || again.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(again.body), `"id":`+itoa(first.ID)+`,`) {
			t.Errorf("repeat with the key: %d %v %s, want the first answer replayed (D13)", again.status, again.header, again.body)
		}
		msgs, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range msgs {
			if m.Body == "once" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d messages stored for one keyed request sent twice, want 1", n)
		}
	})
	t.Run("ReplayedSignatureRefused", func(t *testing.T) {
		b := []byte(`{"from":"` + from + `","body":"replayed"}`)
		h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", simPath, b, e.ClientNow())
		h.Set("Content-Type", "application/json")
		simMessage(t, authSend(t, e, "POST", simPath, b, h))
		// Counted, not compared with a snapshot: the sim is still delivering
		// the replies of the texts before, which moves their statuses.
		stored := func() int {
			return e.Count(t, "messages WHERE body = 'replayed'")
		}
		before := stored()
		authWant401(t, authSend(t, e, "POST", simPath, b, h))
		if n := stored(); n != before || n != 1 {
			t.Errorf("%d messages 'replayed' after a copy of the request, want the 1 of the request (D2)", n)
		}
	})
}

func TestSimulatorInboundBadInput(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, tc := range []struct {
		name, body, typ, field string
	}{
		{"Empty", `{}`, parley.EValidation, "from"},
		{"MissingFrom", `{"body":"hi"}`, parley.EValidation, "from"},
		{"NullFrom", `{"from":null,"body":"hi"}`, parley.EValidation, "from"},
		{"EmptyFrom", `{"from":"","body":"hi"}`, parley.EValidation, "from"},
		{"InvalidFrom", `{"from":"12","body":"hi"}`, parley.EInvalidPhoneNumber, "from"},
		{"LettersFrom", `{"from":"call me","body":"hi"}`, parley.EInvalidPhoneNumber, "from"},
		{"MissingBody", `{"from":"+14155552671"}`, parley.EValidation, "body"},
		{"EmptyBody", `{"from":"+14155552671","body":""}`, parley.EValidation, "body"},
		{"NullBody", `{"from":"+14155552671","body":null}`, parley.EValidation, "body"},
		{"UnknownMember", `{"from":"+14155552671","body":"hi","to":"+14155550100"}`, parley.EValidation, "to"},
		{"NumberBody", `{"from":"+14155552671","body":7}`, parley.EValidation, "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.State(t)
			r := hardSend(t, e, "POST", simPath, tc.body, "Content-Type", "application/json")
			msg := authWantError(t, r, http.StatusUnprocessableEntity, tc.typ)
			if !strings.HasPrefix(msg, tc.field) {
				t.Errorf("msg %q does not name %s", msg, tc.field)
			}
			if e.State(t) != before {
				t.Error("a refused simulated inbound changed the database")
			}
		})
	}
}

// With any provider but sim the path does not exist (D12).
func TestSimulatorInboundOnlyWithSim(t *testing.T) {
	t.Parallel()
	e, _, _ := twEnv(t)
	// Users and messages only: the started workers' own jobs change river_job.
	stored := func() string {
		return e.Snapshot(t, "SELECT * FROM users ORDER BY id") + e.Snapshot(t, "SELECT * FROM messages ORDER BY id")
	}
	before := stored()
	r := simInbound(t, e, "+14155552671", "STOP")
	authWantError(t, r, http.StatusNotFound, parley.ENotFound)
	if stored() != before {
		t.Error("the simulator endpoint changed the database with the twilio provider")
	}
}
