package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/parleyhq/parley/internal/webhook"
)

func verifier(t *testing.T, secret string) *standardwebhooks.Webhook {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("NewWebhook: %v", err)
	}
	return wh
}

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := webhook.NewSecret()
		enc, ok := strings.CutPrefix(s, "whsec_")
		if !ok {
			t.Fatalf("secret %q lacks whsec_ prefix", s)
		}
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil || len(key) != 32 {
			t.Fatalf("secret %q: key %d bytes, err %v", s, len(key), err)
		}
		if _, err := webhook.ParseSecret(s); err != nil {
			t.Fatalf("ParseSecret(NewSecret()): %v", err)
		}
		if seen[s] {
			t.Fatalf("duplicate secret %q", s)
		}
		seen[s] = true
	}
}

// The example from the Standard Webhooks specification.
func TestSignSpecVector(t *testing.T) {
	got, err := webhook.Sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		"msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestHeadersVerifyWithLibrary(t *testing.T) {
	secret := webhook.NewSecret()
	body := []byte(`{"id":"evt_1","type":"message.sent","created_at":"2026-01-02T03:04:05Z","data":{"id":"msg_1"}}`)
	ts := time.Now()
	h, err := webhook.Headers([]string{secret}, "evt_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-id"); got != "evt_1" {
		t.Errorf("webhook-id = %q", got)
	}
	if got, want := h.Get("webhook-timestamp"), strconv.FormatInt(ts.Unix(), 10); got != want {
		t.Errorf("webhook-timestamp = %q, want %q", got, want)
	}
	if sig := h.Get("webhook-signature"); !strings.HasPrefix(sig, "v1,") || strings.Contains(sig, " ") {
		t.Errorf("webhook-signature = %q, want one v1 signature", sig)
	}
	if len(h) != 3 {
		t.Errorf("Headers returned %d headers, want 3: %v", len(h), h)
	}

	wh := verifier(t, secret)
	if err := wh.Verify(body, h); err != nil {
		t.Fatalf("library Verify: %v", err)
	}
	// Same signature as the library's own signer.
	libSig, err := wh.Sign("evt_1", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-signature"); got != libSig {
		t.Errorf("signature %q, library signs %q", got, libSig)
	}
}

func TestRotationTwoSignatures(t *testing.T) {
	newSecret, oldSecret := webhook.NewSecret(), webhook.NewSecret()
	body := []byte(`{"id":"evt_2"}`)
	h, err := webhook.Headers([]string{newSecret, oldSecret}, "evt_2", time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	sig := h.Get("webhook-signature")
	parts := strings.Split(sig, " ")
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "v1,") || !strings.HasPrefix(parts[1], "v1,") {
		t.Fatalf("webhook-signature = %q, want two space-separated v1 signatures", sig)
	}
	// Current secret first.
	only, err := webhook.Sign([]string{newSecret}, "evt_2", time.Unix(mustAtoi(t, h.Get("webhook-timestamp")), 0), body)
	if err != nil {
		t.Fatal(err)
	}
	if parts[0] != only {
		t.Errorf("first signature %q, want the current secret's %q", parts[0], only)
	}

	for name, s := range map[string]string{"new only": newSecret, "old only": oldSecret} {
		if err := verifier(t, s).Verify(body, h); err != nil {
			t.Errorf("%s: Verify: %v", name, err)
		}
	}
	err = verifier(t, webhook.NewSecret()).Verify(body, h)
	if !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("unrelated secret: Verify = %v, want ErrNoMatchingSignature", err)
	}
}

func TestTamperedFailsVerification(t *testing.T) {
	secret, old := webhook.NewSecret(), webhook.NewSecret()
	body := []byte(`{"id":"evt_3","amount":1}`)
	ts := time.Now()
	h, err := webhook.Headers([]string{secret, old}, "evt_3", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	with := func(key, val string) http.Header {
		c := h.Clone()
		c.Set(key, val)
		return c
	}
	cases := []struct {
		name string
		body []byte
		h    http.Header
	}{
		{"body", []byte(`{"id":"evt_3","amount":2}`), h},
		{"body appended", append([]byte(string(body)), ' '), h},
		{"timestamp", body, with("webhook-timestamp", strconv.FormatInt(ts.Unix()-1, 10))},
		{"id", body, with("webhook-id", "evt_4")},
		{"signature", body, with("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(make([]byte, 32)))},
		{"version", body, with("webhook-signature", strings.ReplaceAll(h.Get("webhook-signature"), "v1,", "v2,"))},
	}
	for _, s := range []string{secret, old} {
		wh := verifier(t, s)
		if err := wh.Verify(body, h); err != nil {
			t.Fatalf("untampered: %v", err)
		}
		for _, c := range cases {
			if err := wh.Verify(c.body, c.h); err == nil {
				t.Errorf("tampered %s: Verify succeeded", c.name)
			}
		}
	}
}

func TestSignErrors(t *testing.T) {
	short := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 16))
	long := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65))
	good := webhook.NewSecret()
	for _, c := range []struct {
		name    string
		secrets []string
		id      string
		bad     bool // error wraps ErrMalformedSecret
	}{
		{"no secrets", nil, "evt_1", false},
		{"empty secret", []string{""}, "evt_1", true},
		{"no prefix", []string{strings.TrimPrefix(good, "whsec_")}, "evt_1", true},
		{"prefix only", []string{"whsec_"}, "evt_1", true},
		{"bad base64", []string{"whsec_not*base64!"}, "evt_1", true},
		{"short key", []string{short}, "evt_1", true},
		{"long key", []string{long}, "evt_1", true},
		{"bad old secret", []string{good, "whsec_%%%"}, "evt_1", true},
		{"empty id", []string{good}, "", false},
		{"id with space", []string{good}, "evt 1", false},
		{"id with newline", []string{good}, "evt_1\r\nX: y", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sig, err := webhook.Sign(c.secrets, c.id, time.Now(), []byte("{}"))
			if err == nil {
				t.Fatalf("Sign = %q, want error", sig)
			}
			if got := errors.Is(err, webhook.ErrMalformedSecret); got != c.bad {
				t.Errorf("errors.Is(%v, ErrMalformedSecret) = %v, want %v", err, got, c.bad)
			}
			if strings.Contains(err.Error(), good[6:]) {
				t.Errorf("error %q leaks the secret", err)
			}
			if _, err := webhook.Headers(c.secrets, c.id, time.Now(), []byte("{}")); err == nil {
				t.Error("Headers: want error")
			}
		})
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
