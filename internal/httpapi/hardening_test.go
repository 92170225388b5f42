package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/httpapi"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/signing"
)

// keyed sends a request like hardSend with an Idempotency-Key. Its answer
// is stored by the time it comes back.
func keyed(t *testing.T, e *apitest.Env, method, target, body, key string) authResp {
	t.Helper()
	return hardSend(t, e, method, target, body, "Idempotency-Key", key)
}

// hardSend signs a request as brand A at the client clock's next second
// (so two calls never share a signature) and adds extra headers.
func hardSend(t *testing.T, e *apitest.Env, method, target, body string, extra ...string) authResp {
	t.Helper()
	var b []byte
	if body != "" || method == "POST" {
		b = []byte(body)
	}
	h := authHeaders(e.CredA.Username, e.CredA.Secret, method, target, b, e.ClientNow())
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return authSend(t, e, method, target, b, h)
}

func wantError(t *testing.T, r authResp, status int, typ string) string {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d %s, want %d %s", r.status, r.body, status, typ)
	}
	got, msg, _ := authEnvelope(t, r.body)
	if got != typ {
		t.Fatalf("type %q (%s), want %q", got, msg, typ)
	}
	return msg
}

// TestIdempotencyReplaysFirstResponse: a repeat of a POST with the same
// key and request gets the stored response, marked, and does nothing (D13).
func TestIdempotencyReplaysFirstResponse(t *testing.T) {
	e := apitest.New(t)
	body := `{"phone_number":"+14155552671","first_name":"Ada"}`
	first := keyed(t, e, "POST", "/api/v1/users", body, "create-ada")
	if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %s, replayed header %q", first.status, first.body, first.header.Get("Idempotent-Replayed"))
	}
	before := e.State(t)
	events := e.Count(t, "events")
	for range 2 {
		again := keyed(t, e, "POST", "/api/v1/users", body, "create-ada")
		if again.status != 201 || string(again.body) != string(first.body) {
			t.Fatalf("repeat: %d %s, want the first response 201 %s", again.status, again.body, first.body)
		}
		if got := again.header.Get("Idempotent-Replayed"); got != "true" {
			t.Errorf("Idempotent-Replayed = %q, want true", got)
		}
		if ct := again.header.Get("Content-Type"); ct != first.header.Get("Content-Type") {
			t.Errorf("Content-Type %q, want %q", ct, first.header.Get("Content-Type"))
		}
	}
	if e.State(t) != before || e.Count(t, "events") != events {
		t.Error("a replayed request changed the database")
	}

	// Sends are the costly case: one message, one delivery job.
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672"), UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
	msg := fmt.Sprintf(`{"user_id":%d,"body":"Your order shipped"}`, u.ID)
	m1 := keyed(t, e, "POST", "/api/v1/messages", msg, "order-1234-shipped")
	m2 := keyed(t, e, "POST", "/api/v1/messages", msg, "order-1234-shipped")
	if m1.status != 201 || m2.status != 201 || string(m1.body) != string(m2.body) {
		t.Fatalf("sends: %d %s / %d %s", m1.status, m1.body, m2.status, m2.body)
	}
	if n := e.Count(t, "messages"); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
	// Without a key the same send runs twice: keys are opt-in.
	hardSend(t, e, "POST", "/api/v1/messages", msg)
	hardSend(t, e, "POST", "/api/v1/messages", msg)
	if n := e.Count(t, "messages"); n != 3 {
		t.Errorf("%d messages, want 3", n)
	}

}

// TestIdempotencyStoresErrors: the first response is stored whatever it
// was, so a rejected request replays its rejection (D13).
func TestIdempotencyStoresErrors(t *testing.T) {
	e := apitest.New(t)
	body := `{"phone_number":"+1415"}`
	first := keyed(t, e, "POST", "/api/v1/users", body, "k")
	wantError(t, first, 422, parley.EInvalidPhoneNumber)
	again := keyed(t, e, "POST", "/api/v1/users", body, "k")
	wantError(t, again, 422, parley.EInvalidPhoneNumber)
	if again.header.Get("Idempotent-Replayed") != "true" {
		t.Error("a replayed 422 is not marked Idempotent-Replayed")
	}
}

// TestIdempotencyKeyReused: the key with another body or path is 409
// idempotency_key_reused and changes nothing (D13).
func TestIdempotencyKeyReused(t *testing.T) {
	e := apitest.New(t)
	if r := keyed(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552671"}`, "k1"); r.status != 201 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	before := e.State(t)
	for _, c := range []struct{ target, body string }{
		{"/api/v1/users", `{"phone_number":"+14155552672"}`}, // another body
		{"/api/v1/users/1", `{"first_name":"Ada"}`},          // another path
	} {
		r := keyed(t, e, "POST", c.target, c.body, "k1")
		msg := wantError(t, r, 409, parley.EIdempotencyReused)
		if !strings.Contains(msg, "k1") {
			t.Errorf("msg %q does not name the key", msg)
		}
	}
	if e.State(t) != before {
		t.Error("a reused key changed the database")
	}
}

// TestIdempotencyPerBrand: brand B's key space is its own; it never sees
// brand A's stored response (D13).
func TestIdempotencyPerBrand(t *testing.T) {
	e := apitest.New(t)
	body := `{"phone_number":"+14155552671"}`
	a := keyed(t, e, "POST", "/api/v1/users", body, "same")
	h := authHeaders(e.CredB.Username, e.CredB.Secret, "POST", "/api/v1/users", []byte(body), e.ClientNow())
	h.Set("Idempotency-Key", "same")
	b := authSend(t, e, "POST", "/api/v1/users", []byte(body), h)
	if a.status != 201 || b.status != 201 || b.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("A %d, B %d (replayed %q): want both created", a.status, b.status, b.header.Get("Idempotent-Replayed"))
	}
	var ua, ub parley.User
	json.Unmarshal(a.body, &ua)
	json.Unmarshal(b.body, &ub)
	if ua.ID == ub.ID {
		t.Error("brand B got brand A's user")
	}
}

