package service_test

import (
	"sync"
	"testing"

	"github.com/parleyhq/parley"
)

// TestSignInThrottleHoldsUnderConcurrency: the failed sign-ins allowed per
// email from one client (D19) bound the guesses however they arrive. Guesses sent at once
// must not all pass the throttle's check before any of them is counted: a
// throttle that checks, hashes for 30 ms, then counts lets a burst of N
// guesses through for any N.
func TestSignInThrottleHoldsUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	ops := e.App.Operators
	if _, err := ops.Add(e.Ctx, e.BrandA.ID, "target@example.com", parley.RoleAdmin, "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	const limit, burst = 3, 24
	ops.MaxFailuresPerEmailClient = limit
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		checked int // guesses whose password was checked (not refused by the throttle)
	)
	start := make(chan struct{})
	for i := range burst {
		wg.Go(func() {
			<-start
			_, _, err := ops.SignIn(e.Ctx, "target@example.com", "wrong guess "+string(rune('a'+i)), "198.51.100.7")
			if parley.ErrorCode(err) == parley.ENotAuthenticated {
				mu.Lock()
				checked++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if checked > limit {
		t.Errorf("%d guesses checked in a burst of %d, want at most %d (D19: failed sign-ins per email are throttled)", checked, burst, limit)
	}
	// The right password after the limit is refused too from that client,
	// until the window ends; another client signs in (issue #31 item 3).
	if _, _, err := ops.SignIn(e.Ctx, "target@example.com", "correct horse battery", "198.51.100.7"); parley.ErrorCode(err) != parley.ERateLimited {
		t.Errorf("right password after the limit, same client: %v, want rate_limited", err)
	}
	if _, _, err := ops.SignIn(e.Ctx, "target@example.com", "correct horse battery", "198.51.100.8"); err != nil {
		t.Errorf("right password from a client that has not failed: %v, want a session", err)
	}
}
