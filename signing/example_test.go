package signing_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/parleyhq/parley/signing"
)

// A client signs a request just before sending it.
func ExampleSignRequest() {
	const (
		username = "acme"
		secret   = "q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk" // as issued, never decoded
	)
	body := []byte(`{"phone_number":"+14155552671"}`)
	req, err := http.NewRequest("POST", "https://api.parley.example/api/v1/users", bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")

	now := time.Date(2026, time.November, 22, 8, 49, 37, 0, time.UTC) // normally time.Now()
	signing.SignRequest(req, username, secret, body, now)

	for _, h := range []string{signing.HeaderUsername, signing.HeaderDate, signing.HeaderDigest, signing.HeaderSignature} {
		fmt.Printf("%s: %s\n", h, req.Header.Get(h))
	}
	// Output:
	// x-service-hmac-username: acme
	// x-date: Sun, 22 Nov 2026 08:49:37 GMT
	// x-digest: SHA-256=sTWXcw8QP5nsoTTwM7n9PrLB790OBhlk+LereXCDsGs=
	// x-service-hmac-sha256: QOQuw40R0jvRJJkSrnpNT50WVQDPWOUh+FyI6yiUR8U=
}

// A server checks the headers before reading the body, then checks the body
// against x-digest.
func ExampleVerifier() {
	secrets := map[string][]byte{"acme": []byte("q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk")}
	verifier := &signing.Verifier{} // DefaultSkew, time.Now

	handler := func(w http.ResponseWriter, r *http.Request) {
		secret, found := secrets[r.Header.Get(signing.HeaderUsername)]
		if err := verifier.VerifyHeaders(r.Method, signing.RequestTarget(r), r.Header, secret, found); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := signing.VerifyBody(r.Header, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "hello %s", r.Header.Get(signing.HeaderUsername))
	}

	send := func(username, secret string) {
		body := []byte(`{"phone_number":"+14155552671"}`)
		req := httptest.NewRequest("POST", "/api/v1/users", bytes.NewReader(body))
		req.RequestURI = "" // sign it as the client would
		signing.SignRequest(req, username, secret, body, time.Now())
		req.RequestURI = req.URL.RequestURI() // as the server would see it
		rec := httptest.NewRecorder()
		handler(rec, req)
		fmt.Println(rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	send("acme", "q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk")
	send("acme", "wrong-secret")
	send("nobody", "q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk")
	// Output:
	// 200 hello acme
	// 401 HMAC signature verification failed: signature mismatch
	// 401 HMAC signature verification failed: signature mismatch
}