// TestIdempotencyKeyValidation: an empty or over-long key is 422 and
// nothing runs (issue #6).
func TestIdempotencyKeyValidation(t *testing.T) {
	e := apitest.New(t)
	before := e.State(t)
	for _, key := range []string{"", strings.Repeat("k", 256)} {
		r := keyed(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552671"}`, key)
		if key == "" {
			// http.Header.Set keeps an empty value; make sure it was sent.
			h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", []byte(`{"phone_number":"+14155552671"}`), e.ClientNow())
			h["Idempotency-Key"] = []string{""}
			r = authSend(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+14155552671"}`), h)
		}
		msg := wantError(t, r, 422, parley.EValidation)
		if !strings.Contains(msg, "Idempotency-Key") {
			t.Errorf("msg %q does not name the header", msg)
		}
	}
	if e.State(t) != before {
		t.Error("a rejected key changed the database")
	}
	r := keyed(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552671"}`, strings.Repeat("k", 255))
	if r.status != 201 {
		t.Errorf("a 255-character key: %d %s, want 201", r.status, r.body)
	}
	// Only POSTs honour the header: elsewhere even a bad key is ignored.
	wantError(t, hardSend(t, e, "DELETE", "/api/v1/users/999", "", "Idempotency-Key", strings.Repeat("k", 300)), 404, parley.EUserNotFound)
}

// TestIdempotencyConcurrent: requests racing with one key run once; the
// others get its answer, replayed, or 409 idempotency_key_in_use (D13).
func TestIdempotencyConcurrent(t *testing.T) {
	e := apitest.New(t)
	body := `{"phone_number":"+14155552671"}`
	const n = 12
	res := make([]authResp, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = hardSend(t, e, "POST", "/api/v1/users", body, "Idempotency-Key", "race")
		}()
	}
	wg.Wait()
	ran := 0
	for _, r := range res {
		switch {
		case r.status == 201 && r.header.Get("Idempotent-Replayed") == "":
			ran++
		case r.status == 201:
		case r.status == 409:
			wantError(t, r, 409, parley.EIdempotencyInUse)
			if r.header.Get("Retry-After") == "" {
				t.Error("idempotency_key_in_use without Retry-After")
			}
		default:
			t.Errorf("unexpected %d %s", r.status, r.body)
		}
	}
	if ran != 1 || e.Count(t, "users") != 1 {
		t.Errorf("%d requests ran, %d users; want exactly 1", ran, e.Count(t, "users"))
	}
}

// TestIdempotencyExpiry: after 24 h the key is forgotten and the purge
// deletes it (D13).
func TestIdempotencyExpiry(t *testing.T) {
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672"), UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
	msg := fmt.Sprintf(`{"user_id":%d,"body":"hi"}`, u.ID)
	keyed(t, e, "POST", "/api/v1/messages", msg, "daily")
	e.Advance(24*time.Hour - time.Second)
	if r := keyed(t, e, "POST", "/api/v1/messages", msg, "daily"); r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("within 24 h: %d, not replayed", r.status)
	}
	e.Advance(2 * time.Second)
	if n, err := e.App.DB.PurgeExpired(e.Ctx); err != nil || n < 1 {
		t.Fatalf("PurgeExpired = %d, %v; want the key purged", n, err)
	}
	if n := e.Count(t, "idempotency_keys"); n != 0 {
		t.Errorf("%d keys left after the purge", n)
	}
	r := keyed(t, e, "POST", "/api/v1/messages", msg, "daily")
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after 24 h: %d replayed=%q, want a new run", r.status, r.header.Get("Idempotent-Replayed"))
	}
	if n := e.Count(t, "messages"); n != 2 {
		t.Errorf("%d messages, want 2", n)
	}
}

