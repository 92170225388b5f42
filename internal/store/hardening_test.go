package store_test

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/store"
)

// TestSignedWriteOnce: a signature is recorded by the first transaction
// of its request; a copy's transaction fails as replayed and writes
// nothing, a failed transaction records nothing, and later transactions of
// the same request pass (D2).
func TestSignedWriteOnce(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	exp := time.Now().Add(time.Minute)
	var fields atomic.Int64
	write := func(sw *parley.SignedWrite, fail bool) error {
		ctx := t.Context()
		name := fmt.Sprint("f", fields.Add(1))
		return db.WithOriginTx(ctx, parley.Origin{Signed: sw}, func(tx *store.Tx) error {
			if fail {
				return errors.New("validation failed")
			}
			return tx.CreateCustomField(ctx, &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
		})
	}
	const keys = 20
	var ok, replayed atomic.Int64
	var wg sync.WaitGroup
	for i := range 3 * keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := write(&parley.SignedWrite{Key: []byte(fmt.Sprintf("key-%03d", i%keys)), Expires: exp}, false); {
			case err == nil:
				ok.Add(1)
			case err == parley.ErrReplayed:
				replayed.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != keys || replayed.Load() != 2*keys {
		t.Errorf("%d committed, %d replayed; want %d and %d", ok.Load(), replayed.Load(), keys, 2*keys)
	}

	sw := &parley.SignedWrite{Key: []byte("fails-first"), Expires: exp}
	if err := write(sw, true); err == nil || sw.Recorded() {
		t.Fatalf("failed write: %v, recorded %v", err, sw.Recorded())
	}
	if err := write(sw, false); err != nil || !sw.Recorded() {
		t.Fatalf("the same request after a failed transaction: %v", err)
	}
	if err := write(sw, false); err != nil {
		t.Fatalf("a second transaction of the same request: %v", err)
	}
	if err := write(&parley.SignedWrite{Key: []byte("fails-first"), Expires: exp}, false); err != parley.ErrReplayed {
		t.Fatalf("a copy: %v, want ErrReplayed", err)
	}
}

// keyedWrite is request hash's Idempotency-Key of brand, rendering a
// result as its %v.
func keyedWrite(brand int64, key, hash string, now time.Time) *parley.KeyedWrite {
	return &parley.KeyedWrite{BrandID: brand, Key: key, Hash: []byte(hash),
		LockedUntil: now.Add(30 * time.Second), Expires: now.Add(24 * time.Hour),
		Encode: func(v any) (parley.Answer, error) {
			return parley.Answer{Status: 201, ContentType: "text/plain", Body: []byte(fmt.Sprint(v))}, nil
		}}
}

// fieldWrite returns a write that creates a custom field of brand, named
// for the number of fields it has written so far.
func fieldWrite(brand int64) func(ctx context.Context, tx *store.Tx) error {
	var n atomic.Int64
	return func(ctx context.Context, tx *store.Tx) error {
		name := fmt.Sprint("field", n.Add(1))
		return tx.CreateCustomField(ctx, &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
	}
}

func countFields(t *testing.T, db *store.DB, brand int64) int {
	t.Helper()
	fields, err := db.ListCustomFields(t.Context(), brand)
	if err != nil {
		t.Fatal(err)
	}
	return len(fields)
}

// TestKeyedWrite: a keyed request's write claims the key in its own
// transaction and stores the answer it names in the same commit; a write
// of another request with the key does not run and learns the key as
// stored; a write that fails leaves the key free (D13). Alone (WithTx) and
// grouped (WithGroupTx) alike.
func TestKeyedWrite(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		t.Run(fmt.Sprint("grouped=", grouped), func(t *testing.T) {
			db := mustOpenDB(t)
			brand := mustBrand(t, db)
			ctx := t.Context()
			now := time.Now().Truncate(time.Microsecond)
			db.Now = func() time.Time { return now }
			field := fieldWrite(brand)
			write := func(kw *parley.KeyedWrite, result any, fail error) error {
				fn := func(ctx context.Context, tx *store.Tx) error {
					if err := field(ctx, tx); err != nil {
						return err
					}
					if result != nil {
						tx.Answer(result)
					}
					return fail
				}
				o := parley.Origin{Keyed: kw}
				if grouped {
					return db.WithGroupTx(ctx, o, fn)
				}
				return db.WithOriginTx(ctx, o, func(tx *store.Tx) error { return fn(ctx, tx) })
			}

			kw := keyedWrite(brand, "k", "request-1", now)
			if err := write(kw, "one", errors.New("refused")); err == nil || kw.Claimed() {
				t.Fatalf("a failed write: %v, claimed %v; want the key left free", err, kw.Claimed())
			}
			if err := write(kw, "one", nil); err != nil {
				t.Fatal(err)
			}
			if a := kw.Stored(); !kw.Claimed() || a == nil || a.Status != 201 || a.ContentType != "text/plain" || string(a.Body) != "one" {
				t.Fatalf("after the write: claimed %v, stored %+v; want the answer one", kw.Claimed(), a)
			}
			if got := countFields(t, db, brand); got != 1 {
				t.Fatalf("%d fields, want the write's one", got)
			}

			// Another request with the key: its write does not run.
			other := keyedWrite(brand, "k", "request-2", now)
			err := write(other, "two", nil)
			var taken *parley.KeyTaken
			if !errors.As(err, &taken) {
				t.Fatalf("another request's write: %v, want *parley.KeyTaken", err)
			}
			if rec := taken.Record; string(rec.RequestHash) != "request-1" || rec.Answer == nil || string(rec.Answer.Body) != "one" {
				t.Errorf("the key as stored: %s %+v, want request-1's answer one", rec.RequestHash, rec.Answer)
			}
			if other.Claimed() || countFields(t, db, brand) != 1 {
				t.Error("a write refused for its key changed something")
			}
			// The same key of another brand is another key.
			if err := write(keyedWrite(mustBrand(t, db), "k", "request-3", now), "three", nil); err != nil {
				t.Errorf("another brand's key: %v", err)
			}
		})
	}
}

// TestKeyedWriteClaim: a write that names no result claims its key: other
// requests find it running until the request stores its answer or
// releases the claim, or the claim's lock passes. A stored answer holds
// the key until it expires. Storing an answer for a key another request
// holds changes nothing and returns that request's record (D13).
func TestKeyedWriteClaim(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	db.Now = func() time.Time { return now }
	field := fieldWrite(brand)
	write := func(kw *parley.KeyedWrite) error {
		return db.WithGroupTx(ctx, parley.Origin{Keyed: kw}, field)
	}
	taken := func(err error) *parley.IdempotencyRecord {
		t.Helper()
		var kt *parley.KeyTaken
		if !errors.As(err, &kt) {
			t.Fatalf("%v, want *parley.KeyTaken", err)
		}
		return &kt.Record
	}

	first := keyedWrite(brand, "k", "request-1", now)
	if err := write(first); err != nil || !first.Claimed() || first.Stored() != nil {
		t.Fatalf("a write without a result: %v, claimed %v, stored %v; want a claim", err, first.Claimed(), first.Stored())
	}
	if rec := taken(write(keyedWrite(brand, "k", "request-1", now))); rec.Answer != nil {
		t.Fatalf("a repeat while the first runs: %+v, want the key running", rec.Answer)
	}
	// Another request's answer does not take the key.
	if rec, err := db.StoreIdempotentAnswer(ctx, keyedWrite(brand, "k", "request-2", now), nil, parley.Answer{Status: 422}); err != nil || rec == nil || string(rec.RequestHash) != "request-1" {
		t.Fatalf("another request's answer: %+v %v, want request-1's key back", rec, err)
	}
	// The holder dies: after its lock the key is free again.
	now = now.Add(31 * time.Second)
	second := keyedWrite(brand, "k", "request-1", now)
	if err := write(second); err != nil || !second.Claimed() {
		t.Fatalf("a write after the holder's lock: %v, want the key taken over", err)
	}
	// The first holder's late release or answer must not touch the second's claim.
	if err := db.ReleaseIdempotencyKey(ctx, first); err != nil {
		t.Fatal(err)
	}
	if rec, err := db.StoreIdempotentAnswer(ctx, first, nil, parley.Answer{Status: 500}); err != nil || rec == nil || rec.Answer != nil {
		t.Fatalf("the first holder's late answer: %+v %v, want the second's claim, running", rec, err)
	}
	if rec, err := db.StoreIdempotentAnswer(ctx, second, nil, parley.Answer{Status: 200, ContentType: "application/json", Body: []byte("{}")}); err != nil || rec != nil {
		t.Fatalf("the holder's answer: %+v %v, want it stored", rec, err)
	}
	// Done: never taken over, however long it has been, until it expires.
	now = now.Add(23 * time.Hour)
	if rec := taken(write(keyedWrite(brand, "k", "request-1", now))); rec.Answer == nil || rec.Answer.Status != 200 || string(rec.Answer.Body) != "{}" {
		t.Fatalf("a repeat of a done request: %+v, want its answer", rec.Answer)
	}
	now = now.Add(time.Hour)
	third := keyedWrite(brand, "k", "request-3", now)
	if err := write(third); err != nil || !third.Claimed() {
		t.Fatalf("a write after expiry: %v, want the key taken anew", err)
	}
	// Release forgets a claim that has no answer, so a retry runs.
	if err := db.ReleaseIdempotencyKey(ctx, third); err != nil {
		t.Fatal(err)
	}
	if err := write(keyedWrite(brand, "k", "request-3", now)); err != nil {
		t.Fatalf("a retry after the release: %v", err)
	}
	if got := countFields(t, db, brand); got != 4 {
		t.Errorf("%d fields, want the 4 writes that held the key", got)
	}
}

// TestKeyedWriteSameGroup: two requests with one key queued in one group
// commit: one runs, the other does not and learns its answer (D13) —
// signed requests both, the second is not taken for a replay (D2).
func TestKeyedWriteSameGroup(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	now := time.Now()
	field := fieldWrite(brand)
	var ran atomic.Int64
	_, errs := groupOfWritesCtx(t, db, 2, func(i int) parley.Origin {
		return parley.Origin{Signed: &parley.SignedWrite{Key: []byte(fmt.Sprint("sig", i)), Expires: now.Add(time.Minute)},
			Keyed: keyedWrite(brand, "same", "request", now)}
	}, func(i int, tx *store.Tx) error {
		ran.Add(1)
		tx.Answer(fmt.Sprint("answer of ", i))
		return field(t.Context(), tx)
	})
	var taken *parley.KeyTaken
	for i, err := range errs {
		if err != nil && !errors.As(err, &taken) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if taken == nil || ran.Load() != 1 || countFields(t, db, brand) != 1 {
		t.Fatalf("outcomes %v, %d ran; want one to run and the other to find the key taken", errs, ran.Load())
	}
	if a := taken.Record.Answer; a == nil || !strings.HasPrefix(string(a.Body), "answer of ") {
		t.Errorf("the key as the refused write saw it: %+v, want the other's answer", a)
	}
}

// TestKeyedWriteRace: writes racing with a few keys — in shared groups,
// on PostgreSQL beside each other too — run once per key; every other
// write finds its key's answer (D13).
func TestKeyedWriteRace(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	now := time.Now()
	field := fieldWrite(brand)
	var ran, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			key := fmt.Sprint("k", i%4)
			o := parley.Origin{Keyed: keyedWrite(brand, key, "request", now)}
			err := db.WithGroupTx(t.Context(), o, func(ctx context.Context, tx *store.Tx) error {
				tx.Answer(key)
				return field(ctx, tx)
			})
			var taken *parley.KeyTaken
			switch {
			case err == nil:
				ran.Add(1)
			case !errors.As(err, &taken):
				t.Error(err)
			case taken.Record.Answer == nil || string(taken.Record.Answer.Body) != key:
				t.Errorf("key %s holds the answer %+v", key, taken.Record.Answer)
			default:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if ran.Load() != 4 || refused.Load() != 36 || countFields(t, db, brand) != 4 {
		t.Errorf("%d ran, %d refused, %d fields; want 4, 36 and 4", ran.Load(), refused.Load(), countFields(t, db, brand))
	}
}

// TestKeyedWriteHeldRunsAgain: a group whose writes meet keys that
// earlier requests hold reads them before its writes run, on SQLite from
// its index in memory (issue #35), and commits without those writes,
// which never run, each answered with its key as stored, and its other
// writes together (D13; issue #15).
func TestKeyedWriteHeldRunsAgain(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	db.Now = func() time.Time { return now }
	field := fieldWrite(brand)
	for key, answer := range map[string]string{"held": "first", "held-refused": "second"} {
		err := db.WithGroupTx(ctx, parley.Origin{Keyed: keyedWrite(brand, key, "request-"+key, now)}, func(ctx context.Context, tx *store.Tx) error {
			tx.Answer(answer)
			return field(ctx, tx)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	takenWith := func(err error, body string) bool {
		var taken *parley.KeyTaken
		return errors.As(err, &taken) && taken.Record.Answer != nil && string(taken.Record.Answer.Body) == body
	}

	// Alone: the second run reads the key (else it fails as the first did).
	if err := db.WithGroupTx(ctx, parley.Origin{Keyed: keyedWrite(brand, "held", "request-held", now)}, field); !takenWith(err, "first") {
		t.Fatalf("a retry alone: %v, want the key taken with its answer", err)
	}

	// In a group, with writes beside it that commit together: a retry
	// that would refuse, then one that would write.
	for _, held := range []struct {
		origin parley.Origin
		refuse bool
		answer string
	}{
		{parley.Origin{Keyed: keyedWrite(brand, "held-refused", "request-held-refused", now)}, true, "second"},
		{parley.Origin{Keyed: keyedWrite(brand, "held", "request-held", now)}, false, "first"},
	} {
		origins := []parley.Origin{held.origin, {Keyed: keyedWrite(brand, "fresh-"+held.answer, "request-fresh", now)}, {}}
		runs := make([]int, len(origins))
		txs, errs := groupOfWritesCtx(t, db, len(origins), func(i int) parley.Origin { return origins[i] }, func(i int, tx *store.Tx) error {
			runs[i]++
			if i == 0 && held.refuse {
				return store.Unchanged(errors.New("refused"))
			}
			tx.Answer(i)
			return field(ctx, tx)
		})
		if !takenWith(errs[0], held.answer) || errs[1] != nil || errs[2] != nil {
			t.Fatalf("refuse %v: outcomes %v; want the held key taken with its answer, the other writes committed", held.refuse, errs)
		}
		if txs[1] != txs[2] {
			t.Errorf("refuse %v: the group ran again write by write: its second run did not read the keys", held.refuse)
		}
		if runs[0] != 0 {
			t.Errorf("refuse %v: the held key's write ran %d times; want it never run", held.refuse, runs[0])
		}
	}
	if got := countFields(t, db, brand); got != 6 {
		t.Errorf("%d fields, want 6: the two first writes and two of each group (a held key's write never commits)", got)
	}

	// The group after it reads its keys first: the held key's write does
	// not run at all.
	origins := []parley.Origin{
		{Keyed: keyedWrite(brand, "held", "request-held", now)},
		{Keyed: keyedWrite(brand, "held-refused", "request-held-refused", now)},
	}
	runs := make([]int, 2)
	_, errs := groupOfWritesCtx(t, db, 2, func(i int) parley.Origin { return origins[i] }, func(i int, tx *store.Tx) error {
		runs[i]++
		return field(ctx, tx)
	})
	if !takenWith(errs[0], "first") || !takenWith(errs[1], "second") || runs[0]+runs[1] != 0 {
		t.Errorf("the next group: %v, ran %v; want the keys taken before the writes run", errs, runs)
	}
}

// TestKeyedWriteLargeGroup: a large group of keyed writes stores every
// key with its write's answer; a held key among them fails none of the
// others, and its write never commits (D13; issue #15).
func TestKeyedWriteLargeGroup(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	db.Now = func() time.Time { return now }
	field := fieldWrite(brand)
	if err := db.WithGroupTx(ctx, parley.Origin{Keyed: keyedWrite(brand, "held", "request-held", now)}, func(ctx context.Context, tx *store.Tx) error {
		tx.Answer("held")
		return field(ctx, tx)
	}); err != nil {
		t.Fatal(err)
	}
	const n = 87
	origins := make([]parley.Origin, n)
	for i := range n - 1 {
		origins[i] = parley.Origin{Keyed: keyedWrite(brand, fmt.Sprint("k", i), fmt.Sprint("request-", i), now)}
	}
	origins[n-1] = parley.Origin{Keyed: keyedWrite(brand, "held", "request-held", now)}
	_, errs := groupOfWritesCtx(t, db, n, func(i int) parley.Origin { return origins[i] }, func(i int, tx *store.Tx) error {
		tx.Answer(fmt.Sprint("answer ", i))
		return field(ctx, tx)
	})
	var taken *parley.KeyTaken
	if !errors.As(errs[n-1], &taken) || taken.Record.Answer == nil || string(taken.Record.Answer.Body) != "held" {
		t.Errorf("the held key: %v, want it taken with its answer", errs[n-1])
	}
	for i := range n - 1 {
		if a := origins[i].Keyed.Stored(); errs[i] != nil || a == nil || string(a.Body) != fmt.Sprint("answer ", i) {
			t.Fatalf("write %d: %v, stored %+v; want its answer stored", i, errs[i], a)
		}
		// A retry finds the key as stored.
		err := db.WithGroupTx(ctx, parley.Origin{Keyed: keyedWrite(brand, fmt.Sprint("k", i), fmt.Sprint("request-", i), now)}, field)
		if !errors.As(err, &taken) || taken.Record.Answer == nil || string(taken.Record.Answer.Body) != fmt.Sprint("answer ", i) {
			t.Fatalf("a retry of write %d: %v, want its answer", i, err)
		}
	}
	if got := countFields(t, db, brand); got != n {
		t.Errorf("%d fields, want %d: the held key's first write and the group's others", got, n)
	}
}

// TestKeyedWriteStoredBeside: two transactions that both found a key free
// (two committers on PostgreSQL): the one that stores it second is run
// again, finds it taken, and so changes nothing (D13).
func TestKeyedWriteStoredBeside(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("transactions side by side (PostgreSQL); SQLite has one writer")
	}
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	now := time.Now()
	field := fieldWrite(brand)
	var arrived sync.WaitGroup
	arrived.Add(2)
	var runs atomic.Int64
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			ctx, o := t.Context(), parley.Origin{Keyed: keyedWrite(brand, "beside", "request", now)}
			errs[i] = db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
				if runs.Add(1) <= 2 {
					arrived.Done()
					arrived.Wait() // both have checked the key and found it free
				}
				tx.Answer(i)
				return field(ctx, tx)
			})
		})
	}
	wg.Wait()
	var taken *parley.KeyTaken
	if (errs[0] == nil) == (errs[1] == nil) || !errors.As(cmp.Or(errs[0], errs[1]), &taken) {
		t.Fatalf("outcomes %v; want one to commit and the other to find the key taken", errs)
	}
	if runs.Load() != 2 || countFields(t, db, brand) != 1 {
		t.Errorf("%d runs, %d fields; want the second run refused before its write, one field", runs.Load(), countFields(t, db, brand))
	}
}

// TestKeyedWriteGroupsBeside: two groups committing side by side
// (PostgreSQL's committers) that both found a key free: the one that
// stores it second is run again, and its write with that key then finds
// it taken and changes nothing, while the group's other write, if it has
// one, commits (D13). Alone in its group, the write's INSERT of the key
// (no ON CONFLICT: issue #35) meets the primary key, and the group runs
// again rather than fail.
func TestKeyedWriteGroupsBeside(t *testing.T) {
	if apitest.Engine() != "postgres" || mustOpenDB(t).Committers() < 2 {
		t.Skip("groups side by side (PostgreSQL); SQLite has one writer")
	}
	for _, beside := range []bool{true, false} {
		t.Run(fmt.Sprint("unkeyed write beside=", beside), func(t *testing.T) {
			db := mustOpenDB(t)
			brand := mustBrand(t, db)
			now := time.Now()
			field := fieldWrite(brand)
			var arrived sync.WaitGroup
			arrived.Add(2)
			started := make(chan struct{}, 2)
			var runs atomic.Int64
			write := func(i int) func(context.Context, *store.Tx) error {
				return func(ctx context.Context, tx *store.Tx) error {
					if runs.Add(1) <= 2 {
						started <- struct{}{}
						arrived.Done()
						arrived.Wait() // both groups have checked the key
					}
					tx.Answer(i)
					return field(ctx, tx)
				}
			}
			h := holdCommitters(t, db)
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					errs[i] = db.WithGroupTx(t.Context(), parley.Origin{Keyed: keyedWrite(brand, "beside", "request", now)}, write(i))
				})
				h.queued(1)
				if i == 1 && beside { // an unkeyed write in the second group, which must commit
					wg.Go(func() { errs[2] = db.WithGroupTx(t.Context(), parley.Origin{}, field) })
					h.queued(2)
				}
				h.releaseOne()
				<-started
			}
			wg.Wait()
			if err := h.release(); err != nil {
				t.Fatal(err)
			}
			// Both groups pass the barrier together: either may store the key first.
			winner, loser := 0, 1
			if errs[0] != nil {
				winner, loser = 1, 0
			}
			var taken *parley.KeyTaken
			if errs[winner] != nil || !errors.As(errs[loser], &taken) || errs[2] != nil {
				t.Fatalf("outcomes %v; want one keyed write to commit, the other to find the key taken, the unkeyed one to commit", errs)
			}
			if a := taken.Record.Answer; a == nil || string(a.Body) != strconv.Itoa(winner) {
				t.Errorf("the key as the loser found it: %+v, want the winner's answer %d", a, winner)
			}
			want := 1 // the first write's
			if beside {
				want = 2 // and the unkeyed write's
			}
			if got := countFields(t, db, brand); got != want {
				t.Errorf("%d fields, want %d", got, want)
			}
		})
	}
}

