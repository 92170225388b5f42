// Package parley holds Parley's domain: the resources of the v1 API, the
// inputs that create and change them, the error type with its codes, and the
// service interfaces the HTTP layer is written against. It imports only the
// standard library, so every adapter can depend on it and it on none of them.
package parley

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Time is a UTC instant. It encodes as RFC 3339 with microsecond precision
// and a Z suffix (D1), e.g. 2026-11-21T22:12:32.123456Z.
type Time struct{ time.Time }

// TimeFormat is the layout of every timestamp in the API (D1).
const TimeFormat = "2006-01-02T15:04:05.000000Z"

// NewTime returns t in UTC, truncated to the microsecond the API shows.
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Microsecond)} }

var _ json.Marshaler = Time{}

// InYearRange reports whether t falls in years 1–9999 UTC: the instants
// RFC 3339 can write, so every client can read them back. Every time or
// date the API stores from input is held to it (#31).
func InYearRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// Optional is a JSON member that may be absent, null or set. The API needs all
// three apart: on update an absent member is left alone and null clears it
// (D4).
type Optional[T any] struct {
	Set   bool // the member was present
	Valid bool // the member was present and not null
	Value T
}

// Some returns an Optional set to v.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Valid: true, Value: v} }

// Null returns an Optional that is present and null.
func Null[T any]() Optional[T] { return Optional[T]{Set: true} }

// UnmarshalJSON implements json.Unmarshaler.
func (o *Optional[T]) UnmarshalJSON(data []byte) error {
	o.Set = true
	if string(data) == "null" {
		o.Valid = false
		var zero T
		o.Value = zero
		return nil
	}
	o.Valid = true
	// Fast paths for the common plain members: the outer decoder has already
	// checked that data is well-formed JSON, so only escapes and invalid
	// UTF-8 (which json replaces) need the full decoder.
	switch p := any(&o.Value).(type) {
	case *string:
		if n := len(data); n >= 2 && data[0] == '"' && bytes.IndexByte(data, '\\') < 0 && utf8.Valid(data) {
			*p = string(data[1 : n-1])
			return nil
		}
	case *bool:
		switch string(data) {
		case "true":
			*p = true
			return nil
		case "false":
			*p = false
			return nil
		}
	case *int64:
		if v, err := strconv.ParseInt(string(data), 10, 64); err == nil {
			*p = v
			return nil
		}
	case *json.RawMessage:
		*p = append((*p)[:0], data...)
		return nil
	}
	// A type error here comes back as *json.UnmarshalTypeError; the outer
	// decoder fills in the member's name, which the caller reports. Members
	// unknown to an object value are refused as at the top level (D4).
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(&o.Value)
}

// MarshalJSON implements json.Marshaler; an unset member encodes as null, so
// senders use omitzero to leave it out.
func (o Optional[T]) MarshalJSON() ([]byte, error) {
	if !o.Valid {
		return []byte("null"), nil
	}
	return json.Marshal(o.Value)
}

// IsZero reports whether the member is absent, for omitzero.
func (o Optional[T]) IsZero() bool { return !o.Set }

// Ptr returns a pointer to the value, nil when null or absent.
func (o Optional[T]) Ptr() *T {
	if !o.Valid {
		return nil
	}
	v := o.Value
	return &v
}

// SignedWrite is the signature of a signed POST, PUT or DELETE (D2). The
// first transaction the request commits records it, in the same commit
// as the change, so a copy of the request changes nothing: its
// transaction finds the signature recorded and fails with ErrReplayed.
type SignedWrite struct {
	// Key identifies the signature; Expires is when the x-date check
	// rejects it anyway, after which it may be forgotten.
	Key      []byte
	Expires  time.Time
	recorded atomic.Bool
}

// Recorded reports whether a transaction of the request recorded the signature.
func (w *SignedWrite) Recorded() bool { return w.recorded.Load() }

// MarkRecorded notes that the signature is committed.
func (w *SignedWrite) MarkRecorded() { w.recorded.Store(true) }

// IdempotencyRecord is an Idempotency-Key as stored (D13): the hash of the
// request that holds it and, once known, the answer to replay.
type IdempotencyRecord struct {
	RequestHash []byte
	Answer      *Answer // nil while the request holding the key runs
}

// Answer is a response as an Idempotency-Key keeps it.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// KeyedWrite is a POST's Idempotency-Key (D13) on its way to the write that
// makes the request's change. That write's transaction claims the key —
// the write fails with *KeyTaken, changing nothing, when another request
// holds or held it — and stores the request's answer in the same commit
// when the write names its result and Encode is set: a retry then finds
// the change and its answer, or neither, whatever becomes of the request
// after its commit.
type KeyedWrite struct {
	BrandID int64
	Key     string
	// Hash identifies the request (method, target, body digest); a repeat
	// has the same.
	Hash []byte
	// LockedUntil bounds a claim committed without its answer: should the
	// request die before storing one, the key is free again then.
	LockedUntil time.Time
	Expires     time.Time
	// Encode renders the request's result as its answer; nil when the
	// answer is only known once the request is done.
	Encode func(result any) (Answer, error)

	claimed atomic.Bool
	stored  atomic.Pointer[Answer]
}

// Claimed reports whether a committed transaction holds the key for the request.
func (w *KeyedWrite) Claimed() bool { return w != nil && w.claimed.Load() }

// Stored returns the answer committed with the request's change, nil when
// there is none (yet).
func (w *KeyedWrite) Stored() *Answer {
	if w == nil {
		return nil
	}
	return w.stored.Load()
}

// MarkClaimed notes that the key is committed, with a as its answer or,
// when a is nil, as a claim that awaits it.
func (w *KeyedWrite) MarkClaimed(a *Answer) {
	w.stored.Store(a)
	w.claimed.Store(true)
}

// KeyTaken fails the write of a request whose Idempotency-Key another
// request holds or held (D13). Record is the key as stored.
type KeyTaken struct{ Record IdempotencyRecord }

func (e *KeyTaken) Error() string { return "parley: idempotency key held by another request" }

// ErrReplayed answers a signed write whose signature was already recorded.
var ErrReplayed = &Error{Code: ENotAuthenticated, Message: "HMAC signature verification failed: replayed request"}

// CustomDataKey returns the custom_data key of a field name: lowercase, every
// run of characters other than letters and digits turned into one "_", with
// leading and trailing "_" trimmed (D6): "Loyalty Tier" → "loyalty_tier".
func CustomDataKey(name string) string {
	b := make([]rune, 0, len(name))
	sep := false
	for _, r := range name {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if sep && len(b) > 0 {
				b = append(b, '_')
			}
			sep = false
			b = append(b, unicode.ToLower(r))
			continue
		}
		sep = true
	}
	return string(b)
}