// TestPurgeRunsPeriodically: a worker node deletes expired signatures and
// keys on its own (issue #6: "purged by a periodic job").
func TestPurgeRunsPeriodically(t *testing.T) {
	e := apitest.New(t)
	hardSend(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552671"}`, "Idempotency-Key", "k")
	if e.Count(t, "seen_signatures") != 1 || e.Count(t, "idempotency_keys") != 1 {
		t.Fatal("nothing to purge")
	}
	e.Advance(25 * time.Hour)
	if err := e.App.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for e.Count(t, "seen_signatures")+e.Count(t, "idempotency_keys") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the expired signature and key were not purged")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplayRejected: the same signed write sent twice runs once; the
// second gets 401 "replayed request" and changes nothing (D2), whatever
// the first got.
func TestReplayRejected(t *testing.T) {
	e := apitest.New(t)
	for _, c := range []struct{ method, target, body string }{
		{"POST", "/api/v1/users", `{"phone_number":"+14155552671"}`},
		{"POST", "/api/v1/users/1", `{"first_name":"Ann"}`},
		{"DELETE", "/api/v1/users/1", ""},
	} {
		var body []byte
		if c.method == "POST" {
			body = []byte(c.body)
		}
		h := authHeaders(e.CredA.Username, e.CredA.Secret, c.method, c.target, body, e.ClientNow())
		first := authSend(t, e, c.method, c.target, body, h)
		if first.status == 401 {
			t.Fatalf("%s %s: first send %d %s", c.method, c.target, first.status, first.body)
		}
		before := e.State(t)
		second := authSend(t, e, c.method, c.target, body, h)
		msg := wantError(t, second, 401, parley.ENotAuthenticated)
		if msg != "HMAC signature verification failed: replayed request" {
			t.Errorf("msg %q", msg)
		}
		if e.State(t) != before {
			t.Errorf("%s %s: the replay changed the database", c.method, c.target)
		}
	}
	// A refused write is recorded too: its copy is a replay.
	h0 := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", []byte(`{"phone_number":"+1415"}`), e.ClientNow())
	wantError(t, authSend(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+1415"}`), h0), 422, parley.EInvalidPhoneNumber)
	wantError(t, authSend(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+1415"}`), h0), 401, parley.ENotAuthenticated)
	// Reads are not writes: the same signed GET may be sent again.
	h := authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", nil, e.ClientNow())
	for range 2 {
		if r := authSend(t, e, "GET", "/api/v1/brand", nil, h); r.status != 200 {
			t.Fatalf("GET again: %d %s", r.status, r.body)
		}
	}
}

// TestReplayOfRefusedWrite: a signed write refused for the state it met
// (409, 404, 422) cannot succeed later as a copy once the state changed —
// re-creating a contact just after it was deleted, say (D2). Each refusal
// is tested with and without an Idempotency-Key, whose refusals take
// another path (stored answers).
func TestReplayOfRefusedWrite(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			e := apitest.New(t)
			send := func(method, target string, body []byte, h http.Header) authResp {
				if keyed {
					h = h.Clone()
					h.Set("Idempotency-Key", "k-"+h.Get("x-service-hmac-sha256")) // one key per request
				}
				return authSend(t, e, method, target, body, h)
			}
			signed := func(method, target string, body []byte) http.Header {
				return authHeaders(e.CredA.Username, e.CredA.Secret, method, target, body, e.ClientNow())
			}
			create := []byte(`{"phone_number":"+14155552671"}`)
			if r := send("POST", "/api/v1/users", create, signed("POST", "/api/v1/users", create)); r.status != 201 {
				t.Fatalf("create: %d %s", r.status, r.body)
			}
			// 409 while the contact exists; the copy after its deletion is a replay.
			dup := signed("POST", "/api/v1/users", create)
			wantError(t, send("POST", "/api/v1/users", create, dup), 409, parley.EDuplicate)
			// 404 for a contact not yet there; the copy once it exists is a replay.
			upd := []byte(`{"first_name":"Eve"}`)
			missing := signed("POST", "/api/v1/users/2", upd)
			wantError(t, send("POST", "/api/v1/users/2", upd, missing), 404, parley.EUserNotFound)
			// 422 from validation, before any transaction: recorded all the same.
			bad := []byte(`{"phone_number":"+1415"}`)
			invalid := signed("POST", "/api/v1/users", bad)
			wantError(t, send("POST", "/api/v1/users", bad, invalid), 422, parley.EInvalidPhoneNumber)
			if r := send("DELETE", "/api/v1/users/1", nil, signed("DELETE", "/api/v1/users/1", nil)); r.status != 200 {
				t.Fatalf("delete: %d %s", r.status, r.body)
			}
			other := []byte(`{"phone_number":"+14155552672"}`)
			if r := send("POST", "/api/v1/users", other, signed("POST", "/api/v1/users", other)); r.status != 201 {
				t.Fatalf("second create: %d %s", r.status, r.body)
			}
			before := e.State(t)
			wantError(t, send("POST", "/api/v1/users", create, dup), 401, parley.ENotAuthenticated)
			wantError(t, send("POST", "/api/v1/users/2", upd, missing), 401, parley.ENotAuthenticated)
			wantError(t, send("POST", "/api/v1/users", bad, invalid), 401, parley.ENotAuthenticated)
			if e.State(t) != before {
				t.Error("a copy of a refused write changed the database")
			}
		})
	}
}

// TestReplayAcrossServers: two servers on one database share what they
// have seen, so a request copied to another node still runs once (D2).
func TestReplayAcrossServers(t *testing.T) {
	e := apitest.New(t)
	other := apitest.Attach(t, e) // a second node: own server, same database
	body := []byte(`{"phone_number":"+14155552671"}`)
	h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, e.ClientNow())
	if r := authSend(t, e, "POST", "/api/v1/users", body, h); r.status != 201 {
		t.Fatalf("node 1: %d %s", r.status, r.body)
	}
	r := authSend(t, other, "POST", "/api/v1/users", body, h)
	wantError(t, r, 401, parley.ENotAuthenticated)
	if n := e.Count(t, "users"); n != 1 {
		t.Errorf("%d users, want 1", n)
	}
}

// TestReplayRememberedUntilSkewEnds: a signature is kept until its x-date
// leaves the clock skew window, then purged (D2).
func TestReplayRememberedUntilSkewEnds(t *testing.T) {
	e := apitest.New(t)
	hardSend(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552671"}`)
	if n := e.Count(t, "seen_signatures"); n != 1 {
		t.Fatalf("%d signatures recorded, want 1", n)
	}
	e.Advance(5 * time.Minute)
	if n, _ := e.App.DB.PurgeExpired(e.Ctx); n != 0 {
		t.Fatalf("purged %d rows inside the skew window", n)
	}
	e.Advance(5 * time.Minute)
	if n, _ := e.App.DB.PurgeExpired(e.Ctx); n != 1 {
		t.Fatalf("purged %d rows after the window, want 1", n)
	}
}

// TestReplayProtectionOff: the switch benchmarks use (--replay-protection=false).
func TestReplayProtectionOff(t *testing.T) {
	e := apitest.New(t, func(c *app.Config) { c.NoReplayProtection = true })
	h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", []byte(`{"phone_number":"+1415"}`), e.ClientNow())
	for range 2 {
		r := authSend(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+1415"}`), h)
		wantError(t, r, 422, parley.EInvalidPhoneNumber)
	}
}

func rateLimited(perSecond float64, burst int) apitest.Option {
	return func(c *app.Config) { c.RateLimit, c.RateBurst = perSecond, burst }
}

// TestRateLimit: each credential has a token bucket; every authenticated
// response says where it stands, and an empty bucket is 429 rate_limited
// with Retry-After, changing nothing (D13).
func TestRateLimit(t *testing.T) {
	e := apitest.New(t, rateLimited(2, 3))
	for i, want := range []string{"2", "1", "0"} {
		r := hardSend(t, e, "GET", "/api/v1/brand", "")
		if r.status != 200 {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.body)
		}
		if got := r.header.Get("RateLimit-Limit"); got != "3" {
			t.Errorf("RateLimit-Limit = %q, want 3 (the bucket)", got)
		}
		if got := r.header.Get("RateLimit-Remaining"); got != want {
			t.Errorf("request %d: RateLimit-Remaining = %q, want %s", i+1, got, want)
		}
	}
	before := e.State(t)
	r := hardSend(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552671"}`)
	msg := wantError(t, r, 429, parley.ERateLimited)
	if !strings.Contains(msg, "Retry after 1 s") {
		t.Errorf("msg %q", msg)
	}
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1 (a token every 0.5 s)", got)
	}
	if got := r.header.Get("RateLimit-Reset"); got != "2" {
		t.Errorf("RateLimit-Reset = %q, want 2 (3 tokens at 2/s)", got)
	}
	if e.State(t) != before {
		t.Error("a limited request changed the database")
	}
	e.Advance(time.Second) // two tokens back
	for i := range 2 {
		if r := hardSend(t, e, "GET", "/api/v1/brand", ""); r.status != 200 {
			t.Fatalf("after refill, request %d: %d", i+1, r.status)
		}
	}
	if r := hardSend(t, e, "GET", "/api/v1/brand", ""); r.status != 429 {
		t.Fatalf("third after refill: %d, want 429", r.status)
	}
}

// TestRateLimitPerCredential: one credential's flood neither slows nor
// limits another's, and a forged request cannot spend a credential's
// tokens (issue #6).
func TestRateLimitPerCredential(t *testing.T) {
	e := apitest.New(t, rateLimited(1, 5))
	// Forged requests in A's name: rejected before the bucket.
	for range 20 {
		h := authHeaders(e.CredA.Username, "not-the-secret-at-all-0123456789abcdefghijk", "GET", "/api/v1/brand", nil, e.ClientNow())
		r := authSend(t, e, "GET", "/api/v1/brand", nil, h)
		if r.status != 401 || r.header.Get("RateLimit-Remaining") != "" {
			t.Fatalf("forged: %d, RateLimit-Remaining %q", r.status, r.header.Get("RateLimit-Remaining"))
		}
	}
	if got := hardSend(t, e, "GET", "/api/v1/brand", "").header.Get("RateLimit-Remaining"); got != "4" {
		t.Fatalf("A's first real request: remaining %q, want 4", got)
	}
	// A floods concurrently until limited.
	var wg sync.WaitGroup
	var mu sync.Mutex
	limited := 0
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := hardSend(t, e, "GET", "/api/v1/brand", ""); r.status == 429 {
				mu.Lock()
				limited++
				mu.Unlock()
			}
		}()
	}
	// B meanwhile is served in full.
	for i := range 5 {
		h := authHeaders(e.CredB.Username, e.CredB.Secret, "GET", "/api/v1/brand", nil, e.ClientNow())
		r := authSend(t, e, "GET", "/api/v1/brand", nil, h)
		if r.status != 200 {
			t.Fatalf("B's request %d during A's flood: %d %s", i+1, r.status, r.body)
		}
		if got, want := r.header.Get("RateLimit-Remaining"), fmt.Sprint(4-i); got != want {
			t.Errorf("B's remaining %q, want %s: A's flood spent B's tokens", got, want)
		}
	}
	wg.Wait()
	if limited != 36 {
		t.Errorf("%d of A's 40 flood requests limited, want 36", limited)
	}
}

// TestCredentialRotation: a rotated credential keeps working through its
// grace period, then stops; the new one works at once (issue #6).
func TestCredentialRotation(t *testing.T) {
	e := apitest.New(t)
	newCred, old, err := e.App.Service.RotateCredential(e.Ctx, e.CredA.Username, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if old.RevokedAt == nil || !old.RevokedAt.Equal(e.Now().Truncate(time.Microsecond).Add(time.Hour)) {
		t.Errorf("old revoked_at %v, want now + 1 h", old.RevokedAt)
	}
	if newCred.Secret == "" || newCred.BrandID != e.BrandA.ID || newCred.Username == old.Username {
		t.Fatalf("new credential %+v", newCred)
	}
	fresh := e.Client(newCred.Username, newCred.Secret)
	if _, err := fresh.GetBrand(e.Ctx); err != nil {
		t.Fatalf("new credential: %v", err)
	}
	e.Advance(59 * time.Minute)
	if _, err := e.A.GetBrand(e.Ctx); err != nil {
		t.Fatalf("old credential inside the grace period: %v", err)
	}
	e.Advance(time.Minute)
	_, err = e.A.GetBrand(e.Ctx)
	var ce *client.Error
	if !asClientError(err, &ce) || ce.StatusCode != 401 || ce.Msg != "HMAC signature verification failed: signature mismatch" {
		t.Fatalf("old credential after the grace period: %v, want 401 as for an unknown username (D2)", err)
	}
	if _, err := fresh.GetBrand(e.Ctx); err != nil {
		t.Fatalf("new credential later: %v", err)
	}
	// Rotating a credential that no longer works is not found.
	if _, _, err := e.App.Service.RotateCredential(e.Ctx, e.CredA.Username, 0); parley.ErrorCode(err) != parley.ENotFound {
		t.Errorf("rotating a revoked credential: %v", err)
	}
	// Revoking during the grace period ends it at once.
	n2, inGrace, err := e.App.Service.RotateCredential(e.Ctx, newCred.Username, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Rotating it again in its grace period works, and keeps the earlier end.
	if _, again, err := e.App.Service.RotateCredential(e.Ctx, newCred.Username, 48*time.Hour); err != nil || !again.RevokedAt.Equal(inGrace.RevokedAt.Time) {
		t.Fatalf("second rotation in the grace period: %+v %v, want the end kept at %v", again, err, inGrace.RevokedAt)
	}
	if err := e.App.Service.RevokeCredential(e.Ctx, newCred.Username); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.GetBrand(e.Ctx); err == nil {
		t.Error("a revoked credential in its grace period still works")
	}
	if _, err := e.Client(n2.Username, n2.Secret).GetBrand(e.Ctx); err != nil {
		t.Errorf("the newest credential: %v", err)
	}
}

// TestCredentialLastUsed: last_used_at follows verified requests to
// within a minute, and forged ones never move it (issue #6).
func TestCredentialLastUsed(t *testing.T) {
	e := apitest.New(t)
	lastUsed := func() *parley.Time {
		t.Helper()
		cs, err := e.App.Service.ListCredentials(e.Ctx, e.BrandA.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.Username == e.CredA.Username {
				return c.LastUsedAt
			}
		}
		t.Fatal("credential A not listed")
		return nil
	}
	h := authHeaders(e.CredA.Username, "not-the-secret-at-all-0123456789abcdefghijk", "GET", "/api/v1/brand", nil, e.ClientNow())
	authSend(t, e, "GET", "/api/v1/brand", nil, h)
	if got := lastUsed(); got != nil {
		t.Fatalf("a forged request set last_used_at %v", got)
	}
	t0 := e.Now().Truncate(time.Microsecond)
	e.A.GetBrand(e.Ctx)
	if got := lastUsed(); got == nil || !got.Equal(t0) {
		t.Fatalf("last_used_at %v, want %v", got, t0)
	}
	e.Advance(30 * time.Second)
	e.A.GetBrand(e.Ctx)
	if got := lastUsed(); !got.Equal(t0) {
		t.Errorf("last_used_at moved to %v within a minute: it is written at most once a minute", got)
	}
	e.Advance(31 * time.Second)
	e.A.GetBrand(e.Ctx)
	if got := lastUsed(); !got.Equal(e.Now().Truncate(time.Microsecond)) {
		t.Errorf("last_used_at %v, want %v", got, e.Now())
	}
}

func asClientError(err error, target **client.Error) bool {
	ce, ok := err.(*client.Error)
	if ok {
		*target = ce
	}
	return ok
}

// TestIdempotencyServerErrorNotStored: a 5xx is not the answer to keep
// (D13): a request that failed before writing leaves its key free, and one
// whose write committed the key without an answer (a claim) releases it,
// so in both cases the client's retry runs again.
func TestIdempotencyServerErrorNotStored(t *testing.T) {
	for _, claimed := range []bool{false, true} {
		t.Run(fmt.Sprint("claimed=", claimed), func(t *testing.T) {
			e := apitest.New(t)
			body := []byte(`{}`)
			var writes atomic.Int64
			run := func(fail bool) *httptest.ResponseRecorder {
				r := httptest.NewRequest("POST", "/api/v1/users", bytes.NewReader(body))
				r.Header = authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, e.ClientNow())
				r.Header.Set("Idempotency-Key", "flaky")
				w := httptest.NewRecorder()
				httpapi.RunIdempotent(e.App.Server, w, r, e.BrandA.ID, func(w http.ResponseWriter, r *http.Request, o parley.Origin) error {
					if claimed { // a write that names no result: it only claims the key
						if err := e.App.DB.WithOriginTx(r.Context(), o, func(*store.Tx) error { writes.Add(1); return nil }); err != nil {
							return err
						}
					}
					if fail {
						return errors.New("database on fire")
					}
					w.WriteHeader(201)
					return nil
				})
				return w
			}
			if w := run(true); w.Code != 500 {
				t.Fatalf("failing request: %d", w.Code)
			}
			if n := e.Count(t, "idempotency_keys"); n != 0 {
				t.Fatalf("%d keys kept after a 500, want none", n)
			}
			if w := run(false); w.Code != 201 || w.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("retry after the 500: %d replayed=%q, want a fresh run", w.Code, w.Header().Get("Idempotent-Replayed"))
			}
			if w := run(false); w.Header().Get("Idempotent-Replayed") != "true" {
				t.Fatal("the successful retry's answer is not stored")
			}
			if claimed && writes.Load() != 2 {
				t.Errorf("%d writes, want 2: the failed request's and its retry's", writes.Load())
			}
		})
	}
}

// TestClientIdempotencyKey: the SDK's WithIdempotencyKey makes a retried
// call run once (D13).
func TestClientIdempotencyKey(t *testing.T) {
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
	ctx := client.WithIdempotencyKey(e.Ctx, "welcome-"+fmt.Sprint(u.ID))
	in := parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("Welcome!")}
	m1, err := e.A.SendMessage(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := e.A.SendMessage(ctx, in)
	if err != nil || m2.ID != m1.ID {
		t.Fatalf("retry: %+v %v, want message %d again", m2, err, m1.ID)
	}
	if n := e.Count(t, "messages"); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// TestIdempotencyReplayedCopyNotStored: a copy of a signed request refused
// as replayed (401) is not kept as its key's answer (D2, D13).
func TestIdempotencyReplayedCopyNotStored(t *testing.T) {
	e := apitest.New(t)
	body := []byte(`{"phone_number":"+14155552671"}`)
	h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, e.ClientNow())
	h.Set("Idempotency-Key", "first")
	if r := authSend(t, e, "POST", "/api/v1/users", body, h); r.status != 201 {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	h.Set("Idempotency-Key", "copy") // the key is not signed: the copy is still one
	wantError(t, authSend(t, e, "POST", "/api/v1/users", body, h), 401, parley.ENotAuthenticated)
	if n := e.Count(t, "idempotency_keys"); n != 1 {
		t.Errorf("%d keys stored, want only the first: a replayed copy's 401 is not an answer to keep", n)
	}
}

// TestIdempotencyEmptyAnswer: a handler that writes nothing answered 200,
// and its replay is a 200 too.
func TestIdempotencyEmptyAnswer(t *testing.T) {
	e := apitest.New(t)
	body := []byte(`{}`)
	for i := range 2 {
		r := httptest.NewRequest("POST", "/api/v1/users", bytes.NewReader(body))
		r.Header = authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, e.ClientNow())
		r.Header.Set("Idempotency-Key", "quiet")
		w := httptest.NewRecorder()
		httpapi.RunIdempotent(e.App.Server, w, r, e.BrandA.ID, func(http.ResponseWriter, *http.Request, parley.Origin) error { return nil })
		if w.Code != 200 || (i == 1 && w.Header().Get("Idempotent-Replayed") != "true") {
			t.Fatalf("request %d: %d replayed=%q", i+1, w.Code, w.Header().Get("Idempotent-Replayed"))
		}
	}
}

// afterCounter counts the writes made for Idempotency-Keys after their
// request: the answers and releases that no transaction of the change
// stored.
type afterCounter struct {
	httpapi.IdempotencyStore
	n atomic.Int64
}

func (c *afterCounter) StoreIdempotentAnswer(ctx context.Context, kw *parley.KeyedWrite, sw *parley.SignedWrite, a parley.Answer) (*parley.IdempotencyRecord, error) {
	c.n.Add(1)
	return c.IdempotencyStore.StoreIdempotentAnswer(ctx, kw, sw, a)
}

func (c *afterCounter) ReleaseIdempotencyKey(ctx context.Context, kw *parley.KeyedWrite) error {
	c.n.Add(1)
	return c.IdempotencyStore.ReleaseIdempotencyKey(ctx, kw)
}

// TestIdempotencyAnswerCommitsWithChange: every POST of the API stores
// its key's answer in the transaction of its change, so a retry finds
// both or neither and nothing is written for the key after the request;
// only an answer that changed nothing is stored after it (D13).
func TestIdempotencyAnswerCommitsWithChange(t *testing.T) {
	e := apitest.New(t)
	// A server of its own over the same app, so the count sees every
	// write for a key, taken from the test's goroutine.
	cfg := e.App.Server.Config
	after := &afterCounter{IdempotencyStore: cfg.Idempotency}
	cfg.Idempotency = after
	h := httpapi.New(cfg).Handler()
	send := func(target string, body []byte, contentType, key string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest("POST", target, bytes.NewReader(body))
		r.Header = authHeaders(e.CredA.Username, e.CredA.Secret, "POST", target, body, e.ClientNow())
		r.Header.Set("Content-Type", contentType)
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), "*")
	ev := whTest(t, e.A, hook.ID)
	if err := whDeliver(t, e, ev.ID, hook.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	delivery := whLastDelivery(t, e.A, hook.ID, 1)
	file, fileType, err := client.MultipartFile("pixel.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatal(err)
	}
	csv, csvType := fileMultipart(t, [2]string{`form-data; name="file"; filename="u.csv"`, "phone_number\n+14155552673\n"})
	const jsonType = "application/json"
	for _, c := range []struct {
		target, body, contentType string
		status                    int
	}{
		{"/api/v1/users", `{"phone_number":"+14155552671"}`, jsonType, 201},
		{"/api/v1/users/" + itoa(u.ID), `{"first_name":"Ada"}`, jsonType, 200},
		{"/api/v1/messages", fmt.Sprintf(`{"user_id":%d,"body":"hi"}`, u.ID), jsonType, 201},
		{"/api/v1/files", string(file), fileType, 201},
		{"/api/v1/imports", string(csv), csvType, 201},
		{"/api/v1/webhooks", `{"url":"` + rc.URL() + `","event_types":["*"]}`, jsonType, 201},
		{"/api/v1/webhooks/" + itoa(hook.ID), `{"description":"renamed"}`, jsonType, 200},
		{"/api/v1/webhooks/" + itoa(hook.ID) + "/rotate_secret", ``, jsonType, 200},
		{"/api/v1/webhooks/" + itoa(hook.ID) + "/test", ``, jsonType, 200},
		{"/api/v1/webhooks/" + itoa(hook.ID) + "/deliveries/" + itoa(delivery.ID) + "/retry", ``, jsonType, 200},
	} {
		key := "key " + c.target
		first := send(c.target, []byte(c.body), c.contentType, key)
		if first.Code != c.status {
			t.Fatalf("POST %s: %d %s, want %d", c.target, first.Code, first.Body, c.status)
		}
		again := send(c.target, []byte(c.body), c.contentType, key)
		if again.Code != c.status || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
			t.Errorf("POST %s again: %d %s (replayed %q), want the first answer replayed",
				c.target, again.Code, again.Body, again.Header().Get("Idempotent-Replayed"))
		}
		if n := after.n.Load(); n != 0 {
			t.Fatalf("POST %s: %d writes for the key after the request, want its answer stored with the change", c.target, n)
		}
	}
	// A refusal changes nothing: its answer is stored after it, once.
	for range 2 {
		if w := send("/api/v1/users", []byte(`{"phone_number":"+1415"}`), jsonType, "refused"); w.Code != 422 {
			t.Fatalf("a refusal: %d %s", w.Code, w.Body)
		}
	}
	if n := after.n.Load(); n != 2 {
		t.Errorf("%d writes after two refusals, want 2: each tries to store its answer, the second finds the first's", n)
	}
}

