package signing_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/signing"
)

// The D2 test vectors.
const (
	vecSecret     = "q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk"
	vecDate       = "Sun, 22 Nov 2026 08:49:37 GMT"
	vecUserBody   = `{"phone_number":"+14155552671"}`
	vecUserDigest = "SHA-256=sTWXcw8QP5nsoTTwM7n9PrLB790OBhlk+LereXCDsGs="
	vecEmptyDig   = "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
)

// vecTime is vecDate as a time.Time.
var vecTime = time.Date(2026, time.November, 22, 8, 49, 37, 0, time.UTC)

func TestVectors(t *testing.T) {
	if got := signing.FormatDate(vecTime); got != vecDate {
		t.Errorf("FormatDate = %q, want %q", got, vecDate)
	}
	// FormatDate converts to GMT whatever the location of t.
	if got := signing.FormatDate(vecTime.In(time.FixedZone("PST", -8*3600))); got != vecDate {
		t.Errorf("FormatDate(non-UTC) = %q, want %q", got, vecDate)
	}

	t.Run("GET brand", func(t *testing.T) {
		wantSTS := "x-date: Sun, 22 Nov 2026 08:49:37 GMT\n(request-target): get /api/v1/brand"
		if got := signing.StringToSign(vecDate, "GET", "/api/v1/brand", ""); got != wantSTS {
			t.Errorf("StringToSign = %q, want %q", got, wantSTS)
		}
		const wantSig = "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY="
		if got := signing.Signature(vecSecret, vecDate, "GET", "/api/v1/brand", ""); got != wantSig {
			t.Errorf("Signature = %q, want %q", got, wantSig)
		}
		if got := refSignature(vecSecret, wantSTS); got != wantSig {
			t.Errorf("reference HMAC = %q, want %q", got, wantSig)
		}
	})

	t.Run("POST users", func(t *testing.T) {
		if got := signing.Digest([]byte(vecUserBody)); got != vecUserDigest {
			t.Errorf("Digest = %q, want %q", got, vecUserDigest)
		}
		wantSTS := "x-date: Sun, 22 Nov 2026 08:49:37 GMT\n(request-target): post /api/v1/users\nx-digest: " + vecUserDigest
		if got := signing.StringToSign(vecDate, "POST", "/api/v1/users", vecUserDigest); got != wantSTS {
			t.Errorf("StringToSign = %q, want %q", got, wantSTS)
		}
		const wantSig = "QOQuw40R0jvRJJkSrnpNT50WVQDPWOUh+FyI6yiUR8U="
		if got := signing.Signature(vecSecret, vecDate, "POST", "/api/v1/users", vecUserDigest); got != wantSig {
			t.Errorf("Signature = %q, want %q", got, wantSig)
		}
		if got := refSignature(vecSecret, wantSTS); got != wantSig {
			t.Errorf("reference HMAC = %q, want %q", got, wantSig)
		}
	})

	t.Run("empty body", func(t *testing.T) {
		for _, body := range [][]byte{nil, {}} {
			if got := signing.Digest(body); got != vecEmptyDig {
				t.Errorf("Digest(%#v) = %q, want %q", body, got, vecEmptyDig)
			}
		}
		if got := signing.NewDigester().Sum(); got != vecEmptyDig {
			t.Errorf("NewDigester().Sum() = %q, want %q", got, vecEmptyDig)
		}
	})
}

// refSignature is an independent implementation of the signature, straight
// from the spec.
func refSignature(secret, stringToSign string) string {
	m := hmac.New(sha256.New, []byte(secret))
	io.WriteString(m, stringToSign)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func TestStringToSignLowercasesMethod(t *testing.T) {
	got := signing.StringToSign("d", "DeLeTe", "/x?A=B", "")
	if want := "x-date: d\n(request-target): delete /x?A=B"; got != want {
		t.Errorf("StringToSign = %q, want %q", got, want)
	}
}

func TestDigester(t *testing.T) {
	body := bytes.Repeat([]byte("--boundary\r\nContent-Disposition: form-data\r\n\r\nabc\r\n"), 1000)
	d := signing.NewDigester()
	for chunk := range slices.Chunk(body, 777) {
		if n, err := d.Write(chunk); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	want := signing.Digest(body)
	if got := d.Sum(); got != want {
		t.Errorf("Sum = %q, want %q", got, want)
	}
	if got := d.Sum(); got != want {
		t.Errorf("second Sum = %q, want %q (Sum must not change state)", got, want)
	}
	d.Reset()
	if got := d.Sum(); got != vecEmptyDig {
		t.Errorf("Sum after Reset = %q, want %q", got, vecEmptyDig)
	}
}

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := signing.NewSecret()
		if len(s) != 43 {
			t.Fatalf("NewSecret() = %q, length %d, want 43", s, len(s))
		}
		raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
		if err != nil || len(raw) != 32 {
			t.Fatalf("NewSecret() = %q: decodes to %d bytes, err %v", s, len(raw), err)
		}
		if seen[s] {
			t.Fatalf("NewSecret() repeated %q", s)
		}
		seen[s] = true
	}
}

