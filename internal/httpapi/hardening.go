package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/signing"
)

// IdempotencyStore keeps the first answer to each Idempotency-Key (D13).
// The transaction of a request's change claims its key, and stores the
// answer with the change when the handler renders it through answer;
// these two keep what no such transaction stored.
type IdempotencyStore interface {
	// StoreIdempotentAnswer keeps a as the answer to kw's request, unless
	// another request holds or held the key: then it returns that key's
	// record, and changes nothing.
	// It records sw, the request's signature, as RecordSignature does, and
	// fails with parley.ErrReplayed, changing nothing, when it was there.
	StoreIdempotentAnswer(ctx context.Context, kw *parley.KeyedWrite, sw *parley.SignedWrite, a parley.Answer) (*parley.IdempotencyRecord, error)
	// ReleaseIdempotencyKey forgets the claim that kw's request committed
	// without an answer, so that a retry runs again.
	ReleaseIdempotencyKey(ctx context.Context, kw *parley.KeyedWrite) error
}

// SignatureStore records the signatures of signed writes that no
// transaction of theirs recorded (D2).
type SignatureStore interface {
	// RecordSignature records sw, or fails with parley.ErrReplayed when it
	// is there already.
	RecordSignature(ctx context.Context, sw *parley.SignedWrite) error
}

// recordRefused records the signature of a verified write refused before
// any transaction recorded it (a 422 from validation, a 404, a 409), so a
// copy of it is refused as a replay even once the state that refused it
// has changed: a copy of "create +1…", refused as a duplicate, must not
// create the contact after it is deleted (D2). A copy that finds the
// signature recorded gets the replay refusal instead of err. Server errors
// and "retry shortly" answers are not recorded: their retry may run.
func (s *Server) recordRefused(ctx context.Context, sw *parley.SignedWrite, err error) error {
	if sw == nil || sw.Recorded() || s.Signatures == nil || !recordable(err) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	switch rerr := s.Signatures.RecordSignature(ctx, sw); {
	case errors.Is(rerr, parley.ErrReplayed):
		return rerr
	case rerr != nil:
		s.logger.Warn("signature of a refused write not recorded", "request_id", requestID(ctx), "error", rerr.Error())
	}
	return err
}

// recordable reports whether a write refused with err is settled: a copy
// of it is a replay.
func recordable(err error) bool {
	switch code := parley.ErrorCode(err); code {
	case parley.ENotAuthenticated, parley.EIdempotencyInUse, parley.ERateLimited, parley.EUnavailable, parley.EInternal:
		return false
	default:
		return statusOf[code] >= 400 && statusOf[code] < 500
	}
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

// idempotent runs h once per Idempotency-Key (D13). The key travels with
// the request to the transaction of its change, which fails when another
// request holds the key, and otherwise stores the key with the change: a
// repeat of the same request gets the first answer, replayed; another
// request with the key gets 409. An answer that no transaction stored (a
// refusal, say) is stored before it is sent, unless another request's is
// there by then: that one is sent instead. Without the header h just runs.
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
	kw := &parley.KeyedWrite{BrandID: req.brandID, Key: key, Hash: sum[:],
		// A claim committed without its answer outlives the request's
		// deadline and the time its answer takes to be stored: a node that
		// dies mid-request frees the key soon after, and a slow request is
		// never overtaken by its retry.
		LockedUntil: now.Add(s.RequestTimeout + saveTimeout + 5*time.Second).Truncate(time.Microsecond),
		Expires:     now.Add(IdempotencyTTL)}
	req.keyed = kw

	bw := &bufferedWriter{header: http.Header{}}
	err := h(bw, r, req)
	var taken *parley.KeyTaken
	if errors.As(err, &taken) {
		return answerTaken(w, kw, &taken.Record)
	}
	if err != nil {
		s.writeError(bw, r, err)
	}
	if kw.Stored() == nil {
		// Stored even if the client has gone: its retry must find it. A
		// server error or a refused copy (401) is not the answer to keep.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), saveTimeout)
		defer cancel()
		a := parley.Answer{Status: cmp.Or(bw.status, http.StatusOK), ContentType: bw.header.Get("Content-Type"), Body: bw.body.Bytes()}
		switch {
		case a.Status >= 500 || a.Status == http.StatusUnauthorized:
			if kw.Claimed() {
				if err := s.Idempotency.ReleaseIdempotencyKey(ctx, kw); err != nil {
					s.logger.Warn("idempotency key not released", "request_id", requestID(ctx), "error", err.Error())
				}
			}
		default:
			var sw *parley.SignedWrite
			if req.signed != nil && !req.signed.Recorded() && s.Signatures != nil {
				sw = req.signed
			}
			rec, err := s.Idempotency.StoreIdempotentAnswer(ctx, kw, sw, a)
			if errors.Is(err, parley.ErrReplayed) {
				return err
			}
			if err != nil {
				s.logger.Warn("idempotent answer not stored", "request_id", requestID(ctx), "error", err.Error())
			}
			if rec != nil {
				return answerTaken(w, kw, rec)
			}
		}
	}
	bw.sendTo(w)
	return nil
}

// answerTaken answers a request whose key another request holds or held:
// that request's answer, replayed, when it was the same request; else 409.
func answerTaken(w http.ResponseWriter, kw *parley.KeyedWrite, rec *parley.IdempotencyRecord) error {
	switch {
	case !bytes.Equal(rec.RequestHash, kw.Hash):
		return parley.Errorf(parley.EIdempotencyReused,
			"Idempotency-Key [%s] was already used with another request; use a new key for a new request.", kw.Key)
	case rec.Answer == nil:
		w.Header().Set("Retry-After", "1")
		return parley.Errorf(parley.EIdempotencyInUse,
			"A request with Idempotency-Key [%s] is still running; retry shortly.", kw.Key)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	writeAnswer(w, rec.Answer)
	return nil
}

// saveTimeout bounds storing a key's answer after its request.
const saveTimeout = 10 * time.Second

// answer calls the service and writes its result as status. With an
// Idempotency-Key, the transaction of the call's change stores the same
// answer with the change (D13): it is rendered once, in that transaction,
// and the bytes stored are the bytes sent.
func answer[T any](w http.ResponseWriter, r *http.Request, req *request, status int, call func(context.Context) (T, error)) error {
	kw := req.keyed
	if kw != nil {
		kw.Encode = func(v any) (parley.Answer, error) { return encodeJSON(status, v) }
	}
	v, err := call(r.Context())
	if err != nil {
		return err
	}
	if a := kw.Stored(); a != nil {
		writeAnswer(w, a)
		return nil
	}
	writeJSON(w, status, v)
	return nil
}

// bufferedWriter holds a keyed request's answer until its key is settled.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedWriter) Header() http.Header { return w.header }

func (w *bufferedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferedWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// sendTo writes the held answer to w.
func (w *bufferedWriter) sendTo(to http.ResponseWriter) {
	h := to.Header()
	for k, v := range w.header {
		h[k] = v
	}
	to.WriteHeader(cmp.Or(w.status, http.StatusOK))
	to.Write(w.body.Bytes())
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