// TestKeyedWriteBesideStoredAnswer: a write whose key a refusal's answer
// is being stored for in the same group is held back, and then finds
// that answer; the group does not fail for it, so a write beside them
// runs once (D13; review: the group failed four times, then ran write by
// write).
func TestKeyedWriteBesideStoredAnswer(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	now := time.Now()
	field := fieldWrite(brand)
	var keyedRuns, otherRuns atomic.Int64
	h := holdCommitters(t, db)
	var refused *parley.IdempotencyRecord
	var storeErr, keyedErr, otherErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		refused, storeErr = db.StoreIdempotentAnswer(t.Context(), keyedWrite(brand, "k", "refused", now), nil, parley.Answer{Status: 422, Body: []byte("no")})
	})
	wg.Go(func() {
		o := parley.Origin{Keyed: keyedWrite(brand, "k", "valid", now)}
		keyedErr = db.WithGroupTx(t.Context(), o, func(ctx context.Context, tx *store.Tx) error {
			keyedRuns.Add(1)
			return field(ctx, tx)
		})
	})
	wg.Go(func() {
		otherErr = db.WithGroupTx(t.Context(), parley.Origin{}, func(ctx context.Context, tx *store.Tx) error {
			otherRuns.Add(1)
			return field(ctx, tx)
		})
	})
	h.queued(3)
	h.releaseOne()
	wg.Wait()
	if err := h.release(); err != nil {
		t.Fatal(err)
	}
	var taken *parley.KeyTaken
	if storeErr != nil || refused != nil || otherErr != nil || !errors.As(keyedErr, &taken) {
		t.Fatalf("store %+v %v, keyed write %v, other write %v; want the refusal stored, the write refused for its key",
			refused, storeErr, keyedErr, otherErr)
	}
	if a := taken.Record.Answer; a == nil || a.Status != 422 || string(taken.Record.RequestHash) != "refused" {
		t.Errorf("the key as the write found it: %s %+v, want the refusal", taken.Record.RequestHash, a)
	}
	if keyedRuns.Load() != 0 || otherRuns.Load() != 1 {
		t.Errorf("the keyed write ran %d times, the other %d; want 0 and 1", keyedRuns.Load(), otherRuns.Load())
	}
}

