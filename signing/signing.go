package signing

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/http"
	"strings"
	"time"
)

// Header names, in the lowercase form used in the signing string. The
// net/http helpers (Header.Get, Header.Set) accept them as they are.
const (
	HeaderSignature = "x-service-hmac-sha256"
	HeaderUsername  = "x-service-hmac-username"
	HeaderDate      = "x-date"
	HeaderDigest    = "x-digest"

	// DefaultSkew is the largest clock difference between x-date and the
	// server's clock, either way, that a Verifier with a zero Skew accepts.
	DefaultSkew = 300 * time.Second
)

// Canonical MIME forms of the header names, as net/http stores them in an
// http.Header map. Looking these up directly avoids canonicalising the key
// on every request.
const (
	canonSignature = "X-Service-Hmac-Sha256"
	canonUsername  = "X-Service-Hmac-Username"
	canonDate      = "X-Date"
	canonDigest    = "X-Digest"
)

const (
	digestPrefix = "SHA-256="
	// digestLen is the length of an x-digest value: the prefix plus a
	// padded base64 SHA-256 sum.
	digestLen = len(digestPrefix) + 44
	// signatureLen is the length of a padded base64 HMAC-SHA256.
	signatureLen = 44
	// secretBytes is how much randomness a secret carries.
	secretBytes = 32
)

// NewSecret returns a new secret: 32 bytes from crypto/rand, encoded as
// base64url without padding (43 characters).
func NewSecret() string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // never fails; crashes the program if the OS RNG is unavailable
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Digest returns the x-digest value for body: "SHA-256=" followed by the
// padded standard base64 of SHA-256(body). A nil body is the empty body.
func Digest(body []byte) string {
	var buf [digestLen]byte
	return string(appendDigest(buf[:0], body))
}

// appendDigest appends the x-digest value for body to dst.
func appendDigest(dst, body []byte) []byte {
	sum := sha256.Sum256(body)
	return appendDigestSum(dst, &sum)
}

func appendDigestSum(dst []byte, sum *[sha256.Size]byte) []byte {
	dst = append(dst, digestPrefix...)
	return base64.StdEncoding.AppendEncode(dst, sum[:])
}

// A Digester computes an x-digest value over a stream, for bodies too large
// to buffer, such as multipart uploads. It is an io.Writer: write the whole
// raw body to it, then call Sum. The zero value is not usable. Use
// NewDigester.
type Digester struct {
	h hash.Hash
}

// NewDigester returns a Digester for an empty body.
func NewDigester() *Digester {
	return &Digester{h: sha256.New()}
}

// Write adds p to the running digest. It never returns an error.
func (d *Digester) Write(p []byte) (int, error) {
	return d.h.Write(p)
}

// Sum returns the x-digest value of everything written so far, in the same
// format as Digest. It does not change the running state.
func (d *Digester) Sum() string {
	var sum [sha256.Size]byte
	d.h.Sum(sum[:0])
	var buf [digestLen]byte
	return string(appendDigestSum(buf[:0], &sum))
}

// Reset discards everything written, so the Digester starts again on an
// empty body.
func (d *Digester) Reset() {
	d.h.Reset()
}

// StringToSign returns the signing string for a request. date is the
// x-date value. method is lowercased (ASCII only). requestTarget is the path
// and optional "?query" exactly as sent on the request line. digest is the
// x-digest value, or "" when no x-digest header is sent, which leaves out
// the x-digest line.
func StringToSign(date, method, requestTarget, digest string) string {
	return string(appendStringToSign(nil, date, method, requestTarget, digest))
}

func appendStringToSign(dst []byte, date, method, requestTarget, digest string) []byte {
	dst = append(dst, "x-date: "...)
	dst = append(dst, date...)
	dst = append(dst, "\n(request-target): "...)
	for i := 0; i < len(method); i++ {
		c := method[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	dst = append(dst, ' ')
	dst = append(dst, requestTarget...)
	if digest != "" {
		dst = append(dst, "\nx-digest: "...)
		dst = append(dst, digest...)
	}
	return dst
}

// Signature returns the x-service-hmac-sha256 value: the padded standard
// base64 of HMAC-SHA256 over StringToSign(date, method, requestTarget,
// digest), keyed with the ASCII text of secret.
func Signature(secret, date, method, requestTarget, digest string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(appendStringToSign(nil, date, method, requestTarget, digest))
	var sum [sha256.Size]byte
	return base64.StdEncoding.EncodeToString(m.Sum(sum[:0]))
}

// FormatDate formats t as an IMF-fixdate in GMT (http.TimeFormat), the
// format x-date requires.
func FormatDate(t time.Time) string {
	return t.UTC().Format(http.TimeFormat)
}

// SignRequest sets the signing headers on req for body, signed at time now.
// body must be exactly the bytes that will be sent. nil means an empty
// body. SignRequest does not set req.Body. x-digest is set on POST and PUT
// always, and on other methods only when body is not empty. The request
// target is req.URL.RequestURI(), which is what net/http puts on the
// request line.
//
// Sign again, with a fresh time, every time the request is sent.
func SignRequest(req *http.Request, username, secret string, body []byte, now time.Time) {
	digest := ""
	if digestRequired(requestMethod(req)) || len(body) > 0 {
		digest = Digest(body)
	}
	SignRequestDigest(req, username, secret, digest, now)
}

// SignRequestDigest is like SignRequest, but takes a digest computed
// beforehand with Digest or a Digester, for bodies that are streamed
// rather than held in memory. An empty digest means no x-digest header.
// The server rejects that on POST and PUT.
func SignRequestDigest(req *http.Request, username, secret, digest string, now time.Time) {
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	date := FormatDate(now)
	h := req.Header
	h.Set(HeaderUsername, username)
	h.Set(HeaderDate, date)
	if digest != "" {
		h.Set(HeaderDigest, digest)
	} else {
		h.Del(HeaderDigest)
	}
	h.Set(HeaderSignature, Signature(secret, date, requestMethod(req), req.URL.RequestURI(), digest))
}

// requestMethod returns the method net/http sends for req. An empty method
// means GET.
func requestMethod(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

// digestRequired reports whether requests with this method must carry
// x-digest. The check ignores case, so a lowercase "post" cannot skip it.
func digestRequired(method string) bool {
	return strings.EqualFold(method, http.MethodPost) || strings.EqualFold(method, http.MethodPut)
}

// RequestTarget returns the request target a server should verify for r:
// r.RequestURI as the client sent it, for origin-form requests. For an
// absolute-form request (one sent through a forward proxy), the scheme and
// authority are removed, which leaves what the client signed. For an
// outgoing client request (empty RequestURI), it returns
// r.URL.RequestURI().
func RequestTarget(r *http.Request) string {
	t := r.RequestURI
	switch {
	case t == "":
		return r.URL.RequestURI()
	case t[0] == '/' || t == "*":
		return t
	}
	i := strings.Index(t, "://")
	if i < 0 {
		return t // authority-form (CONNECT) or something unusual: use it verbatim
	}
	rest := t[i+len("://"):]
	j := strings.IndexAny(rest, "/?")
	switch {
	case j < 0:
		return "/"
	case rest[j] == '?':
		return "/" + rest[j:]
	default:
		return rest[j:]
	}
}
