package signing_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/parleyhq/parley/signing"
)

func BenchmarkVerifyHeaders(b *testing.B) {
	v := fixedVerifier(vecTime)
	h, target := signed(b, "POST", "/api/v1/users", []byte(vecUserBody), vecSecret, vecTime)
	secret := []byte(vecSecret)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.VerifyHeaders("POST", target, h, secret, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyHeadersUnknownUser(b *testing.B) {
	v := fixedVerifier(vecTime)
	h, target := signed(b, "POST", "/api/v1/users", []byte(vecUserBody), vecSecret, vecTime)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.VerifyHeaders("POST", target, h, nil, false); err == nil {
			b.Fatal("unknown user accepted")
		}
	}
}

func BenchmarkVerifyBody(b *testing.B) {
	body := []byte(vecUserBody)
	h, _ := signed(b, "POST", "/api/v1/users", body, vecSecret, vecTime)
	b.ReportAllocs()
	for b.Loop() {
		if err := signing.VerifyBody(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDigest(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = signing.Digest(body)
	}
}

func BenchmarkSignRequest(b *testing.B) {
	body := []byte(vecUserBody)
	req, err := http.NewRequest("POST", baseURL+"/api/v1/users", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		signing.SignRequest(req, testUser, vecSecret, body, vecTime)
	}
}
