package secretbox_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/secretbox"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, secretbox.KeySize) }

func mustBox(t testing.TB, key []byte) *secretbox.Box {
	t.Helper()
	return mustKind(t, secretbox.New, key)
}

func mustKind(t testing.TB, mk func([]byte) (*secretbox.Box, error), key []byte) *secretbox.Box {
	t.Helper()
	b, err := mk(key)
	if err != nil {
		t.Fatalf("new box: %v", err)
	}
	return b
}

func TestNewKeyLength(t *testing.T) {
	tests := []struct {
		name    string
		key     []byte
		wantErr bool
	}{
		{"32 bytes", testKey(1), false},
		{"nil", nil, true},
		{"16 bytes (AES-128 refused)", make([]byte, 16), true},
		{"24 bytes", make([]byte, 24), true},
		{"33 bytes", make([]byte, 33), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := secretbox.New(tt.key)
			if (err != nil) != tt.wantErr || (b == nil) != tt.wantErr {
				t.Errorf("New(len %d) = %v, %v; wantErr %v", len(tt.key), b, err, tt.wantErr)
			}
		})
	}
}

// kinds are the two boxes: New's for stored secrets, NewX's for values
// sealed at request rates (idempotency answers).
var kinds = []struct {
	name  string
	new   func([]byte) (*secretbox.Box, error)
	nonce int
}{
	{"AES-GCM", secretbox.New, 12},
	{"XChaCha20-Poly1305", secretbox.NewX, 24},
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name      string
		plaintext []byte
		ad        []byte
	}{
		{"password with username AD", []byte("hunter2"), []byte("alice")},
		{"empty plaintext", []byte{}, []byte("bob")},
		{"nil plaintext nil AD", nil, nil},
		{"binary", []byte{0, 1, 2, 0xFF}, []byte{0}},
		{"large", bytes.Repeat([]byte("x"), 1<<16), []byte("row-42")},
	}
	for _, k := range kinds {
		box := mustKind(t, k.new, testKey(7))
		for _, tt := range tests {
			t.Run(k.name+"/"+tt.name, func(t *testing.T) {
				sealed := box.Seal(tt.plaintext, tt.ad)
				if want := k.nonce + len(tt.plaintext) + 16; len(sealed) != want {
					t.Errorf("sealed length %d, want %d", len(sealed), want)
				}
				if len(tt.plaintext) > 3 && bytes.Contains(sealed, tt.plaintext) {
					t.Error("sealed value contains the plaintext")
				}
				got, err := box.Open(sealed, tt.ad)
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if !bytes.Equal(got, tt.plaintext) {
					t.Errorf("Open = %q, want %q", got, tt.plaintext)
				}
			})
		}
	}
}

func TestSealFreshNonce(t *testing.T) {
	for _, k := range kinds {
		box := mustKind(t, k.new, testKey(7))
		a := box.Seal([]byte("same"), []byte("ad"))
		b := box.Seal([]byte("same"), []byte("ad"))
		if bytes.Equal(a, b) || bytes.Equal(a[:k.nonce], b[:k.nonce]) {
			t.Errorf("%s: two Seals of the same plaintext share a nonce", k.name)
		}
	}
}

