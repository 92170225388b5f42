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

// blocked returns how long key must wait when it has reached limit
// failures within window, else 0.
func (t *signinThrottle) blocked(key string, limit int, window time.Duration, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[key]
	if e == nil || now.Sub(e.since) >= window {
		return 0
	}
	if e.failures < limit {
		return 0
	}
	return e.since.Add(window).Sub(now)
}

// fail records a failure of key.
func (t *signinThrottle) fail(key string, window time.Duration, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
