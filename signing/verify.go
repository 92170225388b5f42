package signing

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// errPrefix is the start of every verification error message.
const errPrefix = "HMAC signature verification failed"

// Error is the error returned by every verification failure. The server
// should answer it with 401 and Error() as the message. Reason is safe to
// show to the client. It never tells an unknown username apart from a wrong
// signature: both are "signature mismatch".
type Error struct {
	Reason string
}

// Error returns "HMAC signature verification failed: <reason>", or just
// "HMAC signature verification failed" when Reason is empty.
func (e *Error) Error() string {
	if e.Reason == "" {
		return errPrefix
	}
	return errPrefix + ": " + e.Reason
}

// The errors are allocated once, so that rejecting a request allocates
// nothing. Callers must not modify them.
var (
	errMissingUsername  = &Error{Reason: "missing header " + HeaderUsername}
	errMissingSignature = &Error{Reason: "missing header " + HeaderSignature}
	errMissingDate      = &Error{Reason: "missing header " + HeaderDate}
	errDupUsername      = &Error{Reason: "duplicate header " + HeaderUsername}
	errDupSignature     = &Error{Reason: "duplicate header " + HeaderSignature}
	errDupDate          = &Error{Reason: "duplicate header " + HeaderDate}
	errDupDigest        = &Error{Reason: "duplicate header " + HeaderDigest}
	errMissingDigest    = &Error{Reason: "missing " + HeaderDigest}
	errDigestMismatch   = &Error{Reason: HeaderDigest + " does not match body"}
	errInvalidDate      = &Error{Reason: "invalid " + HeaderDate + ", want an IMF-fixdate such as Sun, 06 Nov 1994 08:49:37 GMT"}
	errDateSkew         = &Error{Reason: HeaderDate + " outside allowed clock skew"}
	errSignature        = &Error{Reason: "signature mismatch"}
)

// emptyDigest is Digest(nil).
var emptyDigest = Digest(nil)

// dummyKey is the HMAC key used when the username is unknown. It is the
// same length as a real secret, so the HMAC takes the same time.
var dummyKey = []byte(NewSecret())

// bufPool holds buffers for the signing string. They must live on the heap
// anyway, because hash.Hash.Write is an interface call.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

// maxPooledBuf is the largest buffer returned to bufPool, so one huge
// request target does not stay in memory.
const maxPooledBuf = 4 << 10

// A Verifier checks request signatures on the server. The zero value (and a
// nil *Verifier) is ready to use. A Verifier must not be changed while it is in use, but it
// is safe for concurrent use otherwise.
type Verifier struct {
	// Skew is the largest accepted difference, either way, between x-date
	// and Now(). Zero or negative means DefaultSkew.
	Skew time.Duration
	// Now returns the server's current time. nil means time.Now.
	Now func() time.Time
}