func TestOpenFailures(t *testing.T) {
	for _, k := range kinds {
		box := mustKind(t, k.new, testKey(7))
		other := mustKind(t, k.new, testKey(8))
		pt, ad := []byte("s3cret-password"), []byte("alice")
		sealed := box.Seal(pt, ad)

		flip := func(i int) []byte {
			c := bytes.Clone(sealed)
			c[i] ^= 0x01
			return c
		}
		tests := []struct {
			name   string
			box    *secretbox.Box
			sealed []byte
			ad     []byte
		}{
			{"tampered nonce", box, flip(0), ad},
			{"tampered ciphertext", box, flip(k.nonce), ad},
			{"tampered tag", box, flip(len(sealed) - 1), ad},
			{"truncated", box, sealed[:len(sealed)-1], ad},
			{"extended", box, append(bytes.Clone(sealed), 0), ad},
			{"too short for nonce and tag", box, sealed[:k.nonce+15], ad},
			{"empty", box, nil, ad},
			{"wrong AD (row swap)", box, sealed, []byte("bob")},
			{"missing AD", box, sealed, nil},
			{"wrong key", other, sealed, ad},
		}
		for _, tt := range tests {
			t.Run(k.name+"/"+tt.name, func(t *testing.T) {
				got, err := tt.box.Open(tt.sealed, tt.ad)
				if !errors.Is(err, secretbox.ErrOpen) || got != nil {
					t.Errorf("Open = %q, %v; want nil, ErrOpen", got, err)
				}
			})
		}
	}
}

// TestDeriveKey: a purpose's key is the same every time and another's
// differs from it and from the key it came from, so a value sealed for
// one purpose opens for no other.
func TestDeriveKey(t *testing.T) {
	key := testKey(7)
	a, a2, b := secretbox.DeriveKey(key, "answers"), secretbox.DeriveKey(key, "answers"), secretbox.DeriveKey(key, "other")
	if len(a) != secretbox.KeySize || !bytes.Equal(a, a2) || bytes.Equal(a, b) || bytes.Equal(a, key) {
		t.Fatalf("derived keys %x, %x, %x from %x", a, a2, b, key)
	}
	sealed := mustKind(t, secretbox.NewX, a).Seal([]byte("answer"), nil)
	if _, err := mustKind(t, secretbox.NewX, b).Open(sealed, nil); !errors.Is(err, secretbox.ErrOpen) {
		t.Errorf("another purpose's box opened it: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(i*7 + 0xF8) // includes bytes that encode to '+', '/', '-', '_'
	}
	std := base64.StdEncoding.EncodeToString(key)
	url := base64.URLEncoding.EncodeToString(key)
	if !strings.ContainsAny(std, "+/") || !strings.ContainsAny(url, "-_") {
		t.Fatalf("test key does not exercise alphabet differences: %s %s", std, url)
	}
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"std padded", std, false},
		{"std raw", strings.TrimRight(std, "="), false},
		{"url padded", url, false},
		{"url raw", strings.TrimRight(url, "="), false},
		{"hex lower", hex.EncodeToString(key), false},
		{"hex upper", strings.ToUpper(hex.EncodeToString(key)), false},
		{"trailing newline", std + "\n", false},
		{"surrounding spaces", "  " + hex.EncodeToString(key) + " \r\n", false},

		{"empty", "", true},
		{"whitespace", " \n", true},
		{"16-byte base64", base64.StdEncoding.EncodeToString(key[:16]), true},
		{"33-byte base64", base64.StdEncoding.EncodeToString(append(bytes.Clone(key), 0)), true},
		{"62 hex", hex.EncodeToString(key[:31]), true},
		{"66 hex", hex.EncodeToString(append(bytes.Clone(key), 0)), true},
		{"64 non-hex non-base64", strings.Repeat("!", 64), true},
		{"mixed alphabets", "A-B+" + strings.Repeat("A", 39), true},
		{"garbage", "not a key", true},
		{"internal space", std[:10] + " " + std[10:], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := secretbox.ParseKey(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("ParseKey(%q) = %x, want error", tt.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", tt.in, err)
			}
			if !bytes.Equal(got, key) {
				t.Errorf("ParseKey(%q) = %x, want %x", tt.in, got, key)
			}
		})
	}
}

