package service

import (
	"sync"
	"time"
)

// signinThrottle counts failed sign-ins per email and per client address
// (D19) and refuses further attempts, right or wrong, once a key has failed
// too often within the window, until the window since its first failure
// ends. The counts live in memory: each node throttles on its own, as the
// API's rate limits do, which bounds guessing to (nodes × limit) a window.
type signinThrottle struct {
	mu      sync.Mutex
	entries map[string]*throttleEntry
}

type throttleEntry struct {
	failures int
	since    time.Time
}

func newSigninThrottle() *signinThrottle {
	return &signinThrottle{entries: make(map[string]*throttleEntry)}
}

// throttleKey is a key and how many failures it may have in a window.
type throttleKey struct {
	key   string
	limit int
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
		if e := t.entries[k.key]; e != nil && now.Sub(e.since) < window && e.failures >= k.limit {
			wait = max(wait, e.since.Add(window).Sub(now))
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
	if e := t.entries[key]; e != nil && e.failures > 0 {
		e.failures--
	}
}

// failLocked records a failure of key; t.mu is held.
func (t *signinThrottle) failLocked(key string, window time.Duration, now time.Time) {
	if len(t.entries) > 100_000 { // bound the memory a flood of keys can take
		for k, e := range t.entries {
			if now.Sub(e.since) >= window {
				delete(t.entries, k)
			}
		}
	}
	e := t.entries[key]
	if e == nil || now.Sub(e.since) >= window {
		e = &throttleEntry{since: now}
		t.entries[key] = e
	}
	e.failures++
}

// reset forgets key's failures (a successful sign-in of that email).
func (t *signinThrottle) reset(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, key)
}
