package service

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestClientKeyPerIPv6Slash64: IPv6 clients are counted per /64, as one
// subscriber holds a whole /64 and could take a fresh address for each
// guess; IPv4 clients per address, an IPv4-mapped IPv6 address as its
// IPv4 one (D19, issue #31 item 3).
func TestClientKeyPerIPv6Slash64(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff"},
		{"2001:db8:1:2::1", "2001:db8:1:2::1%eth0"},
		{"::ffff:198.51.100.7", "198.51.100.7"},
	}
	for _, p := range same {
		if a, b := clientKey(p[0]), clientKey(p[1]); a != b {
			t.Errorf("clientKey(%s) = %q, clientKey(%s) = %q: want one client", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"198.51.100.7", "198.51.100.8"},
		{"not an address", "another"},
	}
	for _, p := range differ {
		if a, b := clientKey(p[0]), clientKey(p[1]); a == b {
			t.Errorf("clientKey(%s) = clientKey(%s) = %q: want two clients", p[0], p[1], a)
		}
	}
}

// TestThrottleKeysBounded: a key's length does not grow with the email or
// the client string (D19, issue #31 item 3): a 254-byte email and a long
// garbage client give keys as short as any.
func TestThrottleKeysBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 242) + "@example.com"
	for _, k := range []string{
		emailClientKey(long, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"),
		emailClientKey(long, strings.Repeat("x", 10_000)),
		clientKey(strings.Repeat("x", 10_000)),
	} {
		if len(k) > 64 {
			t.Errorf("throttle key of %d bytes, want at most 64: %.80q…", len(k), k)
		}
	}
	if emailClientKey(long, "198.51.100.7") == emailClientKey(long+"x", "198.51.100.7") {
		t.Error("two emails share a key")
	}
}

// TestThrottleTableBounded: a spray of new keys (many clients, many
// emails) never grows the table past its bound; expired keys go first,
// then the oldest, so a recent client's count holds (D19, issue #31 item 3).
func TestThrottleTableBounded(t *testing.T) {
	t.Parallel()
	const bound, window = 100, 15 * time.Minute
	th := newSigninThrottle(bound)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	// A guesser reaches its limit, then a spray of 10,000 keys arrives.
	for range 5 {
		th.attempt(window, now, throttleKey{"guesser", 5})
	}
	for i := range 10_000 {
		th.attempt(window, now.Add(time.Minute), throttleKey{fmt.Sprintf("spray-%d", i), 5})
		if n := th.size(); n > bound {
			t.Fatalf("after %d keys the table holds %d, want at most %d", i+1, n, bound)
		}
	}
	// Recent keys that failed are still counted; their windows end.
	th2 := newSigninThrottle(bound)
	for range 5 {
		th2.attempt(window, now, throttleKey{"guesser", 5})
	}
	for i := range bound - 1 {
		th2.attempt(window, now.Add(time.Minute), throttleKey{fmt.Sprintf("spray-%d", i), 5})
	}
	if wait := th2.attempt(window, now.Add(2*time.Minute), throttleKey{"guesser", 5}); wait != 13*time.Minute {
		t.Errorf("the guesser waits %v, want 13m: its count was lost while the table had room", wait)
	}
	// Expired keys make room before live ones are evicted.
	th3 := newSigninThrottle(3)
	th3.attempt(window, now, throttleKey{"old", 1})
	th3.attempt(window, now.Add(10*time.Minute), throttleKey{"live-1", 1})
	th3.attempt(window, now.Add(11*time.Minute), throttleKey{"live-2", 1})
	th3.attempt(window, now.Add(16*time.Minute), throttleKey{"new", 1}) // "old" has expired
	if wait := th3.attempt(window, now.Add(16*time.Minute), throttleKey{"live-1", 1}); wait == 0 {
		t.Error("a live key was evicted while an expired one could go")
	}
}