// VerifyHeaders checks everything that does not need the body. Call it
// before reading the body, then call VerifyBody or VerifyDigest once the
// body has been read.
//
// It checks, in order:
//   - the username, signature and date headers are present and not repeated;
//   - x-digest is present on POST and PUT, and not repeated;
//   - x-date is an IMF-fixdate within the allowed skew;
//   - x-service-hmac-sha256 equals the HMAC of the signing string built from
//     method, requestTarget and the headers, including the x-digest value as
//     claimed.
//
// method is r.Method and requestTarget is RequestTarget(r). The caller looks
// up secret from h.Get(HeaderUsername). When the username is unknown or
// revoked, pass found=false: VerifyHeaders then still computes an HMAC, with
// a dummy key, and returns the same error as for a wrong signature. An
// empty secret is treated as not found.
//
// Header values are read from their canonical keys, as net/http stores them
// (Header.Get gives the same results).
//
// Every error returned is a *Error.
func (v *Verifier) VerifyHeaders(method, requestTarget string, h http.Header, secret []byte, found bool) error {
	if _, err := single(h, canonUsername, errMissingUsername, errDupUsername); err != nil {
		return err
	}
	sig, err := single(h, canonSignature, errMissingSignature, errDupSignature)
	if err != nil {
		return err
	}
	date, err := single(h, canonDate, errMissingDate, errDupDate)
	if err != nil {
		return err
	}
	var digest string
	switch vs := h[canonDigest]; len(vs) {
	case 0:
	case 1:
		digest = vs[0]
	default:
		return errDupDigest
	}
	if digest == "" && digestRequired(method) {
		return errMissingDigest
	}

	t, ok := parseIMFFixdate(date)
	if !ok {
		return errInvalidDate
	}
	var cfg Verifier
	if v != nil {
		cfg = *v
	}
	skew := cfg.Skew
	if skew <= 0 {
		skew = DefaultSkew
	}
	var now time.Time
	if cfg.Now != nil {
		now = cfg.Now()
	} else {
		now = time.Now()
	}
	if d := now.Sub(t); d > skew || d < -skew {
		return errDateSkew
	}

	// From here on the work is the same whether or not the user exists.
	key := secret
	if !found || len(secret) == 0 {
		found = false
		key = dummyKey
	}
	// The MAC is appended to the pooled buffer, after the signing string:
	// a stack array passed to the interface method Sum would escape.
	bp := bufPool.Get().(*[]byte)
	buf := appendStringToSign((*bp)[:0], date, method, requestTarget, digest)
	m := hmac.New(sha256.New, key)
	m.Write(buf)
	n := len(buf)
	buf = m.Sum(buf)
	var wantB64, got [signatureLen]byte
	base64.StdEncoding.Encode(wantB64[:], buf[n:])
	if cap(buf) <= maxPooledBuf {
		*bp = buf[:0]
		bufPool.Put(bp)
	}

	// The length of the claimed signature is not secret. Comparing the
	// base64 text, not decoded bytes, accepts exactly one spelling of the
	// signature.
	match := len(sig) == signatureLen
	if match {
		copy(got[:], sig)
	}
	match = hmac.Equal(got[:], wantB64[:]) && match
	if !match || !found {
		return errSignature
	}
	return nil
}

// single returns the only value of h[key], or errMissing when it is absent
// or empty, or errDup when it is repeated.
func single(h http.Header, key string, errMissing, errDup error) (string, error) {
	vs := h[key]
	switch {
	case len(vs) > 1:
		return "", errDup
	case len(vs) == 0 || vs[0] == "":
		return "", errMissing
	}
	return vs[0], nil
}

// VerifyBody checks the x-digest header in h against body, the raw request
// body bytes, once they have been read. Without an x-digest header only an
// empty body is accepted, so an unsigned body is never accepted. (On POST
// and PUT, VerifyHeaders has already rejected a missing x-digest.) It does
// not allocate. Every error returned is a *Error.
func VerifyBody(h http.Header, body []byte) error {
	var claimed string
	if vs := h[canonDigest]; len(vs) > 0 {
		claimed = vs[0]
	}
	if claimed == "" {
		if len(body) != 0 {
			return errMissingDigest
		}
		return nil
	}
	var buf [digestLen]byte
	return compareDigest(claimed, appendDigest(buf[:0], body))
}

// VerifyDigest compares claimed, the x-digest header value (or "" when the
// header was not sent), with computed, the digest of the body actually
// received (from Digest or Digester.Sum). They are compared in constant
// time. When claimed is "", only the digest of the empty body is accepted.
// Every error returned is a *Error.
func VerifyDigest(claimed, computed string) error {
	if claimed == "" {
		if computed != emptyDigest {
			return errMissingDigest
		}
		return nil
	}
	var buf [digestLen]byte
	if len(computed) != digestLen {
		return errDigestMismatch
	}
	return compareDigest(claimed, append(buf[:0], computed...))
}

// compareDigest compares claimed with computed, a digestLen-byte digest
// value, in constant time.
func compareDigest(claimed string, computed []byte) error {
	var got [digestLen]byte
	match := len(claimed) == digestLen
	if match {
		copy(got[:], claimed)
	}
	if subtle.ConstantTimeCompare(got[:], computed) != 1 || !match {
		return errDigestMismatch
	}
	return nil
}
