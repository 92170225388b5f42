// Package signing implements Parley's HMAC request signing (decision D2).
// The server, the `parley call` CLI and the public Go client all use it.
//
// # Credentials
//
// A credential is a username plus a secret. The secret is 32 random bytes
// encoded as unpadded base64url: 43 characters, shown once when it is issued
// (see [NewSecret]). The HMAC key is the ASCII text of the secret exactly as
// issued. It is not base64-decoded first.
//
// # Headers
//
// Every request carries:
//
//	x-service-hmac-username: <username>
//	x-date:                  <IMF-fixdate, e.g. Sun, 22 Nov 2026 08:49:37 GMT>
//	x-digest:                SHA-256=<base64(SHA-256(raw body bytes))>
//	x-service-hmac-sha256:   <base64(HMAC-SHA256(secret, signing string))>
//
// x-digest is required on POST and PUT. An empty body still gets a digest:
// the digest of the empty string. On other methods x-digest is optional, but
// if it is sent it is checked too. For multipart uploads it covers the whole
// raw multipart body. Both base64 encodings are standard and padded.
//
// The server accepts x-date only when it is an IMF-fixdate (RFC 9110
// §5.6.7) within ±[DefaultSkew] of its own clock. The skew is configurable
// with [Verifier.Skew].
//
// # Signing string
//
// The signing string is built from the following lines, joined with a
// single "\n" and with no newline at the end:
//
//	x-date: <value of x-date>
//	(request-target): <lowercase method> <path>[?<query>]
//	x-digest: <value of x-digest>
//
// The x-digest line is present only when the x-digest header is sent. The
// request target is exactly what the client put on the request line:
// percent-encoding is preserved, the /api/v1 prefix is included, and the
// "?" is left out when there is no query. Clients get it from
// [net/url.URL.RequestURI]. Servers get it from [net/http.Request.RequestURI]
// (see [RequestTarget]).
//
// For example, a GET /api/v1/brand signed at Sun, 22 Nov 2026 08:49:37 GMT
// has this signing string:
//
//	x-date: Sun, 22 Nov 2026 08:49:37 GMT
//	(request-target): get /api/v1/brand
//
// # Client side
//
//	req, _ := http.NewRequest("POST", base+"/api/v1/users", bytes.NewReader(body))
//	signing.SignRequest(req, username, secret, body, time.Now())
//
// # Server side
//
// Verification has two steps, so that unauthenticated requests are turned
// away before their body is read:
//
//	secret, found := store.Lookup(r.Header.Get(signing.HeaderUsername))
//	if err := verifier.VerifyHeaders(r.Method, signing.RequestTarget(r), r.Header, secret, found); err != nil {
//		http.Error(w, err.Error(), http.StatusUnauthorized)
//		return
//	}
//	body, _ := io.ReadAll(r.Body)
//	if err := signing.VerifyBody(r.Header, body); err != nil {
//		http.Error(w, err.Error(), http.StatusUnauthorized)
//		return
//	}
//
// To verify a body while streaming it, for example a multipart upload, feed
// the body through a [Digester]. Read it to EOF, because a multipart reader
// may stop before the closing epilogue. Then call
// VerifyDigest(r.Header.Get(HeaderDigest), d.Sum()). Do not act on anything
// read from the body until that check passes.
//
// Every failure is a *[Error], whose Error() text is
// "HMAC signature verification failed", optionally followed by ": <reason>".
// The reason is safe to send to the client. An unknown username and a wrong
// signature give the same error and take the same time.
package signing
