package signing_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/signing"
)

const (
	testUser   = "acme"
	baseURL    = "https://api.example.com"
	mismatch   = "HMAC signature verification failed: signature mismatch"
	errPrefix  = "HMAC signature verification failed"
	skewReason = "x-date outside allowed clock skew"
	badDate    = "invalid x-date, want an IMF-fixdate such as Sun, 06 Nov 1994 08:49:37 GMT"
)

// users is the server's credential store in these tests.
var users = map[string]string{testUser: vecSecret}

func lookup(h http.Header) ([]byte, bool) {
	s, ok := users[h.Get(signing.HeaderUsername)]
	return []byte(s), ok
}

// fixedVerifier is a Verifier whose clock reads now.
func fixedVerifier(now time.Time) *signing.Verifier {
	return &signing.Verifier{Now: func() time.Time { return now }}
}

// signed returns the headers and request target of a request signed with
// SignRequest at time at.
func signed(t testing.TB, method, target string, body []byte, secret string, at time.Time) (http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, baseURL+target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	signing.SignRequest(req, testUser, secret, body, at)
	return req.Header, req.URL.RequestURI()
}

// verify runs both steps the way the server does.
func verify(v *signing.Verifier, method, target string, h http.Header, body []byte) error {
	secret, found := lookup(h)
	if err := v.VerifyHeaders(method, target, h, secret, found); err != nil {
		return err
	}
	return signing.VerifyBody(h, body)
}

// checkErr fails unless err is a *signing.Error with the given reason
// ("" means any reason).
func checkErr(t *testing.T, err error, reason string) {
	t.Helper()
	var se *signing.Error
	switch {
	case err == nil:
		t.Fatalf("verification succeeded, want error %q", reason)
	case !errors.As(err, &se):
		t.Fatalf("error %v is %T, want *signing.Error", err, err)
	case !strings.HasPrefix(err.Error(), errPrefix):
		t.Fatalf("error %q does not start with %q", err, errPrefix)
	case reason != "" && se.Reason != reason:
		t.Fatalf("error reason %q, want %q", se.Reason, reason)
	}
}

