package service

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/parleyhq/parley"
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
	argonSaltLen = 16
)

// Each hash takes 19 MiB while it runs, so a burst of sign-ins would take
// memory without bound (issue #31 item 6: 40 at once took a node from
// 117 MB to 449 MB). HashSlots bounds the hashes running at once on a
// node; a sign-in that finds none free waits up to its wait, then is
// refused with EUnavailable (503 and Retry-After on the sign-in page).

// DefaultHashWait is how long a password check waits for a free hash slot.
const DefaultHashWait = 5 * time.Second

// DefaultHashSlots is the hashes one node runs at once: one per core, at
// most 4 (76 MiB). More would not finish sooner; each core is busy.
func DefaultHashSlots() int { return max(1, min(runtime.GOMAXPROCS(0), 4)) }

// HashSlots bounds the password hashes computed at once.
type HashSlots struct {
	slots   chan struct{}
	wait    atomic.Int64 // a time.Duration
	waiting atomic.Int64
	hashes  atomic.Int64
}

// NewHashSlots returns n slots; a hash waits up to wait for one.
func NewHashSlots(n int, wait time.Duration) *HashSlots {
	h := &HashSlots{slots: make(chan struct{}, n)}
	h.SetWait(wait)
	return h
}

// SetWait sets how long a hash waits for a slot.
func (h *HashSlots) SetWait(d time.Duration) { h.wait.Store(int64(d)) }

// Acquire takes a slot, waiting up to the slots' wait, and returns its
// release; EUnavailable when none came free in time.
func (h *HashSlots) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case h.slots <- struct{}{}:
		return h.release, nil
	default:
	}
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	t := time.NewTimer(time.Duration(h.wait.Load()))
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return h.release, nil
	case <-t.C:
		return nil, parley.Errorf(parley.EUnavailable, "The server is busy signing others in; try again in a few seconds.")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *HashSlots) release() { <-h.slots }

// Waiting is how many hashes wait for a slot now.
func (h *HashSlots) Waiting() int { return int(h.waiting.Load()) }

// Hashes is how many argon2 hashes were computed through these slots.
func (h *HashSlots) Hashes() int64 { return h.hashes.Load() }

// phc is a parsed argon2id PHC string.
type phc struct {
	// params is "v=…$m=…,t=…,p=…$salt": hashes with the same params and
	// salt need one computation for all of them.
	params      string
	salt, key   []byte
	mem, passes uint32
	threads     uint8
	version     int
}

func parsePHC(encoded string) (phc, bool) {
	var p phc
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, false
	}
	if _, err := fmt.Sscanf(parts[2], "v=%d", &p.version); err != nil || p.version != argon2.Version {
		return p, false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.mem, &p.passes, &p.threads); err != nil || p.threads == 0 ||
		p.mem == 0 || p.mem > 1<<20 || p.passes == 0 || p.passes > 16 { // a hash we wrote; bound a forged one's cost
		return p, false
	}
	b64 := base64.RawStdEncoding
	var err1, err2 error
	p.salt, err1 = b64.DecodeString(parts[4])
	p.key, err2 = b64.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(p.key) == 0 || len(p.key) > 64 {
		return p, false
	}
	p.params = parts[2] + "$" + parts[3] + "$" + parts[4]
	return p, true
}

func (p phc) encode() string {
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", p.version, p.mem, p.passes, p.threads,
		b64.EncodeToString(p.salt), b64.EncodeToString(p.key))
}

// compute derives p's key for pw in a hash slot.
func (o *Operators) compute(ctx context.Context, p phc, pw string) ([]byte, error) {
	release, err := o.Hashing.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	o.Hashing.hashes.Add(1)
	return argon2.IDKey([]byte(pw), p.salt, p.passes, p.mem, p.threads, uint32(len(p.key))), nil
}

// emailSalt is the salt of every password hash of one email's operators
// (issue #31 item 10): a person may be an operator of several brands, each
// row with its own password, and a sign-in checks them all. With one salt
// (and the same parameters) that takes one hash however many brands have
// the email, so neither the time nor the memory of a sign-in tells how
// many there are. The salt is a keyed hash of the email under a key from
// the server key, so it is unique per email and cannot be computed ahead
// without that key. The price: two rows of one email with the same
// password store the same hash, which tells a reader of the database only
// that one person reused their password across brands.
func (o *Operators) emailSalt(email string) []byte {
	m := hmac.New(sha256.New, o.saltKey)
	m.Write([]byte(email))
	return m.Sum(nil)[:argonSaltLen]
}

// newPHC is the current parameters with email's salt.
func (o *Operators) newPHC(email string) phc {
	return phc{version: argon2.Version, mem: argonMemory, passes: argonTime, threads: argonThreads,
		salt: o.emailSalt(email), key: make([]byte, argonKeyLen)}
}

// hashPassword returns the PHC-encoded argon2id hash of an operator's
// password with the email's salt.
func (o *Operators) hashPassword(ctx context.Context, email, pw string) (string, error) {
	p := o.newPHC(email)
	key, err := o.compute(ctx, p, pw)
	if err != nil {
		return "", err
	}
	p.key = key
	return p.encode(), nil
}

// matchPasswords returns the indexes of hashes that pw matches. It
// computes one hash per distinct salt and parameters, and one with the
// email's salt when there is nothing to check, so an unknown email takes
// as long as a known one. A hash it cannot read matches nothing.
func (o *Operators) matchPasswords(ctx context.Context, email string, hashes []string, pw string) ([]int, error) {
	groups := map[string][]int{}
	parsed := make([]phc, len(hashes))
	var order []string
	for i, h := range hashes {
		p, ok := parsePHC(h)
		if !ok {
			continue
		}
		parsed[i] = p
		if groups[p.params] == nil {
			order = append(order, p.params)
		}
		groups[p.params] = append(groups[p.params], i)
	}
	if len(order) == 0 {
		_, err := o.compute(ctx, o.newPHC(email), pw) // the decoy
		return nil, err
	}
	var matched []int
	for _, params := range order {
		first := parsed[groups[params][0]]
		got, err := o.compute(ctx, first, pw)
		if err != nil {
			return nil, err
		}
		for _, i := range groups[params] {
			if len(parsed[i].key) == len(got) && subtle.ConstantTimeCompare(got, parsed[i].key) == 1 {
				matched = append(matched, i)
			}
		}
	}
	return matched, nil
}

// current reports whether hash has today's parameters and email's salt;
// a hash that has not is replaced at its next sign-in.
func (o *Operators) current(email, hash string) bool {
	p, ok := parsePHC(hash)
	want := o.newPHC(email)
	return ok && p.mem == want.mem && p.passes == want.passes && p.threads == want.threads &&
		hmac.Equal(p.salt, want.salt)
}

// randomSaltKey is the salt key of Operators made without a server key
// (tests): hashes still verify, as each keeps its salt.
func randomSaltKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}