// TestIdempotencyReplaysWhateverNow: a repeat gets the first answer even
// when running it now would be refused before any write, here by a
// custom_data field deleted since (D13).
func TestIdempotencyReplaysWhateverNow(t *testing.T) {
	e := apitest.New(t)
	f := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Tier", CustomDataType: parley.CustomString})
	body := `{"phone_number":"+14155552671","custom_data":{"tier":"gold"}}`
	first := keyed(t, e, "POST", "/api/v1/users", body, "create")
	if first.status != 201 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	if err := e.App.Service.DeleteCustomField(e.Ctx, e.BrandA.ID, f.ID); err != nil {
		t.Fatal(err)
	}
	fresh := hardSend(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552672","custom_data":{"tier":"gold"}}`)
	wantError(t, fresh, 422, parley.EInvalidCustomData)
	again := keyed(t, e, "POST", "/api/v1/users", body, "create")
	if again.status != 201 || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d %s, want the first answer replayed", again.status, again.body)
	}
}

// TestIdempotencyAnswersSealed: the answers kept for keys are sealed at
// rest, as every secret Parley keeps: a webhook's signing secret in POST
// /webhooks's answer is not in the database in the clear, and its replay
// still carries it. They are sealed with XChaCha20-Poly1305 under a key
// of their own, derived from the server key: one is sealed per keyed
// request, more than AES-GCM's random nonces allow under one key. An
// answer kept in the clear before answers were sealed, or sealed with
// AES-GCM under the server key before they had a key of their own, still
// replays (D13).
func TestIdempotencyAnswersSealed(t *testing.T) {
	e := apitest.New(t)
	rc := whNewReceiver(t, nil)
	body := `{"url":"` + rc.URL() + `","event_types":["*"]}`
	first := keyed(t, e, "POST", "/api/v1/webhooks", body, "hook")
	var hook parley.Webhook
	if err := json.Unmarshal(first.body, &hook); err != nil || !strings.HasPrefix(hook.Secret, "whsec_") {
		t.Fatalf("create: %d %s", first.status, first.body)
	}
	if dump := e.Snapshot(t, "SELECT * FROM idempotency_keys"); strings.Contains(dump, hook.Secret) ||
		strings.Contains(dump, strings.TrimPrefix(hook.Secret, "whsec_")) {
		t.Error("the webhook secret is stored in the clear with its key's answer")
	}
	if again := keyed(t, e, "POST", "/api/v1/webhooks", body, "hook"); string(again.body) != string(first.body) {
		t.Errorf("replay: %s, want the first answer, secret included", again.body)
	}
	serverKey, err := secretbox.ParseKey(e.App.Config.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	serverBox, err := secretbox.New(serverKey)
	if err != nil {
		t.Fatal(err)
	}
	ad := append(binary.BigEndian.AppendUint64([]byte("answer:"), uint64(e.BrandA.ID)), "hook"...)
	var stored []byte
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx, impRebind(`SELECT body FROM idempotency_keys WHERE idem_key = 'hook'`)).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) < 1+24+16 || stored[0] != 0x02 {
		t.Errorf("the stored answer begins %x, %d bytes; want 0x02, XChaCha20-Poly1305's 24-byte nonce and its tag", stored[:min(len(stored), 8)], len(stored))
	} else {
		// The key's purpose is part of what is stored: another would leave
		// the answers of the last 24 h unreadable.
		answers, err := secretbox.NewX(secretbox.DeriveKey(serverKey, "parley idempotency answers"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := answers.Open(stored[1:], ad); err != nil {
			t.Errorf("the answer does not open with the answers' key: %v", err)
		}
		for _, mk := range []func([]byte) (*secretbox.Box, error){secretbox.New, secretbox.NewX} {
			if box, err := mk(serverKey); err != nil {
				t.Fatal(err)
			} else if _, err := box.Open(stored[1:], ad); err == nil {
				t.Error("the answer opens with the server key itself; want a key of the answers' own")
			}
		}
	}

	// An answer from before answers were sealed, as it was stored then.
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	target, req := "/api/v1/users/"+itoa(u.ID), `{"first_name":"Ada"}`
	h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", target, []byte(req), e.ClientNow())
	sum := sha256.Sum256([]byte("POST " + target + "\n" + h.Get(signing.HeaderDigest)))
	now := e.Now().UnixMicro()
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, impRebind(`INSERT INTO idempotency_keys
		(brand_id, idem_key, request_hash, status, content_type, body, created_at, expires_at)
		VALUES (?, 'old', ?, 200, 'application/json; charset=utf-8', ?, ?, ?)`),
		e.BrandA.ID, sum[:], []byte(`{"stored":"in the clear"}`), now, now+int64(time.Hour/time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	h.Set("Idempotency-Key", "old")
	if r := authSend(t, e, "POST", target, []byte(req), h); r.status != 200 || string(r.body) != `{"stored":"in the clear"}` {
		t.Errorf("an answer kept in the clear: %d %s, want it replayed", r.status, r.body)
	}

	// An answer sealed as they were before they had a key of their own.
	req = `{"first_name":"Grace"}`
	h = authHeaders(e.CredA.Username, e.CredA.Secret, "POST", target, []byte(req), e.ClientNow())
	sum = sha256.Sum256([]byte("POST " + target + "\n" + h.Get(signing.HeaderDigest)))
	ad = append(binary.BigEndian.AppendUint64([]byte("answer:"), uint64(e.BrandA.ID)), "gcm"...)
	sealed := append([]byte{0x01}, serverBox.Seal([]byte(`{"stored":"with AES-GCM"}`), ad)...)
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, impRebind(`INSERT INTO idempotency_keys
		(brand_id, idem_key, request_hash, status, content_type, body, created_at, expires_at)
		VALUES (?, 'gcm', ?, 200, 'application/json; charset=utf-8', ?, ?, ?)`),
		e.BrandA.ID, sum[:], sealed, now, now+int64(time.Hour/time.Microsecond)); err != nil {
		t.Fatal(err)
	}
	h.Set("Idempotency-Key", "gcm")
	if r := authSend(t, e, "POST", target, []byte(req), h); r.status != 200 || string(r.body) != `{"stored":"with AES-GCM"}` {
		t.Errorf("an answer sealed with AES-GCM under the server key: %d %s, want it replayed", r.status, r.body)
	}
}

// TestUploadCommitLost: an upload whose COMMIT's outcome the node never
// heard keeps its file: the row, and the key's answer naming it, may
// have committed — here they did — so the retry replays that answer and
// the file is there (D9, D13; review: the blob was deleted).
func TestUploadCommitLost(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("a connection to lose (PostgreSQL)")
	}
	var cut *apitest.CommitCutter
	e := apitest.New(t, func(c *app.Config) {
		cut = apitest.NewCommitCutter(t, c.DB, "pixel.png") // the upload's INSERT binds its name
		c.DB = cut.URL
	})
	hardSend(t, e, "GET", "/api/v1/brand", "") // the credential's last use is written now, not in the upload
	body, contentType, err := client.MultipartFile("pixel.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatal(err)
	}
	upload := func() authResp {
		h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/files", body, e.ClientNow())
		h.Set("Content-Type", contentType)
		h.Set("Idempotency-Key", "pixel")
		return authSend(t, e, "POST", "/api/v1/files", body, h)
	}
	cut.Armed.Store(true)
	if r := upload(); r.status < 500 {
		t.Fatalf("upload with its COMMIT cut: %d %s, want a 5xx", r.status, r.body)
	}
	if cut.Armed.Load() {
		t.Fatal("no COMMIT went through the proxy")
	}
	r := upload()
	if r.status != 201 || r.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry: %d %s (replayed %q), want the committed upload's answer", r.status, r.body, r.header.Get("Idempotent-Replayed"))
	}
	var f parley.File
	if err := json.Unmarshal(r.body, &f); err != nil {
		t.Fatal(err)
	}
	var blobs []string // fileblob keeps each blob's attributes beside it
	filepath.WalkDir(filepath.Join(e.App.Config.DataDir, "media"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".attrs") {
			blobs = append(blobs, filepath.Base(p))
		}
		return err
	})
	if len(blobs) != 1 || blobs[0] != f.ID {
		t.Errorf("blobs %v, want the committed file's alone (%s)", blobs, f.ID)
	}
	if got := hardSend(t, e, "GET", "/api/v1/files/"+f.ID, ""); got.status != 200 {
		t.Errorf("GET /files/%s: %d %s", f.ID, got.status, got.body)
	}
}