// TestKeyedWriteUnreadableAnswer: an answer sealed under another server key
// (a node configured apart from the others) fails only the request with
// that key; the writes of its group commit (D13).
func TestKeyedWriteUnreadableAnswer(t *testing.T) {
	url := apitest.DatabaseURL(t, t.TempDir())
	open := func(key byte) *store.DB {
		box, err := secretbox.NewX(secretbox.DeriveKey(bytes.Repeat([]byte{key}, secretbox.KeySize), "parley idempotency answers"))
		if err != nil {
			t.Fatal(err)
		}
		db, err := app.OpenDB(t.Context(), url, store.Options{AnswerBox: box})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db1 := open(1)
	brand := mustBrand(t, db1)
	now := time.Now()
	field := fieldWrite(brand)
	keyed := func() parley.Origin {
		return parley.Origin{Keyed: keyedWrite(brand, "k", "request", now)}
	}
	if err := db1.WithGroupTx(t.Context(), keyed(), func(ctx context.Context, tx *store.Tx) error {
		tx.Answer("sealed")
		return field(ctx, tx)
	}); err != nil {
		t.Fatal(err)
	}
	db1.Close()

	db2 := open(2)
	txs, errs := groupOfWritesCtx(t, db2, 3, func(i int) parley.Origin {
		if i == 0 {
			return keyed()
		}
		return parley.Origin{}
	}, func(i int, tx *store.Tx) error { return field(t.Context(), tx) })
	var taken *parley.KeyTaken
	if errs[0] == nil || errors.As(errs[0], &taken) || errs[1] != nil || errs[2] != nil {
		t.Fatalf("outcomes %v; want an error for the key alone, the other writes committed", errs)
	}
	if txs[1] != txs[2] {
		t.Error("the group ran again write by write: the unreadable answer failed it")
	}

	// The same for a refusal's answer stored beside that key.
	h := holdCommitters(t, db2)
	var storeErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		_, storeErr = db2.StoreIdempotentAnswer(t.Context(), keyedWrite(brand, "k", "refused", now), nil, parley.Answer{Status: 422})
	})
	txs = make([]*sql.Tx, 2)
	for i := range txs {
		wg.Go(func() {
			errs[i] = db2.WithGroupTx(t.Context(), parley.Origin{}, func(ctx context.Context, tx *store.Tx) error {
				txs[i] = tx.SQL()
				return field(ctx, tx)
			})
		})
	}
	h.queued(3)
	h.releaseOne()
	wg.Wait()
	if err := h.release(); err != nil {
		t.Fatal(err)
	}
	if storeErr == nil || errs[0] != nil || errs[1] != nil || txs[0] != txs[1] {
		t.Errorf("storing beside an unreadable answer: %v, writes beside it %v, shared a transaction %v; want an error for it alone",
			storeErr, errs[:2], txs[0] == txs[1])
	}
}