func TestSignRequestHeaders(t *testing.T) {
	req := httptest.NewRequest("POST", "https://api.example.com/api/v1/users", strings.NewReader(vecUserBody))
	req.RequestURI = "" // make it an outgoing request
	signing.SignRequest(req, "acme", vecSecret, []byte(vecUserBody), vecTime.Add(300*time.Millisecond))
	want := map[string]string{
		"X-Service-Hmac-Username": "acme",
		"X-Date":                  vecDate,
		"X-Digest":                vecUserDigest,
		"X-Service-Hmac-Sha256":   "QOQuw40R0jvRJJkSrnpNT50WVQDPWOUh+FyI6yiUR8U=",
	}
	for k, v := range want {
		if got := req.Header[k]; len(got) != 1 || got[0] != v {
			t.Errorf("header %s = %q, want [%q]", k, got, v)
		}
	}

	// Signing the same request again as a GET drops the stale x-digest.
	req.Method = "GET"
	req.URL.Path = "/api/v1/brand"
	signing.SignRequest(req, "acme", vecSecret, nil, vecTime)
	if _, ok := req.Header["X-Digest"]; ok {
		t.Errorf("x-digest still set after re-signing a GET with no body")
	}
	if got, want := req.Header.Get(signing.HeaderSignature), "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY="; got != want {
		t.Errorf("signature = %q, want %q", got, want)
	}

	// A nil Header and an empty Method (GET) are handled.
	req = &http.Request{URL: &url.URL{Path: "/api/v1/brand"}}
	signing.SignRequest(req, "acme", vecSecret, nil, vecTime)
	if got, want := req.Header.Get(signing.HeaderSignature), "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY="; got != want {
		t.Errorf("signature with empty Method = %q, want %q", got, want)
	}
}

func TestRequestTarget(t *testing.T) {
	for _, tc := range []struct{ requestURI, want string }{
		{"/api/v1/users?phone_number=%2B14155552671", "/api/v1/users?phone_number=%2B14155552671"},
		{"/api/v1/a%2Fb", "/api/v1/a%2Fb"},
		{"*", "*"},
		{"http://api.example.com/api/v1/users?x=%2B1", "/api/v1/users?x=%2B1"},
		{"http://api.example.com:8080", "/"},
		{"http://api.example.com?x=1", "/?x=1"},
		{"api.example.com:443", "api.example.com:443"},
	} {
		r := &http.Request{RequestURI: tc.requestURI, URL: &url.URL{Path: "/ignored"}}
		if got := signing.RequestTarget(r); got != tc.want {
			t.Errorf("RequestTarget(RequestURI %q) = %q, want %q", tc.requestURI, got, tc.want)
		}
	}
	// Outgoing request: the URL's RequestURI.
	u, _ := url.Parse("https://h/api/v1/a%2Fb?q=%2B1")
	if got, want := signing.RequestTarget(&http.Request{URL: u}), "/api/v1/a%2Fb?q=%2B1"; got != want {
		t.Errorf("RequestTarget(outgoing) = %q, want %q", got, want)
	}
}

func TestErrorMessage(t *testing.T) {
	if got, want := (&signing.Error{}).Error(), "HMAC signature verification failed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got, want := (&signing.Error{Reason: "x"}).Error(), "HMAC signature verification failed: x"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestParseIMFFixdate(t *testing.T) {
	good := []string{
		vecDate,
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Thu, 29 Feb 2024 23:59:59 GMT",
		"Thu, 01 Jan 1970 00:00:00 GMT",
	}
	for _, s := range good {
		got, ok := signing.ParseIMFFixdate(s)
		want, err := time.Parse(http.TimeFormat, s)
		if !ok || err != nil || !got.Equal(want) {
			t.Errorf("parse %q = %v, %v; want %v", s, got, ok, want)
		}
	}
	bad := []string{
		"",
		"garbage",
		"Sunday, 22-Nov-26 08:49:37 GMT", // RFC 850
		"Sun Nov 22 08:49:37 2026",       // asctime
		"Sun, 22 Nov 2026 08:49:37 UTC",
		"Sun, 22 Nov 2026 08:49:37 +0000",
		"Sun, 22 Nov 2026 08:49:37 GMT ",
		" Sun, 22 Nov 2026 08:49:37 GMT",
		"sun, 22 Nov 2026 08:49:37 GMT",
		"Sun, 22 nov 2026 08:49:37 GMT",
		"Mon, 22 Nov 2026 08:49:37 GMT", // wrong day name
		"Sun, 2 Nov 2026 08:49:37 GMT",
		"Sun,  2 Nov 2026 08:49:37 GMT",
		"Sun, 22 Nov 2026 8:49:37 GMT",
		"Sun, 00 Nov 2026 08:49:37 GMT",
		"Sat, 31 Feb 2026 08:49:37 GMT",
		"Sun, 22 Nov 2026 24:00:00 GMT",
		"Sun, 22 Nov 2026 08:60:00 GMT",
		"Sun, 22 Nov 2026 08:49:60 GMT",
		"Sun, 22 Nov 2026 08:49:3x GMT",
		"Sun, 22 Nov -026 08:49:37 GMT",
		"Sun, 22 Nov 2026T08:49:37 GMT",
		"2026-11-22T08:49:37Z",
	}
	for _, s := range bad {
		if got, ok := signing.ParseIMFFixdate(s); ok {
			t.Errorf("parse %q = %v, want failure", s, got)
		}
	}
}

// FuzzParseIMFFixdate checks the strict parser against time.Parse: anything
// it accepts, time.Parse accepts with the same result, and formatting it
// back gives the input.
func FuzzParseIMFFixdate(f *testing.F) {
	f.Add(vecDate)
	f.Add("Sat, 31 Feb 2026 08:49:37 GMT")
	f.Add("Mon, 22 Nov 2026 08:49:37 GMT")
	f.Add("Sunday, 22-Nov-26 08:49:37 GMT")
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := signing.ParseIMFFixdate(s)
		if !ok {
			return
		}
		want, err := time.Parse(http.TimeFormat, s)
		if err != nil || !got.Equal(want) {
			t.Fatalf("parse %q = %v; time.Parse = %v, %v", s, got, want, err)
		}
		if f := signing.FormatDate(got); f != s {
			t.Fatalf("parse %q then FormatDate = %q", s, f)
		}
	})
}
