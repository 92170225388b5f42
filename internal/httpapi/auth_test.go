package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/signing"
)

// authResp is a raw answer of the server.
type authResp struct {
	status int
	header http.Header
	body   []byte
}

// authSend sends method target (path and query exactly as they go on the
// request line) with body and exactly the headers hdr, without signing.
func authSend(t *testing.T, e *apitest.Env, method, target string, body []byte, hdr http.Header) authResp {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.Server.URL+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength, req.GetBody = http.NoBody, 0, nil
	}
	if hdr != nil {
		req.Header = hdr.Clone()
	}
	if got := req.URL.RequestURI(); got != target {
		t.Fatalf("request target would be sent as %q, want %q", got, target)
	}
	resp, err := e.Server.Client().Do(req)
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

// authHeaders returns the D2 signing headers for method, target and body,
// signed at now, plus Content-Type application/json when body is not nil.
func authHeaders(username, secret, method, target string, body []byte, now time.Time) http.Header {
	req, err := http.NewRequest(method, "http://parley.test"+target, nil)
	if err != nil {
		panic(err)
	}
	signing.SignRequest(req, username, secret, body, now)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req.Header
}

// authHeadersDate signs with an arbitrary x-date value and an explicit
// digest ("" = no x-digest header), for cases SignRequest cannot express.
func authHeadersDate(username, secret, method, target, date, digest string) http.Header {
	h := http.Header{}
	h.Set(signing.HeaderUsername, username)
	h.Set(signing.HeaderDate, date)
	if digest != "" {
		h.Set(signing.HeaderDigest, digest)
	}
	h.Set(signing.HeaderSignature, signing.Signature(secret, date, method, target, digest))
	return h
}

// authEnvelope checks that body is exactly {"detail":{"type":…,"msg":…}}
// with at most one extra member "field" (spec Errors, D3), and returns them.
func authEnvelope(t *testing.T, body []byte) (typ, msg, field string) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body %q is not a JSON object: %v", body, err)
	}
	if len(top) != 1 || top["detail"] == nil {
		t.Fatalf("error body %s: want exactly one member, detail", body)
	}
	var detail map[string]any
	if err := json.Unmarshal(top["detail"], &detail); err != nil {
		t.Fatalf("detail of %s is not an object: %v", body, err)
	}
	for k := range detail {
		if k != "type" && k != "msg" && k != "field" {
			t.Errorf("detail has unexpected member %q in %s", k, body)
		}
	}
	var ok1, ok2, ok3 bool
	typ, ok1 = detail["type"].(string)
	msg, ok2 = detail["msg"].(string)
	if !ok1 || !ok2 || typ == "" || msg == "" {
		t.Fatalf("detail of %s: want non-empty string type and msg", body)
	}
	if f, present := detail["field"]; present {
		if field, ok3 = f.(string); !ok3 {
			t.Errorf("detail.field of %s is not a string", body)
		}
	}
	return typ, msg, field
}

// authWantError checks status and type of an enveloped error answer and
// returns its msg.
func authWantError(t *testing.T, r authResp, status int, typ string) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q, want application/json; charset=utf-8 (D1)", ct)
	}
	gotTyp, msg, _ := authEnvelope(t, r.body)
	if r.status != status || gotTyp != typ {
		t.Fatalf("got %d %s (%q), want %d %s", r.status, gotTyp, msg, status, typ)
	}
	return msg
}

// authWant401 checks a D2 rejection: 401 not_authenticated, msg starting
// with "HMAC signature verification failed".
func authWant401(t *testing.T, r authResp) string {
	t.Helper()
	msg := authWantError(t, r, http.StatusUnauthorized, parley.ENotAuthenticated)
	if !strings.HasPrefix(msg, "HMAC signature verification failed") {
		t.Errorf("msg = %q, want prefix %q (D2)", msg, "HMAC signature verification failed")
	}
	return msg
}

// authClock pins the server clock to a whole second, so x-date (second
// precision) is exactly now and skew boundaries are exact.
func authClock(e *apitest.Env) time.Time {
	now := time.Now().UTC().Truncate(time.Second)
	e.SetNow(now)
	return now
}

