// Package secretbox encrypts secrets at rest (for example provider
// credentials stored in the database) with AES-256-GCM under a server key,
// or with XChaCha20-Poly1305 (NewX) for values sealed on every request.
//
// A sealed value is nonce || ciphertext || tag, with a fresh random nonce
// per call. Random nonces keep the API stateless. With AES-GCM's 96-bit
// nonces NIST SP 800-38D limits this to about 2^32 Seal calls per key, far
// beyond the number of stored secrets New is meant for; XChaCha20's 192-bit
// nonces have no such limit in practice.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// KeySize is the key length in bytes (AES-256).
const KeySize = 32

// ErrOpen is returned by Open when the sealed value is malformed, was
// tampered with, or was sealed under a different key or additional data.
var ErrOpen = errors.New("secretbox: message authentication failed")

// Box seals and opens secrets under one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New builds a Box from a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// NewX builds a Box that seals with XChaCha20-Poly1305 under a 32-byte
// key: for values sealed at request rates, which would pass AES-GCM's
// 2^32 random nonces under one key (a node taking 1,000 keyed requests a
// second would in 50 days).
func NewX(key []byte) (*Box, error) {
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, fmt.Errorf("secretbox: %w", err)
	}
	return &Box{aead: aead}, nil
}

// DeriveKey derives from key the key of one purpose (HKDF-SHA256), so
// that a value sealed for one purpose never opens as another's.
func DeriveKey(key []byte, purpose string) []byte {
	k, err := hkdf.Expand(sha256.New, key, purpose, KeySize)
	if err != nil { // only for a length HKDF cannot give; KeySize is not
		panic(err)
	}
	return k
}

// Seal encrypts plaintext; output = nonce || ciphertext. additionalData binds
// the ciphertext to its row (e.g. the credential username) so swapping
// ciphertexts between rows fails. additionalData is authenticated but not
// stored: Open must be given the same value.
func (b *Box) Seal(plaintext, additionalData []byte) []byte {
	ns := b.aead.NonceSize()
	out := make([]byte, ns, ns+len(plaintext)+b.aead.Overhead())
	// crypto/rand.Read never fails; on a broken system it crashes the
	// program instead of returning predictable bytes.
	_, _ = rand.Read(out)
	return b.aead.Seal(out, out[:ns], plaintext, additionalData)
}

// Open decrypts a value produced by Seal with the same key and
// additionalData. Any mismatch or corruption yields ErrOpen.
func (b *Box) Open(sealed, additionalData []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < ns+b.aead.Overhead() {
		return nil, ErrOpen
	}
	pt, err := b.aead.Open(nil, sealed[:ns], sealed[ns:], additionalData)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// ParseKey decodes a key given as base64 (std or url, padded or not) or 64 hex
// chars; must be 32 bytes. Surrounding whitespace is ignored. Errors never
// include the key material.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("secretbox: empty key")
	}
	if len(s) == 2*KeySize {
		if key, err := hex.DecodeString(s); err == nil {
			return key, nil
		}
	}
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding,
		base64.URLEncoding, base64.RawURLEncoding,
	} {
		key, err := enc.Strict().DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("secretbox: key decodes to %d bytes, want %d", len(key), KeySize)
		}
		return key, nil
	}
	return nil, fmt.Errorf("secretbox: key is neither base64 nor %d hex characters", 2*KeySize)
}

// GenerateKey returns a fresh random key.
func GenerateKey() []byte {
	key := make([]byte, KeySize)
	_, _ = rand.Read(key)
	return key
}

// EncodeKey formats a key the way LoadOrCreateKeyFile writes it: standard
// padded base64.
func EncodeKey(key []byte) string {
	return base64.StdEncoding.EncodeToString(key)
}

// LoadOrCreateKeyFile reads a key file (base64 text) at path, or creates it
// with a fresh random key and 0600 permissions (creating the parent directory
// with 0700) when it does not exist. An existing file is accepted in any
// format ParseKey understands, whatever its permissions; a file that exists
// but does not hold a valid key is an error and is left untouched.
//
// Creation is atomic: the key is written to a temporary file that is then
// hard-linked into place, so concurrent callers never see a partial file and
// all end up with the same key.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	key, err = readKeyFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("secretbox: create key directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, false, fmt.Errorf("secretbox: create key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)

	key = GenerateKey()
	// CreateTemp already uses 0600; Chmod makes that explicit and
	// independent of the implementation.
	err = tmp.Chmod(0o600)
	if err == nil {
		_, err = tmp.WriteString(EncodeKey(key) + "\n")
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("secretbox: write key file: %w", err)
	}

	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Lost a race with another creator: use its key.
			key, err = readKeyFile(path)
			return key, false, err
		}
		return nil, false, fmt.Errorf("secretbox: install key file: %w", err)
	}
	syncDir(dir)
	return key, true, nil
}

func readKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secretbox: read key file: %w", err)
	}
	key, err := ParseKey(string(data))
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return key, nil
}

// syncDir makes a newly linked directory entry durable; failures are ignored
// because the key itself is already on disk and some filesystems do not
// support syncing directories.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