func TestRoundTrip(t *testing.T) {
	v := fixedVerifier(vecTime)
	for _, tc := range []struct {
		name, method, target string
		body                 []byte
		wantDigest           bool
	}{
		{"GET", "GET", "/api/v1/brand", nil, false},
		{"POST body", "POST", "/api/v1/users", []byte(vecUserBody), true},
		{"POST empty", "POST", "/api/v1/users", nil, true},
		{"POST empty non-nil", "POST", "/api/v1/users", []byte{}, true},
		{"PUT", "PUT", "/api/v1/brand", []byte(`{"name":"Acme"}`), true},
		{"GET percent-encoded query", "GET", "/api/v1/users?phone_number=%2B14155552671", nil, false},
		{"GET percent-encoded path", "GET", "/api/v1/users/a%2Fb?x=1&y=%20", nil, false},
		{"DELETE", "DELETE", "/api/v1/users/42", nil, false},
		{"DELETE with body", "DELETE", "/api/v1/users/42", []byte(`{"reason":"x"}`), true},
		{"PATCH", "PATCH", "/api/v1/users/42", []byte(`{}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, target := signed(t, tc.method, tc.target, tc.body, vecSecret, vecTime)
			if target != tc.target {
				t.Errorf("request target = %q, want %q (percent-encoding must be preserved)", target, tc.target)
			}
			if _, ok := h["X-Digest"]; ok != tc.wantDigest {
				t.Errorf("x-digest sent = %v, want %v", ok, tc.wantDigest)
			}
			if err := verify(v, tc.method, target, h, tc.body); err != nil {
				t.Errorf("verify: %v", err)
			}
			// The streaming path gives the same answer.
			d := signing.NewDigester()
			d.Write(tc.body)
			if err := signing.VerifyDigest(h.Get(signing.HeaderDigest), d.Sum()); err != nil {
				t.Errorf("VerifyDigest: %v", err)
			}
		})
	}
}

// TestOverHTTP signs with a real client and verifies in a real server, so
// the request target is the one that went over the wire.
func TestOverHTTP(t *testing.T) {
	now := time.Now()
	v := &signing.Verifier{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, found := lookup(r.Header)
		if err := v.VerifyHeaders(r.Method, signing.RequestTarget(r), r.Header, secret, found); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := signing.VerifyBody(r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		io.WriteString(w, r.RequestURI)
	}))
	defer srv.Close()

	for _, tc := range []struct {
		method, target string
		body           []byte
	}{
		{"GET", "/api/v1/brand", nil},
		{"POST", "/api/v1/users", []byte(vecUserBody)},
		{"POST", "/api/v1/users", nil},
		{"GET", "/api/v1/users?phone_number=%2B14155552671", nil},
		{"GET", "/api/v1/files/a%2Fb%20c?q=%E2%82%AC&x", nil},
		{"DELETE", "/api/v1/users/42", nil},
		{"PUT", "/api/v1/brand", []byte(`{"name":"Acme"}`)},
	} {
		req, err := http.NewRequest(tc.method, srv.URL+tc.target, bytes.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		signing.SignRequest(req, testUser, vecSecret, tc.body, now)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(got) != tc.target {
			t.Errorf("%s %s: %d %q", tc.method, tc.target, resp.StatusCode, got)
		}
	}

	// A wrong secret is refused with 401 and the standard message.
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/brand", nil)
	signing.SignRequest(req, testUser, signing.NewSecret(), nil, now)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.TrimSpace(string(got)) != mismatch {
		t.Errorf("wrong secret: %d %q", resp.StatusCode, got)
	}
}

func TestVerifyFailures(t *testing.T) {
	v := fixedVerifier(vecTime)
	body := []byte(vecUserBody)
	const target = "/api/v1/users?phone_number=%2B14155552671"

	// post returns freshly signed POST headers.
	post := func() http.Header {
		h, _ := signed(t, "POST", target, body, vecSecret, vecTime)
		return h
	}
	get := func() http.Header {
		h, _ := signed(t, "GET", target, nil, vecSecret, vecTime)
		return h
	}

	for _, tc := range []struct {
		name    string
		method  string
		target  string
		h       http.Header
		body    []byte
		reason  string
		headers bool // fails in VerifyHeaders, before the body is read
	}{
		{"missing username", "POST", target, without(post(), "X-Service-Hmac-Username"), body, "missing header x-service-hmac-username", true},
		{"empty username", "POST", target, with(post(), "X-Service-Hmac-Username", ""), body, "missing header x-service-hmac-username", true},
		{"missing signature", "POST", target, without(post(), "X-Service-Hmac-Sha256"), body, "missing header x-service-hmac-sha256", true},
		{"missing date", "POST", target, without(post(), "X-Date"), body, "missing header x-date", true},
		{"missing digest on POST", "POST", target, without(post(), "X-Digest"), body, "missing x-digest", true},
		{"missing digest on lowercase post", "post", target, without(post(), "X-Digest"), body, "missing x-digest", true},
		{"missing digest on PUT", "PUT", target, without(post(), "X-Digest"), body, "missing x-digest", true},
		{"empty digest on POST", "POST", target, with(post(), "X-Digest", ""), body, "missing x-digest", true},
		{"duplicate username", "POST", target, added(post(), "X-Service-Hmac-Username", testUser), body, "duplicate header x-service-hmac-username", true},
		{"duplicate signature", "POST", target, added(post(), "X-Service-Hmac-Sha256", "x"), body, "duplicate header x-service-hmac-sha256", true},
		{"duplicate date", "POST", target, added(post(), "X-Date", vecDate), body, "duplicate header x-date", true},
		{"duplicate digest", "POST", target, added(post(), "X-Digest", vecUserDigest), body, "duplicate header x-digest", true},
		{"wrong secret", "POST", target, signedWith(t, signing.NewSecret()), body, "signature mismatch", true},
		{"tampered method", "PUT", target, post(), body, "signature mismatch", true},
		{"tampered method GET to DELETE", "DELETE", target, get(), nil, "signature mismatch", true},
		{"tampered path", "POST", "/api/v1/userz?phone_number=%2B14155552671", post(), body, "signature mismatch", true},
		{"tampered path encoding", "POST", "/api/v1/users?phone_number=+14155552671", post(), body, "signature mismatch", true},
		{"tampered query", "POST", "/api/v1/users?phone_number=%2B14155552672", post(), body, "signature mismatch", true},
		{"dropped query", "POST", "/api/v1/users", post(), body, "signature mismatch", true},
		{"tampered date", "POST", target, with(post(), "X-Date", "Sun, 22 Nov 2026 08:49:38 GMT"), body, "signature mismatch", true},
		{"tampered digest header", "POST", target, with(post(), "X-Digest", vecEmptyDig), nil, "signature mismatch", true},
		{"digest added on GET", "GET", target, with(get(), "X-Digest", vecEmptyDig), nil, "signature mismatch", true},
		{"digest dropped on DELETE with body", "DELETE", target, without(signedHeaders(t, "DELETE", target, body), "X-Digest"), body, "signature mismatch", true},
		{"truncated signature", "POST", target, with(post(), "X-Service-Hmac-Sha256", post().Get("X-Service-Hmac-Sha256")[:43]), body, "signature mismatch", true},
		{"unpadded signature", "POST", target, with(post(), "X-Service-Hmac-Sha256", strings.TrimRight(post().Get("X-Service-Hmac-Sha256"), "=")), body, "signature mismatch", true},
		{"unparseable date", "POST", target, with(post(), "X-Date", "yesterday"), body, badDate, true},
		{"RFC 850 date", "POST", target, with(post(), "X-Date", "Sunday, 22-Nov-26 08:49:37 GMT"), body, badDate, true},
		{"wrong day name", "POST", target, with(post(), "X-Date", "Mon, 22 Nov 2026 08:49:37 GMT"), body, badDate, true},
		{"tampered body", "POST", target, post(), []byte(`{"phone_number":"+14155552672"}`), "x-digest does not match body", false},
		{"empty body", "POST", target, post(), nil, "x-digest does not match body", false},
		{"body on GET without digest", "GET", target, get(), []byte("x"), "missing x-digest", false},
		{"GET digest mismatch", "GET", target, signedHeaders(t, "GET", target, []byte("a")), []byte("b"), "x-digest does not match body", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret, found := lookup(tc.h)
			herr := v.VerifyHeaders(tc.method, tc.target, tc.h, secret, found)
			if tc.headers {
				checkErr(t, herr, tc.reason)
				return
			}
			if herr != nil {
				t.Fatalf("VerifyHeaders: %v, want success", herr)
			}
			checkErr(t, signing.VerifyBody(tc.h, tc.body), tc.reason)
			// VerifyDigest agrees with VerifyBody.
			checkErr(t, signing.VerifyDigest(tc.h.Get(signing.HeaderDigest), signing.Digest(tc.body)), tc.reason)
		})
	}
}

func TestVerifyDigest(t *testing.T) {
	for _, tc := range []struct {
		claimed, computed string
		reason            string // "" means success
	}{
		{vecUserDigest, vecUserDigest, ""},
		{"", vecEmptyDig, ""},
		{vecEmptyDig, vecEmptyDig, ""},
		{"", vecUserDigest, "missing x-digest"},
		{vecUserDigest, vecEmptyDig, "x-digest does not match body"},
		{vecUserDigest[:len(vecUserDigest)-1], vecUserDigest, "x-digest does not match body"},
		{vecUserDigest + "=", vecUserDigest, "x-digest does not match body"},
		{"sha-256=" + vecUserDigest[8:], vecUserDigest, "x-digest does not match body"},
		{"garbage", "garbage", "x-digest does not match body"},
	} {
		err := signing.VerifyDigest(tc.claimed, tc.computed)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("VerifyDigest(%q, %q) = %v", tc.claimed, tc.computed, err)
			}
			continue
		}
		checkErr(t, err, tc.reason)
	}
}

func TestDateWindow(t *testing.T) {
	now := vecTime
	v := fixedVerifier(now)
	for _, tc := range []struct {
		offset time.Duration // of x-date relative to the server's clock
		ok     bool
	}{
		{0, true},
		{-300 * time.Second, true},
		{300 * time.Second, true},
		{-301 * time.Second, false},
		{301 * time.Second, false},
		{-24 * time.Hour, false},
		{24 * time.Hour, false},
	} {
		h, target := signed(t, "POST", "/api/v1/users", []byte(vecUserBody), vecSecret, now.Add(tc.offset))
		err := verify(v, "POST", target, h, []byte(vecUserBody))
		if tc.ok {
			if err != nil {
				t.Errorf("offset %v: %v", tc.offset, err)
			}
			continue
		}
		t.Run(tc.offset.String(), func(t *testing.T) { checkErr(t, err, skewReason) })
	}

	// Custom skew.
	strict := &signing.Verifier{Skew: 5 * time.Second, Now: func() time.Time { return now }}
	h, target := signed(t, "GET", "/api/v1/brand", nil, vecSecret, now.Add(-6*time.Second))
	checkErr(t, verify(strict, "GET", target, h, nil), skewReason)
	h, target = signed(t, "GET", "/api/v1/brand", nil, vecSecret, now.Add(-5*time.Second))
	if err := verify(strict, "GET", target, h, nil); err != nil {
		t.Errorf("5s skew, 5s old: %v", err)
	}

	// The zero Verifier uses the real clock.
	h, target = signed(t, "GET", "/api/v1/brand", nil, vecSecret, time.Now())
	if err := verify(&signing.Verifier{}, "GET", target, h, nil); err != nil {
		t.Errorf("zero Verifier, fresh request: %v", err)
	}
	h, target = signed(t, "GET", "/api/v1/brand", nil, vecSecret, time.Now().Add(-10*time.Minute))
	checkErr(t, verify(&signing.Verifier{}, "GET", target, h, nil), skewReason)
}

// TestUnknownUser checks that an unknown user cannot be told apart from a
// wrong signature.
func TestUnknownUser(t *testing.T) {
	v := fixedVerifier(vecTime)
	h, target := signed(t, "POST", "/api/v1/users", []byte(vecUserBody), vecSecret, vecTime)

	wrongSig := v.VerifyHeaders("POST", target, h, []byte(signing.NewSecret()), true)
	checkErr(t, wrongSig, "signature mismatch")

	// found=false fails even when the secret passed happens to be right.
	for _, secret := range [][]byte{nil, []byte(vecSecret)} {
		unknown := v.VerifyHeaders("POST", target, h, secret, false)
		checkErr(t, unknown, "signature mismatch")
		if unknown.Error() != wrongSig.Error() || unknown.Error() != mismatch {
			t.Errorf("unknown user error %q, wrong signature error %q: must be identical", unknown, wrongSig)
		}
	}

	// An empty secret never verifies, even with a signature made with the
	// empty key.
	h.Set(signing.HeaderSignature, signing.Signature("", vecDate, "POST", target, vecUserDigest))
	checkErr(t, v.VerifyHeaders("POST", target, h, []byte{}, true), "signature mismatch")
}

func TestVerifyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not stable under -race")
	}
	v := fixedVerifier(vecTime)
	body := []byte(vecUserBody)
	h, target := signed(t, "POST", "/api/v1/users", body, vecSecret, vecTime)
	secret := []byte(vecSecret)
	var err error
	headers := testing.AllocsPerRun(100, func() { err = v.VerifyHeaders("POST", target, h, secret, true) })
	if err != nil {
		t.Fatal(err)
	}
	// crypto/hmac.New allocates 5 times; nothing else should.
	if headers > 5 {
		t.Errorf("VerifyHeaders: %v allocs, want at most 5", headers)
	}
	if n := testing.AllocsPerRun(100, func() { err = signing.VerifyBody(h, body) }); n != 0 || err != nil {
		t.Errorf("VerifyBody: %v allocs, err %v; want 0, nil", n, err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = v.VerifyHeaders("POST", target, h, secret, false) }); n > 5 {
		t.Errorf("VerifyHeaders (unknown user): %v allocs, want at most 5", n)
	}
}

func without(h http.Header, key string) http.Header {
	delete(h, key)
	return h
}

func with(h http.Header, key, value string) http.Header {
	h[key] = []string{value}
	return h
}

func added(h http.Header, key, value string) http.Header {
	h[key] = append(h[key], value)
	return h
}

func signedWith(t *testing.T, secret string) http.Header {
	h, _ := signed(t, "POST", "/api/v1/users?phone_number=%2B14155552671", []byte(vecUserBody), secret, vecTime)
	return h
}

func signedHeaders(t *testing.T, method, target string, body []byte) http.Header {
	h, _ := signed(t, method, target, body, vecSecret, vecTime)
	return h
}