// TestFindUserForUpdate: a user read for update stays locked until its
// transaction ends, so a second such read waits and sees the first's
// change instead of overwriting it (PostgreSQL; review: two updates
// side by side lost one, and an update beside a delete undid it).
func TestFindUserForUpdate(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("transactions side by side (PostgreSQL); SQLite has one writer")
	}
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	locked, done := make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.WithTx(ctx, func(tx *store.Tx) error {
			got, err := tx.FindUserForUpdate(ctx, brand, u.ID)
			if err != nil {
				return err
			}
			close(locked)
			time.Sleep(200 * time.Millisecond) // the second read comes now
			first := "first"
			got.FirstName = &first
			return tx.UpdateUser(ctx, got)
		})
	}()
	<-locked
	var seen *string
	if err := db.WithTx(ctx, func(tx *store.Tx) error {
		got, err := tx.FindUserForUpdate(ctx, brand, u.ID)
		if got != nil {
			seen = got.FirstName
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if seen == nil || *seen != "first" {
		t.Errorf("the second read saw first_name %v, want the first transaction's change", seen)
	}
}

// TestInsertUserGrouped: creates that share a group commit keep their own
// outcomes — one duplicate or replay fails alone — and a signed create
// records its signature with the user (D2, D5).
func TestInsertUserGrouped(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	exp := time.Now().Add(time.Minute)
	insert := func(sig, phone string) error {
		o := parley.Origin{Signed: &parley.SignedWrite{Key: []byte(sig), Expires: exp}}
		return db.WithGroupTx(t.Context(), o, func(ctx context.Context, tx *store.Tx) error {
			return tx.InsertUser(ctx, &parley.User{BrandID: brand, PhoneNumber: phone})
		})
	}
	var created, dups, replays atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Go(func() {
			// 20 numbers, each sent three times: twice as copies of one
			// signed request, once as another request.
			sig := fmt.Sprint("sig-", i%20)
			if i >= 40 {
				sig = fmt.Sprint("other-", i)
			}
			switch err := insert(sig, fmt.Sprintf("+1415555%04d", i%20)); {
			case err == nil:
				created.Add(1)
			case errors.Is(err, parley.ErrReplayed):
				replays.Add(1)
			case parley.ErrorCode(err) == parley.EDuplicate:
				dups.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if created.Load() != 20 || replays.Load()+dups.Load() != 40 {
		t.Errorf("%d created, %d replays, %d duplicates; want 20 created and 40 refused",
			created.Load(), replays.Load(), dups.Load())
	}
	var users int
	db.Writer().QueryRow("SELECT count(*) FROM users").Scan(&users)
	if users != 20 {
		t.Errorf("%d users stored, want 20", users)
	}

	// One after another: a copy of a create is a replay; so is a copy of
	// a create refused as a duplicate: its group recorded the signature
	// in the transaction that found the duplicate, so no change of state
	// between the two can let the copy through (D2).
	if err := insert("a", "+14155559001"); err != nil {
		t.Fatal(err)
	}
	if err := insert("a", "+14155559001"); !errors.Is(err, parley.ErrReplayed) {
		t.Errorf("copy of a create: %v, want ErrReplayed", err)
	}
	if err := insert("b", "+14155559001"); parley.ErrorCode(err) != parley.EDuplicate {
		t.Errorf("a duplicate create: %v, want duplicate_record_found", err)
	}
	if err := insert("b", "+14155559001"); !errors.Is(err, parley.ErrReplayed) {
		t.Errorf("copy of a duplicate create: %v, want ErrReplayed", err)
	}
}

// groupOfWrites holds every group committer until the n writes have
// queued, then lets one go, so those share its next transaction; each
// records the transaction it ran in.
func groupOfWrites(t *testing.T, db *store.DB, n int, write func(i int, tx *store.Tx) error) (txs []*sql.Tx, errs []error) {
	return groupOfWritesCtx(t, db, n, func(int) parley.Origin { return parley.Origin{} }, write)
}

// groupOfWritesCtx is groupOfWrites with each write's Origin from origin.
func groupOfWritesCtx(t *testing.T, db *store.DB, n int, origin func(i int) parley.Origin, write func(i int, tx *store.Tx) error) (txs []*sql.Tx, errs []error) {
	t.Helper()
	h := holdCommitters(t, db)
	txs, errs = make([]*sql.Tx, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.WithGroupTx(t.Context(), origin(i), func(_ context.Context, tx *store.Tx) error {
				txs[i] = tx.SQL()
				return write(i, tx)
			})
		})
	}
	h.queued(n)
	h.releaseOne() // it takes every queued write into its next group
	wg.Wait()
	if err := h.release(); err != nil {
		t.Fatal(err)
	}
	return txs, errs
}

// held keeps every group committer busy with a write of its own.
type held struct {
	t     *testing.T
	db    *store.DB
	gates []chan struct{}
	errs  chan error
}

// holdCommitters keeps every group committer busy until released.
func holdCommitters(t *testing.T, db *store.DB) *held {
	h := &held{t: t, db: db, errs: make(chan error, db.Committers())}
	for range db.Committers() {
		// One at a time: a write queued while the others are busy is the
		// next idle committer's.
		started, gate := make(chan struct{}), make(chan struct{})
		h.gates = append(h.gates, gate)
		go func() {
			h.errs <- db.WithGroupTx(t.Context(), parley.Origin{}, func(context.Context, *store.Tx) error { close(started); <-gate; return nil })
		}()
		<-started
	}
	return h
}

// queued waits until n writes wait for a committer.
func (h *held) queued(n int) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.db.Queued() < n {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d writes queued, want %d", h.db.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// releaseOne lets the first committer go on.
func (h *held) releaseOne() { close(h.gates[0]); h.gates = h.gates[1:] }

// release lets the others go and waits for every held write.
func (h *held) release() error {
	for _, g := range h.gates {
		close(g)
	}
	h.gates = nil
	var errs []error
	for range h.db.Committers() {
		errs = append(errs, <-h.errs)
	}
	return errors.Join(errs...)
}

// TestWithGroupTxShares: writes that queue while a group commits share
// the next transaction, on both engines (issue #4: one commit for many
// status changes).
func TestWithGroupTxShares(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	txs, errs := groupOfWrites(t, db, 5, func(i int, tx *store.Tx) error {
		name := fmt.Sprint("shared", i)
		return tx.CreateCustomField(t.Context(), &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
	})
	distinct := map[*sql.Tx]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		distinct[txs[i]] = true
	}
	if len(distinct) == 5 {
		t.Error("5 writes queued together ran in 5 transactions")
	}
	fields, err := db.ListCustomFields(t.Context(), brand)
	if err != nil || len(fields) != 5 {
		t.Fatalf("%d fields committed (%v), want 5", len(fields), err)
	}
}

// TestWithGroupTxFailureIsolated: a write that fails takes its own change
// back and no other's: the group runs again one write at a time.
func TestWithGroupTxFailureIsolated(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	bad := errors.New("no such thing")
	_, errs := groupOfWrites(t, db, 3, func(i int, tx *store.Tx) error {
		name := fmt.Sprint("f", i)
		if err := tx.CreateCustomField(t.Context(), &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name); err != nil {
			return err
		}
		if i == 1 {
			return bad
		}
		return nil
	})
	if errs[0] != nil || !errors.Is(errs[1], bad) || errs[2] != nil {
		t.Fatalf("outcomes %v; want nil, %v, nil", errs, bad)
	}
	fields, err := db.ListCustomFields(t.Context(), brand)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.FieldName)
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[f0 f2]" {
		t.Errorf("fields committed %v, want [f0 f2]", names)
	}
}

// TestWithGroupTxSigned: signed requests' writes share a group commit,
// each with its signature recorded in it (D2); a copy queued in the same
// group is refused as a replay without running, and so is a later copy.
func TestWithGroupTxSigned(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	exp := time.Now().Add(time.Minute)
	sws := make([]*parley.SignedWrite, 4)
	for i := range sws {
		sws[i] = &parley.SignedWrite{Key: []byte(fmt.Sprint("sig", i%3)), Expires: exp} // 3 is a copy of 0
	}
	var ran atomic.Int64
	txs, errs := groupOfWritesCtx(t, db, 4, func(i int) parley.Origin {
		return parley.Origin{Signed: sws[i]}
	}, func(i int, tx *store.Tx) error {
		ran.Add(1)
		name := fmt.Sprint("signed", i)
		return tx.CreateCustomField(t.Context(), &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
	})
	replays := 0
	for i, err := range errs {
		switch {
		case err == parley.ErrReplayed:
			replays++
		case err != nil:
			t.Fatalf("write %d: %v", i, err)
		case !sws[i].Recorded():
			t.Errorf("write %d committed without its signature marked recorded", i)
		}
	}
	if replays != 1 || ran.Load() != 3 {
		t.Errorf("%d replays, %d writes ran; want the copy refused without running (1, 3)", replays, ran.Load())
	}
	if errs[1] == nil && errs[2] == nil && txs[1] != txs[2] {
		t.Error("two signed writes queued together ran in separate transactions")
	}
	copyOf := &parley.SignedWrite{Key: []byte("sig1"), Expires: exp}
	err := db.WithGroupTx(t.Context(), parley.Origin{Signed: copyOf}, func(context.Context, *store.Tx) error {
		t.Error("a later copy ran")
		return nil
	})
	if err != parley.ErrReplayed {
		t.Fatalf("a later copy: %v, want ErrReplayed", err)
	}

	// A group that fails runs write by write, a held-back copy after its
	// request: the request commits, the copy is a replay.
	bad := errors.New("fails its group")
	_, errs = groupOfWritesCtx(t, db, 3, func(i int) parley.Origin {
		return parley.Origin{Signed: &parley.SignedWrite{Key: []byte(fmt.Sprint("again", i%2)), Expires: exp}}
	}, func(i int, tx *store.Tx) error {
		if i == 1 {
			return bad
		}
		name := fmt.Sprint("again", i)
		return tx.CreateCustomField(t.Context(), &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
	})
	if errs[1] != bad || (errs[0] == nil) == (errs[2] == nil) || cmp.Or(errs[0], errs[2]) != parley.ErrReplayed {
		t.Errorf("outcomes %v; want one of 0 and its copy 2 to commit, the other refused as a replay, %v for 1", errs, bad)
	}
}

// TestWithGroupTxUnchanged: a grouped write that refuses before changing
// anything (store.Unchanged) fails on its own, with its own error; the
// others commit in the group's transaction instead of each running again
// alone, and a signed refusal keeps its signature, so its copy is refused
// as a replay even if the state that refused it changes (D2).
func TestWithGroupTxUnchanged(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	missing := parley.Errorf(parley.ENotFound, "no such thing")
	exp := time.Now().Add(time.Minute)
	sw := func(i int) *parley.SignedWrite {
		return &parley.SignedWrite{Key: []byte(fmt.Sprint("unchanged", i)), Expires: exp}
	}
	write := func(i int, tx *store.Tx) error {
		if i == 1 {
			return store.Unchanged(missing)
		}
		name := fmt.Sprint("u", i)
		return tx.CreateCustomField(t.Context(), &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
	}
	txs, errs := groupOfWritesCtx(t, db, 4, func(i int) parley.Origin {
		return parley.Origin{Signed: sw(i % 3)} // 3 is a copy of 0
	}, func(i int, tx *store.Tx) error { return write(i%3, tx) })
	if errs[1] != missing || errs[2] != nil || (errs[0] == nil) == (errs[3] == nil) {
		t.Fatalf("outcomes %v; want one of 0 and its copy 3 to commit, %v for 1, nil for 2", errs, missing)
	}
	if errs[0] != nil && errs[0] != parley.ErrReplayed || errs[3] != nil && errs[3] != parley.ErrReplayed {
		t.Fatalf("outcomes %v; the copy that did not run must be refused as a replay", errs)
	}
	if shared := cmp.Or(txs[0], txs[3]); shared != txs[2] {
		t.Error("the group ran again write by write after a refusal")
	}
	fields, err := db.ListCustomFields(t.Context(), brand)
	if err != nil || len(fields) != 2 {
		t.Fatalf("%d fields committed (%v), want 2", len(fields), err)
	}
	err = db.WithGroupTx(t.Context(), parley.Origin{Signed: sw(1)}, func(_ context.Context, tx *store.Tx) error {
		return write(1, tx)
	})
	if err != parley.ErrReplayed {
		t.Errorf("a copy of the refused request: %v, want ErrReplayed", err)
	}

	// A copy in the same group as the refused request is held back, and
	// then refused as a replay.
	_, errs = groupOfWritesCtx(t, db, 2, func(int) parley.Origin {
		return parley.Origin{Signed: sw(5)}
	}, func(_ int, tx *store.Tx) error { return store.Unchanged(missing) })
	if !(errs[0] == missing && errs[1] == parley.ErrReplayed || errs[1] == missing && errs[0] == parley.ErrReplayed) {
		t.Errorf("a refused request and its copy in one group: %v, want one %v and one ErrReplayed", errs, missing)
	}
}

// TestWithGroupTxCommitFails: a COMMIT the server refuses rolled back, so
// the group's writes run again one by one and only the bad one fails.
func TestWithGroupTxCommitFails(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("a constraint checked at COMMIT (PostgreSQL's DEFERRABLE)")
	}
	db := mustOpenDB(t)
	if _, err := db.Writer().ExecContext(t.Context(), `CREATE TABLE deferred_check (v INT UNIQUE DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	_, errs := groupOfWrites(t, db, 3, func(i int, tx *store.Tx) error {
		v, w := 10*i, 10*i+1
		if i == 1 {
			w = v // a duplicate, found at COMMIT
		}
		_, err := tx.SQL().ExecContext(t.Context(), `INSERT INTO deferred_check (v) VALUES ($1), ($2)`, v, w)
		return err
	})
	if errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Errorf("outcomes %v; want only write 1 to fail", errs)
	}
	var n int
	if err := db.Writer().QueryRowContext(t.Context(), `SELECT count(*) FROM deferred_check`).Scan(&n); err != nil || n != 4 {
		t.Errorf("%d rows (%v), want the 4 of writes 0 and 2", n, err)
	}
}

// TestWithGroupTxCommitLost: when the connection is lost during COMMIT,
// the group may have committed, so its writes are not run again (a send
// would go twice): each gets the error. A copy of a signed request held
// back from the group still runs, and its signature decides.
func TestWithGroupTxCommitLost(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("a connection to lose (PostgreSQL)")
	}
	url := apitest.PostgresURL(t)
	direct, err := app.OpenDB(t.Context(), url, store.Options{}) // migrates
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if _, err := direct.Writer().ExecContext(t.Context(), `CREATE TABLE lost_writes (v INT)`); err != nil {
		t.Fatal(err)
	}
	p := apitest.NewCommitCutter(t, url, "")
	db, err := store.Open(t.Context(), p.URL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sw := &parley.SignedWrite{Key: []byte("lost"), Expires: time.Now().Add(time.Minute)}
	_, errs := groupOfWritesCtx(t, db, 4, func(i int) parley.Origin {
		if i >= 2 {
			return parley.Origin{Signed: &parley.SignedWrite{Key: sw.Key, Expires: sw.Expires}}
		}
		return parley.Origin{}
	}, func(i int, tx *store.Tx) error {
		p.Armed.Store(true) // this group's COMMIT is the one cut
		_, err := tx.SQL().ExecContext(t.Context(), `INSERT INTO lost_writes (v) VALUES ($1)`, i)
		return err
	})
	var n int
	if err := direct.Writer().QueryRowContext(t.Context(), `SELECT count(*) FROM lost_writes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d rows, want the 3 of the group that committed, each once", n)
	}
	replays := 0
	for i, err := range errs {
		switch {
		case err == nil:
			t.Errorf("write %d succeeded although its COMMIT's outcome is unknown", i)
		case err == parley.ErrReplayed:
			replays++
		}
	}
	if replays != 1 || errs[0] == parley.ErrReplayed || errs[1] == parley.ErrReplayed {
		t.Errorf("outcomes %v; want ErrReplayed only for the copy (2 or 3) that ran after the group", errs)
	}
	if !store.CommitUncertain(errs[0]) || store.CommitUncertain(parley.ErrReplayed) {
		t.Errorf("CommitUncertain(%v) is false, or true for a replay", errs[0])
	}
}

// TestTxBatch: the writes of a group add to one batch, flushed once, just
// before the commit and inside the transaction; when the flush fails, each
// write runs again alone with a batch of its own.
func TestTxBatch(t *testing.T) {
	for _, failGrouped := range []bool{false, true} {
		t.Run(fmt.Sprint("failGrouped=", failGrouped), func(t *testing.T) {
			db := mustOpenDB(t)
			brand := mustBrand(t, db)
			var mu sync.Mutex
			var flushes []string
			_, errs := groupOfWrites(t, db, 3, func(i int, tx *store.Tx) error {
				b := tx.Batch(testBatchKey{}, func() store.Flusher {
					return &testBatch{brand: brand, fail: failGrouped, mu: &mu, flushes: &flushes}
				}).(*testBatch)
				b.items = append(b.items, fmt.Sprint(i))
				return nil
			})
			for i, err := range errs {
				if err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			slices.Sort(flushes)
			want := "[0-1-2]"
			if failGrouped {
				want = "[0 0-1-2 1 2]" // the group's flush failed; then one each
			}
			if fmt.Sprint(flushes) != want {
				t.Errorf("flushes %v, want %s", flushes, want)
			}
			fields, err := db.ListCustomFields(t.Context(), brand)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(fields); n != len(flushes)-map[bool]int{false: 0, true: 1}[failGrouped] {
				t.Errorf("%d fields written by flushes %v", n, flushes)
			}
		})
	}
}

type testBatchKey struct{}

// testBatch writes a custom field named after the items added to it.
type testBatch struct {
	brand   int64
	items   []string
	fail    bool // when it holds more than one item
	mu      *sync.Mutex
	flushes *[]string
}

func (b *testBatch) Flush(ctx context.Context, tx *store.Tx) error {
	slices.Sort(b.items) // the writes queue in any order
	name := strings.Join(b.items, "-")
	b.mu.Lock()
	*b.flushes = append(*b.flushes, name)
	b.mu.Unlock()
	if b.fail && len(b.items) > 1 {
		return errors.New("flush failed")
	}
	return tx.CreateCustomField(ctx, &parley.CustomField{BrandID: b.brand, FieldName: "f" + name, CustomDataType: parley.CustomString}, "f"+name)
}

// TestTxRemembersEnabledWebhooks: within a transaction a brand's enabled
// endpoints are read once, and a write to them is seen by the next read.
func TestTxRemembersEnabledWebhooks(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	ctx := t.Context()
	err := db.WithTx(ctx, func(tx *store.Tx) error {
		hooks, err := db.ListWebhooks(ctx, tx, brand, true)
		if err != nil || len(hooks) != 0 {
			t.Fatalf("before: %d endpoints, %v", len(hooks), err)
		}
		w := &store.WebhookRecord{Webhook: parley.Webhook{BrandID: brand, URL: "https://example.com/h", EventTypes: []string{"*"}}, Secret: []byte("s")}
		if err := tx.InsertWebhook(ctx, w); err != nil {
			return err
		}
		for range 2 {
			hooks, err = db.ListWebhooks(ctx, tx, brand, true)
			if err != nil || len(hooks) != 1 || hooks[0].ID != w.ID {
				t.Fatalf("after the insert: %v, %v", hooks, err)
			}
			hooks[0] = nil // a caller's slice is its own
		}
		w.Disabled = true
		if err := tx.UpdateWebhook(ctx, w); err != nil {
			return err
		}
		if hooks, err = db.ListWebhooks(ctx, tx, brand, true); err != nil || len(hooks) != 0 {
			t.Fatalf("after disabling: %d endpoints, %v", len(hooks), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWithGroupTxCallerGone: a write whose caller gave up while it was
// queued is not run, and says so; the others of its group commit.
func TestWithGroupTxCallerGone(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	field := func(name string) func(context.Context, *store.Tx) error {
		return func(ctx context.Context, tx *store.Tx) error {
			return tx.CreateCustomField(ctx, &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name)
		}
	}
	h := holdCommitters(t, db)
	ctx, cancel := context.WithCancel(t.Context())
	gone, stays := make(chan error, 1), make(chan error, 1)
	go func() { gone <- db.WithGroupTx(ctx, parley.Origin{}, field("gone")) }()
	go func() { stays <- db.WithGroupTx(t.Context(), parley.Origin{}, field("stays")) }()
	h.queued(2)
	cancel()
	h.releaseOne()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Errorf("the abandoned write: %v, want context.Canceled", err)
	}
	if err := <-stays; err != nil {
		t.Errorf("the other write: %v", err)
	}
	if err := h.release(); err != nil {
		t.Fatal(err)
	}
	fields, err := db.ListCustomFields(t.Context(), brand)
	if err != nil || len(fields) != 1 || fields[0].FieldName != "stays" {
		t.Errorf("committed %v (%v), want only the field of the write that stayed", fields, err)
	}
}

// TestAfterCommit: what a write reports after its commit is reported once
// it commits, never when it rolls back, and once only for a write whose
// group failed and which ran again alone.
func TestAfterCommit(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	var committed, rolledBack int
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		tx.AfterCommit(func() { committed++ })
		return nil
	}); err != nil || committed != 1 {
		t.Fatalf("after a commit: %d calls (%v), want 1", committed, err)
	}
	_ = db.WithTx(t.Context(), func(tx *store.Tx) error {
		tx.AfterCommit(func() { rolledBack++ })
		return errors.New("rolled back")
	})
	if rolledBack != 0 {
		t.Fatalf("after a rollback: %d calls, want 0", rolledBack)
	}

	var mu sync.Mutex
	calls := map[int]int{}
	_, errs := groupOfWrites(t, db, 3, func(i int, tx *store.Tx) error {
		tx.AfterCommit(func() { mu.Lock(); calls[i]++; mu.Unlock() })
		name := fmt.Sprint("g", i)
		if err := tx.CreateCustomField(t.Context(), &parley.CustomField{BrandID: brand, FieldName: name, CustomDataType: parley.CustomString}, name); err != nil {
			return err
		}
		if i == 1 {
			return errors.New("fails its group")
		}
		return nil
	})
	if errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Fatalf("outcomes %v", errs)
	}
	if calls[0] != 1 || calls[1] != 0 || calls[2] != 1 {
		t.Errorf("after-commit calls per write %v; want 1 for each committed write, 0 for the failed one", calls)
	}
}
