package parley

import (
	"errors"
	"time"
)

// RetryLater is an *Error the caller may try again after After: the HTTP
// layer sends After as Retry-After (429 rate_limited, 503).
type RetryLater struct {
	Err   *Error
	After time.Duration
}

func (e *RetryLater) Error() string { return e.Err.Error() }

// Unwrap gives the *Error, so ErrorCode and ErrorMessage read it.
func (e *RetryLater) Unwrap() error { return e.Err }

// RetryAfter returns how long err says to wait before trying again, if
// it says so (a *RetryLater in its chain).
func RetryAfter(err error) (time.Duration, bool) {
	var r *RetryLater
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}
