package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/signing"
)

// IdempotencyStore keeps the first response to each Idempotency-Key (D13).
type IdempotencyStore interface {
	// ClaimIdempotencyKey takes the key for a request until lockedUntil
	// and returns nil, or returns the key's record when another request
	// holds or held it.
	ClaimIdempotencyKey(ctx context.Context, brandID int64, key string, hash []byte, lockedUntil, expires time.Time) (*parley.IdempotencyRecord, error)
	// SaveIdempotentResponse and ReleaseIdempotencyKey end the claim made
	// until lockedUntil; a key taken over since is left alone.
	SaveIdempotentResponse(ctx context.Context, brandID int64, key string, lockedUntil time.Time, status int, contentType string, body []byte) error
	ReleaseIdempotencyKey(ctx context.Context, brandID int64, key string, lockedUntil time.Time) error
}

// IdempotencyTTL is how long a key's first response is replayed (D13).
const IdempotencyTTL = 24 * time.Hour

// signedWrite returns the signature of a POST, PUT or DELETE for the
// request's first transaction to record (D2), or nil. Recording it with
// the change, not before, costs no transaction of its own; a copy of a
// request that changed nothing is harmless to run again.
func (s *Server) signedWrite(r *http.Request, username string) *parley.SignedWrite {
	if !s.ReplayProtection || (r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodDelete) {
		return nil
	}
	date, _ := signing.ParseDate(r.Header.Get(signing.HeaderDate)) // verified already
	h := sha256.New()
	h.Write([]byte(username))
	h.Write([]byte{0})
	h.Write([]byte(r.Header.Get(signing.HeaderSignature)))
	// Kept until the x-date leaves the skew window; the date check rejects it after.
	// A minute's margin covers nodes whose clocks differ a little.
	return &parley.SignedWrite{Key: h.Sum(nil)[:16], Expires: date.Add(s.ClockSkew + time.Minute)}
}

// idempotent runs h once per Idempotency-Key (D13): the first response is
// stored and replayed to a repeat of the same request; a different request
// with the key, or one that arrives while the first still runs, gets 409.
// Without the header it just runs h.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, req *request, h apiHandler) error {
	vals, sent := r.Header["Idempotency-Key"]
	if !sent || r.Method != http.MethodPost || s.Idempotency == nil {
		return h(w, r, req)
	}
	key := vals[0]
	if len(vals) > 1 || key == "" || len(key) > 255 {
		return &parley.Error{Code: parley.EValidation, Message: "Idempotency-Key: must be one header of 1–255 characters", Field: "Idempotency-Key"}
	}
	sum := sha256.Sum256([]byte(r.Method + " " + signing.RequestTarget(r) + "\n" + r.Header.Get(signing.HeaderDigest)))
	now := s.Now()
	// The claim outlives the request's deadline and the time its response
	// takes to be stored, so a node that dies mid-request frees the key
	// soon after, and a slow request is never overtaken by its retry.
	lockedUntil := now.Add(s.RequestTimeout + saveTimeout + 5*time.Second).Truncate(time.Microsecond)
	rec, err := s.Idempotency.ClaimIdempotencyKey(r.Context(), req.brandID, key, sum[:], lockedUntil, now.Add(IdempotencyTTL))
	if err != nil {
		// The claim may have committed after this request gave up waiting.
		s.afterRequest(r, func(ctx context.Context) error {
			return s.Idempotency.ReleaseIdempotencyKey(ctx, req.brandID, key, lockedUntil)
		})
		return err
	}
	if rec != nil {
		switch {
		case !bytes.Equal(rec.RequestHash, sum[:]):
			return parley.Errorf(parley.EIdempotencyReused,
				"Idempotency-Key [%s] was already used with another request; use a new key for a new request.", key)
		case !rec.Done:
			w.Header().Set("Retry-After", "1")
			return parley.Errorf(parley.EIdempotencyInUse,
				"A request with Idempotency-Key [%s] is still running; retry shortly.", key)
		}
		w.Header().Set("Content-Type", rec.ContentType)
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(rec.Status)
		w.Write(rec.Body)
		return nil
	}

	rw := &recordingWriter{statusWriter: statusWriter{ResponseWriter: w}}
	if err := h(rw, r, req); err != nil {
		s.writeError(rw, r, err)
	}
	// The outcome is stored after the request, off its path: until then a
	// repeat finds the key in use and retries. It is stored even if the
	// client has gone, since its retry must find it. A server error or a
	// refused copy (401) is not the answer to keep: the key is released.
	status, ctype, body := cmp.Or(rw.status, http.StatusOK), w.Header().Get("Content-Type"), rw.body.Bytes()
	s.afterRequest(r, func(ctx context.Context) error {
		if status >= 500 || status == http.StatusUnauthorized {
			return s.Idempotency.ReleaseIdempotencyKey(ctx, req.brandID, key, lockedUntil)
		}
		return s.Idempotency.SaveIdempotentResponse(ctx, req.brandID, key, lockedUntil, status, ctype, body)
	})
	return nil
}