const authUserBody = `{"phone_number":"+14155552671"}`

func TestAuthSignedRequestsSucceed(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)

	// GET without x-digest is accepted (D2: x-digest is required on POST and PUT only).
	h := authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", nil, now)
	if h.Get(signing.HeaderDigest) != "" {
		t.Fatal("test setup: GET must be signed without x-digest")
	}
	r := authSend(t, e, "GET", "/api/v1/brand", nil, h)
	if r.status != 200 {
		t.Fatalf("signed GET /brand = %d %s, want 200", r.status, r.body)
	}
	var b map[string]any
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatal(err)
	}
	if b["name"] != "Brand A" || b["phone_number"] != "+14155550100" {
		t.Errorf("brand = %v, want Brand A: the credentials identify the brand", b)
	}

	// Brand B's credential sees brand B.
	h = authHeaders(e.CredB.Username, e.CredB.Secret, "GET", "/api/v1/brand", nil, now)
	r = authSend(t, e, "GET", "/api/v1/brand", nil, h)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"Brand B"`)) {
		t.Errorf("brand B GET /brand = %d %s, want 200 Brand B", r.status, r.body)
	}

	// A signed POST with its digest.
	body := []byte(authUserBody)
	h = authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, now)
	if h.Get(signing.HeaderDigest) != "SHA-256=sTWXcw8QP5nsoTTwM7n9PrLB790OBhlk+LereXCDsGs=" {
		t.Fatalf("x-digest = %q, want the D2 test vector", h.Get(signing.HeaderDigest))
	}
	r = authSend(t, e, "POST", "/api/v1/users", body, h)
	if r.status != 201 {
		t.Fatalf("signed POST /users = %d %s, want 201", r.status, r.body)
	}
	var u map[string]any
	if err := json.Unmarshal(r.body, &u); err != nil {
		t.Fatal(err)
	}
	id := int64(u["id"].(float64))

	// DELETE without a body needs no x-digest either.
	target := "/api/v1/users/" + strconv.FormatInt(id, 10)
	h = authHeaders(e.CredA.Username, e.CredA.Secret, "DELETE", target, nil, now)
	if h.Get(signing.HeaderDigest) != "" {
		t.Fatal("test setup: DELETE must be signed without x-digest")
	}
	r = authSend(t, e, "DELETE", target, nil, h)
	if r.status != 200 {
		t.Errorf("signed DELETE without x-digest = %d %s, want 200 (D2)", r.status, r.body)
	}
}

// TestAuthD2VectorsOverHTTP stores a credential whose secret is the one of
// the D2 test vectors (sealed with the test server's key, as
// CreateCredential would) and sends the vectors' literal headers.
func TestAuthD2VectorsOverHTTP(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	const (
		username = "pk_d2testvectors"
		secret   = "q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk"
		date     = "Sun, 22 Nov 2026 08:49:37 GMT"
	)
	key, err := secretbox.ParseKey(e.App.Config.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	rec := &store.CredentialRecord{Username: username, BrandID: e.BrandA.ID,
		SealedSecret: box.Seal([]byte(secret), []byte(username))}
	if err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error { return tx.CreateCredential(e.Ctx, rec) }); err != nil {
		t.Fatal(err)
	}
	e.SetNow(time.Date(2026, time.November, 22, 8, 49, 37, 0, time.UTC))

	t.Run("GETBrandVectorAccepted", func(t *testing.T) {
		h := http.Header{}
		h.Set(signing.HeaderUsername, username)
		h.Set(signing.HeaderDate, date)
		h.Set(signing.HeaderSignature, "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY=")
		r := authSend(t, e, "GET", "/api/v1/brand", nil, h)
		if r.status != 200 || !bytes.Contains(r.body, []byte(`"Brand A"`)) {
			t.Fatalf("GET /brand with the D2 vector = %d %s, want 200 Brand A", r.status, r.body)
		}
		// One character off is rejected, so the 200 above is the vector's doing.
		h.Set(signing.HeaderSignature, "NJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY=")
		authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, h))
	})
	t.Run("POSTUsersVectorAccepted", func(t *testing.T) {
		h := http.Header{}
		h.Set(signing.HeaderUsername, username)
		h.Set(signing.HeaderDate, date)
		h.Set(signing.HeaderDigest, "SHA-256=sTWXcw8QP5nsoTTwM7n9PrLB790OBhlk+LereXCDsGs=")
		h.Set(signing.HeaderSignature, "QOQuw40R0jvRJJkSrnpNT50WVQDPWOUh+FyI6yiUR8U=")
		h.Set("Content-Type", "application/json")
		r := authSend(t, e, "POST", "/api/v1/users", []byte(`{"phone_number":"+14155552671"}`), h)
		if r.status != 201 {
			t.Fatalf("POST /users with the D2 vector = %d %s, want 201", r.status, r.body)
		}
	})
	t.Run("VectorOutsideWindowRejected", func(t *testing.T) {
		e.Advance(301 * time.Second)
		h := http.Header{}
		h.Set(signing.HeaderUsername, username)
		h.Set(signing.HeaderDate, date)
		h.Set(signing.HeaderSignature, "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY=")
		msg := authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, h))
		if !strings.Contains(msg, "clock skew") {
			t.Errorf("msg = %q, want clock skew (D2)", msg)
		}
	})
}

func TestAuthMissingHeader(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	body := []byte(authUserBody)
	before := e.State(t)
	for _, hdr := range []string{signing.HeaderUsername, signing.HeaderSignature, signing.HeaderDate} {
		t.Run("POSTWithout_"+hdr+"Rejected", func(t *testing.T) {
			h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, now)
			h.Del(hdr)
			authWant401(t, authSend(t, e, "POST", "/api/v1/users", body, h))
			if e.State(t) != before {
				t.Errorf("a POST without %s changed the database (D2)", hdr)
			}
		})
		t.Run("POSTWithEmpty_"+hdr+"Rejected", func(t *testing.T) {
			h := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, now)
			h.Set(hdr, "")
			authWant401(t, authSend(t, e, "POST", "/api/v1/users", body, h))
			if e.State(t) != before {
				t.Errorf("a POST with an empty %s changed the database (D2)", hdr)
			}
		})
		t.Run("GETWithout_"+hdr+"Rejected", func(t *testing.T) {
			h := authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", nil, now)
			h.Del(hdr)
			authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, h))
		})
	}
	t.Run("POSTWithoutDigestRejected", func(t *testing.T) {
		// Correctly signed over a signing string without the x-digest line:
		// only the D2 rule "x-digest is required on POST" can reject it.
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", signing.FormatDate(now), "")
		h.Set("Content-Type", "application/json")
		authWant401(t, authSend(t, e, "POST", "/api/v1/users", body, h))
		if e.State(t) != before {
			t.Error("a POST without x-digest changed the database (D2)")
		}
	})
	t.Run("EmptyPOSTWithoutDigestRejected", func(t *testing.T) {
		// D2: an empty body has the digest of the empty string; it is still required.
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", signing.FormatDate(now), "")
		h.Set("Content-Type", "application/json")
		authWant401(t, authSend(t, e, "POST", "/api/v1/users", nil, h))
	})
	t.Run("UnsignedRejected", func(t *testing.T) {
		authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, nil))
		authWant401(t, authSend(t, e, "POST", "/api/v1/users", body, http.Header{"Content-Type": {"application/json"}}))
		if e.State(t) != before {
			t.Error("an unsigned POST changed the database (D2)")
		}
	})
}

func TestAuthUnknownUsernameAndWrongSecret(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	body := []byte(authUserBody)
	before := e.State(t)

	wrongSecret := signing.NewSecret()
	unknown := authSend(t, e, "POST", "/api/v1/users", body,
		authHeaders("pk_0000000000000000", e.CredA.Secret, "POST", "/api/v1/users", body, now))
	wrong := authSend(t, e, "POST", "/api/v1/users", body,
		authHeaders(e.CredA.Username, wrongSecret, "POST", "/api/v1/users", body, now))
	// Brand B's secret with brand A's username: a valid secret, just not this one's.
	crossed := authSend(t, e, "POST", "/api/v1/users", body,
		authHeaders(e.CredA.Username, e.CredB.Secret, "POST", "/api/v1/users", body, now))
	authWant401(t, unknown)
	authWant401(t, wrong)
	authWant401(t, crossed)
	if e.State(t) != before {
		t.Error("rejected POSTs changed the database (D2)")
	}
	if !bytes.Equal(unknown.body, wrong.body) || !bytes.Equal(wrong.body, crossed.body) {
		t.Errorf("D2: an unknown username must not be told apart from a wrong signature:\nunknown: %s\nwrong:   %s\ncrossed: %s",
			unknown.body, wrong.body, crossed.body)
	}

	// Same on GET.
	g1 := authSend(t, e, "GET", "/api/v1/brand", nil, authHeaders("nobody", e.CredA.Secret, "GET", "/api/v1/brand", nil, now))
	g2 := authSend(t, e, "GET", "/api/v1/brand", nil, authHeaders(e.CredA.Username, wrongSecret, "GET", "/api/v1/brand", nil, now))
	authWant401(t, g1)
	authWant401(t, g2)
	if !bytes.Equal(g1.body, g2.body) {
		t.Errorf("D2: GET unknown username %s != wrong signature %s", g1.body, g2.body)
	}
	if !bytes.Equal(g1.body, unknown.body) {
		t.Errorf("D2: the answer must not depend on the method: GET %s, POST %s", g1.body, unknown.body)
	}
}

func TestAuthRevokedCredential(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	second, err := e.App.Service.CreateCredential(e.Ctx, e.BrandA.ID)
	if err != nil {
		t.Fatal(err)
	}
	c2 := e.Client(second.Username, second.Secret)
	if _, err := e.A.GetBrand(e.Ctx); err != nil {
		t.Fatalf("first credential before revocation: %v", err)
	}
	if _, err := c2.GetBrand(e.Ctx); err != nil {
		t.Fatalf("second credential before revocation: %v", err)
	}

	if err := e.App.Service.RevokeCredential(e.Ctx, e.CredA.Username); err != nil {
		t.Fatal(err)
	}
	before := e.State(t)

	body := []byte(authUserBody)
	revokedGET := authSend(t, e, "GET", "/api/v1/brand", nil,
		authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", nil, now))
	authWant401(t, revokedGET)
	revokedPOST := authSend(t, e, "POST", "/api/v1/users", body,
		authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, now))
	authWant401(t, revokedPOST)
	if e.State(t) != before {
		t.Error("a POST with a revoked credential changed the database (D2)")
	}

	// A revoked username reads exactly like a wrong signature (D2).
	wrong := authSend(t, e, "GET", "/api/v1/brand", nil,
		authHeaders(second.Username, signing.NewSecret(), "GET", "/api/v1/brand", nil, now))
	authWant401(t, wrong)
	if !bytes.Equal(revokedGET.body, wrong.body) {
		t.Errorf("D2: revoked credential answer %s differs from wrong-signature answer %s", revokedGET.body, wrong.body)
	}

	// The brand's other credential keeps working (D2: rotation).
	b, err := c2.GetBrand(e.Ctx)
	if err != nil {
		t.Fatalf("second credential after revoking the first: %v", err)
	}
	if b.Name != "Brand A" {
		t.Errorf("second credential sees brand %q, want Brand A", b.Name)
	}
	if _, err := c2.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")}); err != nil {
		t.Errorf("second credential cannot POST after revoking the first: %v", err)
	}
	// Brand B is unaffected.
	if _, err := e.B.GetBrand(e.Ctx); err != nil {
		t.Errorf("brand B after revoking a brand A credential: %v", err)
	}
}

func TestAuthTamperedRequest(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	userPath := "/api/v1/users/" + strconv.FormatInt(u.ID, 10)
	before := e.State(t)
	sign := func(method, target string, body []byte) http.Header {
		return authHeaders(e.CredA.Username, e.CredA.Secret, method, target, body, now)
	}
	bodyX := []byte(`{"first_name":"Ann"}`)
	bodyY := []byte(`{"first_name":"Eve"}`)

	// Positive controls: the untampered requests are accepted.
	t.Run("UntamperedAccepted", func(t *testing.T) {
		for _, target := range []string{"/api/v1/brand", "/api/v1/users?phone_number=%2B14155552671", userPath} {
			if r := authSend(t, e, "GET", target, nil, sign("GET", target, nil)); r.status != 200 {
				t.Errorf("untampered GET %s = %d %s", target, r.status, r.body)
			}
		}
	})

	cases := []struct {
		name         string
		signMethod   string
		signTarget   string
		signBody     []byte
		sendMethod   string
		sendTarget   string
		sendBody     []byte
		alterHeaders func(h http.Header)
	}{
		{name: "PathChangedRejected", signMethod: "GET", signTarget: "/api/v1/brand", sendMethod: "GET", sendTarget: "/api/v1/segments"},
		{name: "UserPathChangedRejected", signMethod: "GET", signTarget: "/api/v1/users/999", sendMethod: "GET", sendTarget: userPath},
		{name: "QueryChangedRejected", signMethod: "GET", signTarget: "/api/v1/users?phone_number=%2B14155552672",
			sendMethod: "GET", sendTarget: "/api/v1/users?phone_number=%2B14155552671"},
		{name: "QueryAddedRejected", signMethod: "GET", signTarget: "/api/v1/brand", sendMethod: "GET", sendTarget: "/api/v1/brand?x=1"},
		{name: "QueryRemovedRejected", signMethod: "GET", signTarget: "/api/v1/brand?x=1", sendMethod: "GET", sendTarget: "/api/v1/brand"},
		{name: "MethodGETToDELETERejected", signMethod: "GET", signTarget: userPath, sendMethod: "DELETE", sendTarget: userPath},
		{name: "MethodDELETEToGETRejected", signMethod: "DELETE", signTarget: userPath, sendMethod: "GET", sendTarget: userPath},
		{name: "BodyChangedRejected", signMethod: "POST", signTarget: userPath, signBody: bodyX,
			sendMethod: "POST", sendTarget: userPath, sendBody: bodyY},
		{name: "BodyDroppedRejected", signMethod: "POST", signTarget: userPath, signBody: bodyX,
			sendMethod: "POST", sendTarget: userPath, sendBody: []byte{}},
		{name: "BodyAndDigestChangedRejected", signMethod: "POST", signTarget: userPath, signBody: bodyX,
			sendMethod: "POST", sendTarget: userPath, sendBody: bodyY,
			alterHeaders: func(h http.Header) { h.Set(signing.HeaderDigest, signing.Digest(bodyY)) }},
		{name: "DigestOfEmptyBodyRejected", signMethod: "POST", signTarget: userPath, signBody: []byte{},
			sendMethod: "POST", sendTarget: userPath, sendBody: bodyY},
		{name: "DigestOfOtherBodyRejected", signMethod: "POST", signTarget: "/api/v1/users", signBody: []byte(`{"phone_number":"+14155552672"}`),
			sendMethod: "POST", sendTarget: "/api/v1/users", sendBody: []byte(`{"phone_number":"+14155552673"}`)},
		{name: "SignatureCaseChangedRejected", signMethod: "GET", signTarget: "/api/v1/brand", sendMethod: "GET", sendTarget: "/api/v1/brand",
			alterHeaders: func(h http.Header) {
				s := []byte(h.Get(signing.HeaderSignature))
				for i, c := range s {
					if c >= 'a' && c <= 'z' {
						s[i] = c - 'a' + 'A'
						break
					}
				}
				h.Set(signing.HeaderSignature, string(s))
			}},
		{name: "UsernameSwappedRejected", signMethod: "GET", signTarget: "/api/v1/brand", sendMethod: "GET", sendTarget: "/api/v1/brand",
			alterHeaders: func(h http.Header) { h.Set(signing.HeaderUsername, e.CredB.Username) }},
		{name: "DateChangedRejected", signMethod: "GET", signTarget: "/api/v1/brand", sendMethod: "GET", sendTarget: "/api/v1/brand",
			alterHeaders: func(h http.Header) { h.Set(signing.HeaderDate, signing.FormatDate(now.Add(time.Second))) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := sign(tc.signMethod, tc.signTarget, tc.signBody)
			if tc.sendBody != nil {
				h.Set("Content-Type", "application/json")
			}
			if tc.alterHeaders != nil {
				tc.alterHeaders(h)
			}
			authWant401(t, authSend(t, e, tc.sendMethod, tc.sendTarget, tc.sendBody, h))
			if e.State(t) != before {
				t.Errorf("a tampered %s %s changed the database (D2)", tc.sendMethod, tc.sendTarget)
			}
		})
	}
	got, err := e.A.GetUser(e.Ctx, u.ID)
	if err != nil || got.FirstName != nil || got.IsDeleted {
		t.Errorf("user after tampered requests = %+v, %v; want untouched", got, err)
	}
}

func TestAuthClockSkew(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	body := []byte(authUserBody)
	before := e.State(t)
	for _, tc := range []struct {
		name   string
		offset time.Duration
		ok     bool
	}{
		{"Past301sRejected", -301 * time.Second, false},
		{"Future301sRejected", 301 * time.Second, false},
		{"Past1hRejected", -time.Hour, false},
		{"Future1hRejected", time.Hour, false},
		{"Past299sAccepted", -299 * time.Second, true},
		{"Future299sAccepted", 299 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", nil, now.Add(tc.offset))
			r := authSend(t, e, "GET", "/api/v1/brand", nil, h)
			if tc.ok {
				if r.status != 200 {
					t.Errorf("x-date %v from server time: %d %s, want 200 (D2: ±300 s)", tc.offset, r.status, r.body)
				}
				return
			}
			msg := authWant401(t, r)
			if !strings.Contains(msg, "clock skew") {
				t.Errorf("msg = %q, want it to mention clock skew (D2)", msg)
			}
			// A POST with a stale date changes nothing.
			h = authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, now.Add(tc.offset))
			msg = authWant401(t, authSend(t, e, "POST", "/api/v1/users", body, h))
			if !strings.Contains(msg, "clock skew") {
				t.Errorf("POST msg = %q, want it to mention clock skew (D2)", msg)
			}
			if e.State(t) != before {
				t.Error("a POST outside the clock skew changed the database (D2)")
			}
		})
	}
	// The window follows the server clock (e.Now), not the wall clock.
	t.Run("ServerClockMovedRejected", func(t *testing.T) {
		h := authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", nil, now)
		e.SetNow(now.Add(301 * time.Second))
		defer e.SetNow(now)
		msg := authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, h))
		if !strings.Contains(msg, "clock skew") {
			t.Errorf("msg = %q, want clock skew (D2)", msg)
		}
	})
}

func TestAuthUnparseableDate(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	body := []byte(authUserBody)
	before := e.State(t)
	good := signing.FormatDate(now)
	dates := map[string]string{
		"GarbageRejected":       "yesterday",
		"RFC850Rejected":        now.Format("Monday, 02-Jan-06 15:04:05 GMT"),
		"ANSICRejected":         now.Format(time.ANSIC),
		"RFC3339Rejected":       now.Format(time.RFC3339),
		"NumericZoneRejected":   now.Format("Mon, 02 Jan 2006 15:04:05 -0700"),
		"UTCNotGMTRejected":     now.Format("Mon, 02 Jan 2006 15:04:05 UTC"),
		"LowercaseDayRejected":  strings.ToLower(good[:1]) + good[1:],
		"UnixSecondsRejected":   strconv.FormatInt(now.Unix(), 10),
		"WrongWeekdayRejected":  now.Add(24*time.Hour).Format("Mon") + good[3:],
		"TrailingSpaceRejected": good + " ",
	}
	for name, date := range dates {
		t.Run(name, func(t *testing.T) {
			// Signed correctly over that date value: only its format can fail.
			h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", date, "")
			authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, h))

			h = authHeadersDate(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", date, signing.Digest(body))
			h.Set("Content-Type", "application/json")
			authWant401(t, authSend(t, e, "POST", "/api/v1/users", body, h))
			if e.State(t) != before {
				t.Errorf("a POST with x-date %q changed the database (D2)", date)
			}
		})
	}
	t.Run("IMFFixdateAccepted", func(t *testing.T) {
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", good, "")
		if r := authSend(t, e, "GET", "/api/v1/brand", nil, h); r.status != 200 {
			t.Errorf("x-date %q: %d %s, want 200 (D2)", good, r.status, r.body)
		}
	})
}

func TestAuthDigestOnGET(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	date := signing.FormatDate(now)

	t.Run("MismatchRejected", func(t *testing.T) {
		// The x-digest is signed, but it is the digest of another body (D2:
		// when sent on any other method it is verified too).
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", date, signing.Digest([]byte("other")))
		authWant401(t, authSend(t, e, "GET", "/api/v1/brand", []byte("body"), h))
	})
	t.Run("EmptyBodyMismatchRejected", func(t *testing.T) {
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", date, signing.Digest([]byte("other")))
		authWant401(t, authSend(t, e, "GET", "/api/v1/brand", nil, h))
	})
	t.Run("MatchAccepted", func(t *testing.T) {
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/brand", date, signing.Digest([]byte("body")))
		if r := authSend(t, e, "GET", "/api/v1/brand", []byte("body"), h); r.status != 200 {
			t.Errorf("GET with a matching x-digest = %d %s, want 200", r.status, r.body)
		}
	})
	t.Run("DeleteMismatchRejected", func(t *testing.T) {
		u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
		target := "/api/v1/users/" + strconv.FormatInt(u.ID, 10)
		before := e.State(t)
		h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "DELETE", target, date, signing.Digest([]byte("other")))
		authWant401(t, authSend(t, e, "DELETE", target, []byte("body"), h))
		if e.State(t) != before {
			t.Error("a DELETE with a mismatched x-digest changed the database (D2)")
		}
	})
}

func TestAuthRawQuerySigned(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	now := authClock(e)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	const encoded = "/api/v1/users?phone_number=%2B14155552671"

	t.Run("EncodedFormAccepted", func(t *testing.T) {
		r := authSend(t, e, "GET", encoded, nil, authHeaders(e.CredA.Username, e.CredA.Secret, "GET", encoded, nil, now))
		if r.status != 200 {
			t.Fatalf("GET %s signed as sent = %d %s, want 200 (D2)", encoded, r.status, r.body)
		}
		var got parley.User
		if err := json.Unmarshal(r.body, &got); err != nil || got.ID != u.ID {
			t.Errorf("found %s (%v), want user %d", r.body, err, u.ID)
		}
	})
	// D2: <query> is exactly the bytes sent; a signature over another
	// spelling of the same query does not verify.
	for name, signed := range map[string]string{
		"DecodedFormRejected":       "/api/v1/users?phone_number=+14155552671",
		"LowercaseHexRejected":      "/api/v1/users?phone_number=%2b14155552671",
		"TrailingAmpersandRejected": "/api/v1/users?phone_number=%2B14155552671&",
		"PathOnlyRejected":          "/api/v1/users",
		"WithoutPrefixRejected":     "/users?phone_number=%2B14155552671",
	} {
		t.Run(name, func(t *testing.T) {
			h := authHeadersDate(e.CredA.Username, e.CredA.Secret, "GET", signed, signing.FormatDate(now), "")
			authWant401(t, authSend(t, e, "GET", encoded, nil, h))
		})
	}
	t.Run("LiteralPlusSignedAsSentAccepted", func(t *testing.T) {
		const literal = "/api/v1/users?phone_number=+14155552671"
		r := authSend(t, e, "GET", literal, nil, authHeaders(e.CredA.Username, e.CredA.Secret, "GET", literal, nil, now))
		if r.status != 200 {
			t.Errorf("GET %s signed as sent = %d %s, want 200 (D2, D5)", literal, r.status, r.body)
		}
	})
}

func TestAuthErrorEnvelope(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	r := authSend(t, e, "GET", "/api/v1/brand", nil, nil)
	authWant401(t, r)
	var raw map[string]map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(maps.Keys(raw["detail"]))
	if !slices.Equal(got, []string{"msg", "type"}) && !slices.Equal(got, []string{"field", "msg", "type"}) {
		t.Errorf("detail members = %v, want type and msg (optionally field)", got)
	}
}
