package service

import (
	"container/list"
	"crypto/sha256"
	"encoding/base64"
	"net/netip"
	"sync"
	"time"
)

// signinThrottle counts failed sign-ins (D19) the way OWASP advises
// (issue #31 item 3): per (email, client) and per client, never per email
// alone, which let anyone lock an operator out with five wrong passwords
// from anywhere. A client that has not failed signs in with the right
// password whatever others did; a client that guesses is stopped on one
// email after a few failures and on all emails after more.
//
// A key that reached its limit refuses further attempts, right or wrong,
// until the window since its first failure ends. The counts live in memory:
// each node throttles on its own, as the API's rate limits do, which bounds
// guessing to (nodes × limit) a window per client.
//
// Memory is bounded: keys have a bounded length (the email is hashed, an
// address is at most an IPv6 /64), and the table holds at most max keys;
// a new key past that evicts the oldest, expired ones first. A spray from
// more clients than that can make the oldest counts be forgotten early;
// each of them had its window nearly spent.
type signinThrottle struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	// order holds the entries by since, oldest first (the clock only moves
	// forward, and a window restarts by moving its entry to the back).
	order *list.List
}

type throttleEntry struct {
	key      string
	failures int
	since    time.Time
}

// defaultThrottleKeys bounds the table: about 100 bytes a key, 10 MB.
const defaultThrottleKeys = 100_000

func newSigninThrottle(max int) *signinThrottle {
	return &signinThrottle{max: max, entries: make(map[string]*list.Element), order: list.New()}
}

// throttleKey is a key and how many failures it may have in a window.
type throttleKey struct {
	key   string
	limit int
}

// clientKey is the throttle's name for a client address: an IPv4 address,
// or the /64 of an IPv6 one, as one subscriber gets a whole /64 and could
// otherwise change address on each guess. Anything else (not an address)
// is hashed, so the key stays short.
func clientKey(client string) string {
	a, err := netip.ParseAddr(client)
	if err != nil {
		return "c:?" + shortHash(client)
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return "c:" + p.String()
	}
	return "c:" + a.String()
}

// emailClientKey is the key of one email's failures from one client; the
// email, up to 254 bytes, is hashed to 16 characters.
func emailClientKey(email, client string) string {
	return "e:" + shortHash(email) + "|" + clientKey(client)
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// attempt is blocked and fail as one step: it returns how long the caller
// must wait when a key has reached its limit, else 0 after counting the
// attempt as a failure of every key. Counting before the password is
// checked is what bounds a burst of guesses sent at once: a check whose
// failure was counted only after the hash (tens of milliseconds) let every
// guess of the burst pass. A sign-in that succeeds takes its count back
// (succeeded).
func (t *signinThrottle) attempt(window time.Duration, now time.Time, keys ...throttleKey) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	var wait time.Duration
	for _, k := range keys {
		if el := t.entries[k.key]; el != nil {
			e := el.Value.(*throttleEntry)
			if now.Sub(e.since) < window && e.failures >= k.limit {
				wait = max(wait, e.since.Add(window).Sub(now))
			}
		}
	}
	if wait > 0 {
		return wait
	}
	for _, k := range keys {
		t.failLocked(k.key, window, now)
	}
	return 0
}

// succeeded takes back the failure attempt counted for key.
func (t *signinThrottle) succeeded(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el := t.entries[key]; el != nil {
		if e := el.Value.(*throttleEntry); e.failures > 0 {
			e.failures--
		}
	}
}

// failLocked records a failure of key; t.mu is held.
func (t *signinThrottle) failLocked(key string, window time.Duration, now time.Time) {
	if el := t.entries[key]; el != nil {
		e := el.Value.(*throttleEntry)
		if now.Sub(e.since) < window {
			e.failures++
			return
		}
		e.failures, e.since = 1, now
		t.order.MoveToBack(el)
		return
	}
	// A new key: make room, expired entries first, then the oldest.
	for t.order.Len() > 0 {
		front := t.order.Front()
		e := front.Value.(*throttleEntry)
		if now.Sub(e.since) < window && t.order.Len() < t.max {
			break
		}
		t.order.Remove(front)
		delete(t.entries, e.key)
	}
	t.entries[key] = t.order.PushBack(&throttleEntry{key: key, failures: 1, since: now})
}

// reset forgets key's failures (a successful sign-in from that client).
func (t *signinThrottle) reset(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if el := t.entries[key]; el != nil {
		t.order.Remove(el)
		delete(t.entries, key)
	}
}

// size is how many keys the table holds.
func (t *signinThrottle) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}