// saveTimeout bounds storing a key's outcome after its request.
const saveTimeout = 10 * time.Second

// afterRequest runs an idempotency key's bookkeeping once the request is
// done, off its path; Wait waits for it.
func (s *Server) afterRequest(r *http.Request, fn func(ctx context.Context) error) {
	ctx := context.WithoutCancel(r.Context())
	run := func() {
		ctx, cancel := context.WithTimeout(ctx, saveTimeout)
		defer cancel()
		if err := fn(ctx); err != nil {
			s.logger.Warn("idempotency key not recorded", "request_id", requestID(ctx), "error", err.Error())
		}
	}
	s.bgMu.Lock()
	if s.waiting {
		s.bgMu.Unlock()
		run()
		return
	}
	s.background.Add(1)
	s.bgMu.Unlock()
	go func() {
		defer s.background.Done()
		run()
	}()
}

// recordingWriter passes the response through and keeps a copy.
type recordingWriter struct {
	statusWriter
	body bytes.Buffer
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.statusWriter.Write(b)
}

// limiter holds one token bucket per credential (D13). It is per node:
// sharing buckets through the database would add a write to every read.
type limiter struct {
	rate  rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter

	limitHeader []string
}

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	if perSecond <= 0 {
		return nil
	}
	burst = max(1, burst)
	return &limiter{rate: rate.Limit(perSecond), burst: burst, now: now,
		buckets: map[string]*rate.Limiter{}, limitHeader: []string{strconv.Itoa(burst)}}
}

// take spends one of the credential's tokens and sets the RateLimit-*
// headers: Limit is the bucket size, Remaining the tokens left, Reset the
// seconds until the bucket is full again. Without a token it answers
// rate_limited with Retry-After, the seconds until one is back.
func (l *limiter) take(w http.ResponseWriter, username string) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	b := l.buckets[username]
	if b == nil {
		b = rate.NewLimiter(l.rate, l.burst)
		l.buckets[username] = b
	}
	l.mu.Unlock()
	now := l.now()
	ok := b.AllowN(now, 1)
	tokens := b.TokensAt(now)
	h := w.Header()
	h["Ratelimit-Limit"] = l.limitHeader
	h["Ratelimit-Remaining"] = []string{strconv.Itoa(int(max(0, math.Floor(tokens))))}
	h["Ratelimit-Reset"] = []string{strconv.Itoa(int(math.Ceil((float64(l.burst) - tokens) / float64(l.rate))))}
	if ok {
		return nil
	}
	retry := max(1, int(math.Ceil((1-tokens)/float64(l.rate))))
	h["Retry-After"] = []string{strconv.Itoa(retry)}
	return parley.Errorf(parley.ERateLimited,
		"Rate limit exceeded: %g requests per second per credential, bursts of %d. Retry after %d s.", float64(l.rate), l.burst, retry)
}
