package service

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"
)

// Operator passwords are hashed with argon2id (D19) at OWASP's baseline
// (19 MiB, 2 passes, 1 lane): about 30 ms a sign-in on one core, and the
// memory makes guessing on GPUs dear. The parameters are stored in the
// PHC string, so raising them later keeps old hashes working.
const (
	argonTime    = 2
	argonMemory  = 19 * 1024
	argonThreads = 1
	argonKeyLen  = 32
)

// hashPassword returns the PHC-encoded argon2id hash of pw with a fresh salt.
func hashPassword(pw string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		b64.EncodeToString(salt), b64.EncodeToString(key))
}

// checkPassword reports whether pw matches the encoded hash; a hash it
// cannot read matches nothing.
func checkPassword(encoded, pw string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var mem, passes uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &passes, &threads); err != nil || threads == 0 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err1 := b64.DecodeString(parts[4])
	key, err2 := b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(key) == 0 {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, passes, mem, threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1
}

// decoyHash is checked when no operator has the email given, so a wrong
// email takes as long as a wrong password and does not reveal who exists.
var decoyHash = sync.OnceValue(func() string {
	var b [16]byte
	rand.Read(b[:])
	return hashPassword(base64.RawStdEncoding.EncodeToString(b[:]))
})
