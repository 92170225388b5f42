package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names from the Standard Webhooks spec. They are set through
// http.Header, which canonicalises them (Webhook-Id, ...); header names are
// case-insensitive on the wire.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// Key length bounds for signing secrets, per the Standard Webhooks spec
// (24 to 64 bytes). NewSecret generates SecretBytes.
const (
	SecretBytes    = 32
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// ErrMalformedSecret is wrapped by ParseSecret, Sign and Headers when a
// secret is not "whsec_" + standard base64 of 24 to 64 bytes.
var ErrMalformedSecret = errors.New("webhook: malformed signing secret")

// NewSecret returns a fresh signing secret: "whsec_" followed by the
// standard (padded) base64 encoding of 32 random bytes. The HMAC key is the
// decoded bytes, as Standard Webhooks libraries expect.
func NewSecret() string {
	b := make([]byte, SecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error (it crashes instead).
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ParseSecret returns the HMAC key of a "whsec_" secret. The error wraps
// ErrMalformedSecret and never contains the secret itself.
func ParseSecret(secret string) ([]byte, error) {
	enc, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: missing %q prefix", ErrMalformedSecret, SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("%w: invalid base64", ErrMalformedSecret)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: key is %d bytes, want %d to %d", ErrMalformedSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}

// Sign returns the webhook-signature header value for msgID, ts (truncated
// to Unix seconds) and body under each secret, in the order given: the
// current secret first, then any old ones still valid during rotation, e.g.
// "v1,abc= v1,def=". Each signature is base64(HMAC-SHA256(key,
// msgID + "." + unixSeconds + "." + body)).
//
// It errors when secrets is empty, a secret is malformed (ErrMalformedSecret)
// or msgID is empty or contains spaces or control characters.
func Sign(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", errors.New("webhook: no signing secret")
	}
	if err := checkMsgID(msgID); err != nil {
		return "", err
	}
	prefix := msgID + "." + strconv.FormatInt(ts.Unix(), 10) + "."
	var sb strings.Builder
	for i, s := range secrets {
		key, err := ParseSecret(s)
		if err != nil {
			return "", fmt.Errorf("secret %d: %w", i, err)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(prefix))
		mac.Write(body)
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString("v1,")
		sb.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return sb.String(), nil
}

// Headers returns the three Standard Webhooks headers (webhook-id,
// webhook-timestamp in Unix seconds, webhook-signature) for one attempt.
// Deliver adds Content-Type and User-Agent. Errors are those of Sign.
func Headers(secrets []string, msgID string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := Sign(secrets, msgID, ts, body)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 3)
	h.Set(HeaderID, msgID)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return h, nil
}

func checkMsgID(id string) error {
	if id == "" {
		return errors.New("webhook: empty message id")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return errors.New("webhook: message id must be printable ASCII without spaces")
		}
	}
	return nil
}