func TestParseKeyErrorHidesKey(t *testing.T) {
	short := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	_, err := secretbox.ParseKey(short)
	if err == nil || strings.Contains(err.Error(), short) {
		t.Errorf("error %v leaks key material", err)
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "keys")
	path := filepath.Join(dir, "secret.key")

	key, created, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil || !created || len(key) != secretbox.KeySize {
		t.Fatalf("create: key len %d, created %v, err %v", len(key), created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %o, want 600", perm)
	}
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := di.Mode().Perm(); perm != 0o700 {
		t.Errorf("key dir mode %o, want 700", perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(data)); got != base64.StdEncoding.EncodeToString(key) {
		t.Errorf("file holds %q, want base64 of key", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	again, created, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("reload: same=%v created=%v err=%v", bytes.Equal(again, key), created, err)
	}

	// A Box from the reloaded key opens what the first one sealed.
	sealed := mustBox(t, key).Seal([]byte("pw"), []byte("u"))
	if pt, err := mustBox(t, again).Open(sealed, []byte("u")); err != nil || string(pt) != "pw" {
		t.Errorf("open with reloaded key: %q, %v", pt, err)
	}
}

func TestLoadOrCreateKeyFileExisting(t *testing.T) {
	key := testKey(0xAB)
	tests := []struct {
		name    string
		content string
		wantErr bool
	}{
		{"base64 with newline", base64.StdEncoding.EncodeToString(key) + "\n", false},
		{"hex", hex.EncodeToString(key), false},
		{"empty file", "", true},
		{"short key", base64.StdEncoding.EncodeToString(key[:31]), true},
		{"garbage", "hello world\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, created, err := secretbox.LoadOrCreateKeyFile(path)
			if created {
				t.Error("created = true for existing file")
			}
			if tt.wantErr {
				if err == nil {
					t.Fatalf("got key %x, want error", got)
				}
				if data, _ := os.ReadFile(path); string(data) != tt.content {
					t.Error("bad key file was modified")
				}
				return
			}
			if err != nil || !bytes.Equal(got, key) {
				t.Errorf("got %x, %v; want %x", got, err, key)
			}
		})
	}
}

func TestLoadOrCreateKeyFileErrors(t *testing.T) {
	dir := t.TempDir()
	// Path is a directory.
	if _, _, err := secretbox.LoadOrCreateKeyFile(dir); err == nil {
		t.Error("directory as key file: want error")
	}
	// Parent is a regular file.
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := secretbox.LoadOrCreateKeyFile(filepath.Join(f, "key")); err == nil {
		t.Error("parent is a file: want error")
	}
}

func TestLoadOrCreateKeyFileConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	createdCount := 0
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, created, err := secretbox.LoadOrCreateKeyFile(path)
			keys[i], errs[i] = k, err
			if created {
				mu.Lock()
				createdCount++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("caller %d got a different key", i)
		}
	}
	if createdCount != 1 {
		t.Errorf("%d callers reported creating the key, want 1", createdCount)
	}
}

func TestGenerateAndEncodeKey(t *testing.T) {
	a, b := secretbox.GenerateKey(), secretbox.GenerateKey()
	if len(a) != secretbox.KeySize || bytes.Equal(a, b) {
		t.Fatalf("GenerateKey: len %d, equal %v", len(a), bytes.Equal(a, b))
	}
	got, err := secretbox.ParseKey(secretbox.EncodeKey(a))
	if err != nil || !bytes.Equal(got, a) {
		t.Errorf("ParseKey(EncodeKey(k)) = %x, %v", got, err)
	}
}

func BenchmarkSealOpen(b *testing.B) {
	box := mustBox(b, testKey(1))
	pt, ad := []byte("a-typical-api-password-0123456789"), []byte("username")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := box.Open(box.Seal(pt, ad), ad); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSeal seals an answer of the size an Idempotency-Key keeps for a
// created user (about 450 bytes), as the store does on the writer's path,
// with each box.
func BenchmarkSeal(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			box := mustKind(b, k.new, make([]byte, secretbox.KeySize))
			body, ad := make([]byte, 450), []byte("brand 1 key")
			b.ReportAllocs()
			for b.Loop() {
				box.Seal(body, ad)
			}
		})
	}
}
