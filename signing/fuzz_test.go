package signing_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/parleyhq/parley/signing"
)

// FuzzVerify feeds arbitrary header values to VerifyHeaders. It must never
// panic. It must never accept a signature other than the right one. It must
// always accept the right one unless something other than the signature is
// wrong. And an unknown user must get exactly the error a known user gets
// for the same request, or "signature mismatch" where the known user
// succeeds.
func FuzzVerify(f *testing.F) {
	const (
		getSig  = "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY="
		postSig = "QOQuw40R0jvRJJkSrnpNT50WVQDPWOUh+FyI6yiUR8U="
	)
	f.Add("GET", "/api/v1/brand", vecDate, "", getSig)
	f.Add("get", "/api/v1/brand", vecDate, "", getSig)
	f.Add("GET", "/api/v1/brand", vecDate, "", getSig[:43])
	f.Add("GET", "/api/v1/brand", vecDate, "", getSig[:43]+"Z")
	f.Add("GET", "/api/v1/brand", vecDate, "", getSig+"\n")
	f.Add("GET", "/api/v1/brand", vecDate, vecEmptyDig, getSig)
	f.Add("POST", "/api/v1/users", vecDate, vecUserDigest, postSig)
	f.Add("POST", "/api/v1/users", vecDate, "", postSig)
	f.Add("PUT", "/api/v1/users", vecDate, vecUserDigest, postSig)
	f.Add("POST", "/api/v1/users", "Sun, 22 Nov 2026 08:54:38 GMT", vecUserDigest, postSig)
	f.Add("POST", "/api/v1/users", "Sun, 22 Nov 2026 08:49:37 UTC", vecUserDigest, postSig)
	f.Add("DELETE", "/api/v1/users?phone_number=%2B14155552671", vecDate, "", "")
	f.Add("", "", "", "", "")
	f.Add("\x00", "\n", "\xff", "\n(request-target): get /", "====")
	f.Fuzz(func(t *testing.T, method, target, date, digest, sig string) {
		v := fixedVerifier(vecTime)
		secret := []byte(vecSecret)
		h := http.Header{
			"X-Service-Hmac-Username": {testUser},
			"X-Date":                  {date},
			"X-Service-Hmac-Sha256":   {sig},
		}
		if digest != "" {
			h["X-Digest"] = []string{digest}
		}
		right := signing.Signature(vecSecret, date, method, target, digest)

		err := v.VerifyHeaders(method, target, h, secret, true)
		if err == nil && sig != right {
			t.Fatalf("accepted signature %q, the right one is %q", sig, right)
		}
		checkFuzzErr(t, err)

		unknown := v.VerifyHeaders(method, target, h, secret, false)
		switch {
		case unknown == nil:
			t.Fatalf("unknown user accepted")
		case err == nil && unknown.Error() != mismatch:
			t.Fatalf("unknown user: %q, want %q", unknown, mismatch)
		case err != nil && unknown.Error() != err.Error():
			t.Fatalf("unknown user: %q, known user: %q", unknown, err)
		}

		// With the right signature only the other checks can fail.
		h["X-Service-Hmac-Sha256"] = []string{right}
		err = v.VerifyHeaders(method, target, h, secret, true)
		checkFuzzErr(t, err)
		if err != nil && err.Error() == mismatch {
			t.Fatalf("right signature rejected: %v", err)
		}
		if err == nil && date != vecDate {
			// Only dates within the window pass. The window is
			// wide, so check the date parses.
			if _, ok := signing.ParseIMFFixdate(date); !ok {
				t.Fatalf("accepted unparseable date %q", date)
			}
		}
	})
}

func checkFuzzErr(t *testing.T, err error) {
	t.Helper()
	var se *signing.Error
	if err != nil && (!errors.As(err, &se) || !strings.HasPrefix(err.Error(), errPrefix)) {
		t.Fatalf("bad error %T %q", err, err)
	}
}

// FuzzSignVerify checks that whatever SignRequest signs, VerifyHeaders and
// VerifyBody accept.
func FuzzSignVerify(f *testing.F) {
	f.Add("GET", "/api/v1/brand", []byte(nil), vecSecret)
	f.Add("POST", "/api/v1/users", []byte(vecUserBody), vecSecret)
	f.Add("POST", "/api/v1/users", []byte{}, vecSecret)
	f.Add("PUT", "/api/v1/brand", []byte(`{}`), "k")
	f.Add("GET", "/api/v1/users?phone_number=%2B14155552671", []byte(nil), vecSecret)
	f.Add("DELETE", "/api/v1/users/a%2Fb", []byte("x"), vecSecret)
	f.Add("", "", []byte(nil), vecSecret)
	f.Add("post", "http://h/p?q#f", []byte("\x00"), strings.Repeat("s", 100))
	f.Add("PATCH", "/a b/%zz?%", []byte("body"), "\xff")
	f.Fuzz(func(t *testing.T, method, target string, body []byte, secret string) {
		if secret == "" {
			return // the server never accepts an empty secret
		}
		u, err := url.Parse(target)
		if err != nil {
			u = &url.URL{Path: target}
		}
		req := &http.Request{Method: method, URL: u}
		signing.SignRequest(req, testUser, secret, body, vecTime)

		sent := method
		if sent == "" {
			sent = "GET"
		}
		requireDigest := strings.EqualFold(sent, "POST") || strings.EqualFold(sent, "PUT")
		if _, ok := req.Header["X-Digest"]; ok != (requireDigest || len(body) > 0) {
			t.Fatalf("x-digest sent = %v for %q with %d-byte body", ok, sent, len(body))
		}
		v := fixedVerifier(vecTime)
		if err := v.VerifyHeaders(sent, req.URL.RequestURI(), req.Header, []byte(secret), true); err != nil {
			t.Fatalf("VerifyHeaders(%q, %q): %v", sent, req.URL.RequestURI(), err)
		}
		if err := signing.VerifyBody(req.Header, body); err != nil {
			t.Fatalf("VerifyBody: %v", err)
		}
		d := signing.NewDigester()
		d.Write(body)
		if err := signing.VerifyDigest(req.Header.Get(signing.HeaderDigest), d.Sum()); err != nil {
			t.Fatalf("VerifyDigest: %v", err)
		}
	})
}
