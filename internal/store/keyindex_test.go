package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestSQLiteKeyIndexSharesTheFile: SQLite finds an Idempotency-Key with an
// index of the keys log kept in memory (issue #35, D13). A key stored by
// one process is honoured by another on the same file, and after a
// restart, with its answer byte for byte; an answer that fills in a claim,
// and a claim released, are seen by the other process although its index
// still names the old row; the index forgets the expired keys; and a log
// id is never reused after a purge emptied the log, or the other process
// would not read the row that took it.
func TestSQLiteKeyIndexSharesTheFile(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("PostgreSQL's idempotency keys have a unique index of their own")
	}
	path := "sqlite:" + filepath.Join(t.TempDir(), "parley.db")
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	clock := func() time.Time { return now }
	open := func() *store.DB {
		db := openFile(t, path)
		db.Now = clock
		return db
	}
	a, b := open(), open()
	brand := mustBrand(t, a)
	field := fieldWrite(brand)
	// write runs a keyed write on db that answers answer, or claims the key
	// when answer is "".
	write := func(db *store.DB, key, hash, answer string) error {
		return db.WithGroupTx(ctx, parley.Origin{Keyed: keyedWrite(brand, key, hash, now)}, func(ctx context.Context, tx *store.Tx) error {
			if answer != "" {
				tx.Answer(answer)
			}
			return field(ctx, tx)
		})
	}
	// taken requires db to find key held, with answer ("" while running).
	taken := func(db *store.DB, key, hash, answer string) {
		t.Helper()
		var kt *parley.KeyTaken
		if err := write(db, key, hash, "again"); !errors.As(err, &kt) {
			t.Fatalf("key %s: %v, want it taken", key, err)
		}
		got := ""
		if a := kt.Record.Answer; a != nil {
			got = string(a.Body)
		}
		if string(kt.Record.RequestHash) != hash || got != answer {
			t.Fatalf("key %s: held by %s with answer %q, want %s with %q", key, kt.Record.RequestHash, got, hash, answer)
		}
	}
	mustWrite := func(db *store.DB, key, hash, answer string) {
		t.Helper()
		if err := write(db, key, hash, answer); err != nil {
			t.Fatalf("key %s: %v", key, err)
		}
	}

	mustWrite(b, "warm", "r0", "zero") // b's index has read the log before a writes
	mustWrite(a, "k", "r1", "one")
	taken(b, "k", "r1", "one") // a's row, read by b
	taken(a, "warm", "r0", "zero")

	// A claim, then its answer: a new row, which b reads in place of the one it knew.
	claim := keyedWrite(brand, "c", "r2", now)
	if err := a.WithGroupTx(ctx, parley.Origin{Keyed: claim}, field); err != nil || !claim.Claimed() {
		t.Fatalf("claim: %v", err)
	}
	taken(b, "c", "r2", "")
	if rec, err := a.StoreIdempotentAnswer(ctx, claim, nil, parley.Answer{Status: 201, ContentType: "text/plain", Body: []byte("done")}); err != nil || rec != nil {
		t.Fatalf("the claim's answer: %+v %v", rec, err)
	}
	taken(b, "c", "r2", "done")

	// A claim released by a is free for b, whose index still names its row.
	rel := keyedWrite(brand, "r", "r3", now)
	if err := a.WithGroupTx(ctx, parley.Origin{Keyed: rel}, field); err != nil {
		t.Fatal(err)
	}
	taken(b, "r", "r3", "")
	if err := a.ReleaseIdempotencyKey(ctx, rel); err != nil {
		t.Fatal(err)
	}
	mustWrite(b, "r", "r4", "four")
	taken(a, "r", "r4", "four")

	c := open() // a restart: a new index, read from the log
	taken(c, "k", "r1", "one")
	taken(c, "c", "r2", "done")
	taken(c, "r", "r4", "four")
	if n, ok := c.IndexedKeys(); !ok || n != 4 {
		t.Fatalf("c's index holds %d keys (%v), want 4", n, ok)
	}

	// Expired, the keys leave the log and, a minute on, each index.
	now = now.Add(25 * time.Hour)
	if n, err := c.PurgeExpired(ctx); err != nil || n < 4 {
		t.Fatalf("purge: %d rows, %v; want the 4 keys", n, err)
	}
	mustWrite(c, "k", "r5", "five") // expired: a new request takes it
	if n, _ := c.IndexedKeys(); n != 1 {
		t.Errorf("c's index holds %d keys after they expired, want the new one", n)
	}
	if _, err := c.PurgeExpired(ctx); err != nil {
		t.Fatal(err)
	}
	// The log lost its last row (a purge that found nothing, then a
	// release): the next row's id must still be past the ids a and b saw.
	drop := keyedWrite(brand, "d", "r6", now)
	if err := c.WithGroupTx(ctx, parley.Origin{Keyed: drop}, field); err != nil {
		t.Fatal(err)
	}
	if err := c.ReleaseIdempotencyKey(ctx, drop); err != nil {
		t.Fatal(err)
	}
	mustWrite(c, "n", "r7", "seven")
	taken(a, "n", "r7", "seven")
	taken(b, "n", "r7", "seven")
	taken(a, "k", "r5", "five")

	// A group's write takes over a claim whose holder died: the key's old
	// row goes with it, so the log holds one row a key.
	if err := c.WithGroupTx(ctx, parley.Origin{Keyed: keyedWrite(brand, "t", "r8", now)}, field); err != nil {
		t.Fatal(err)
	}
	now = now.Add(31 * time.Second)
	mustWrite(a, "t", "r9", "nine")
	taken(b, "t", "r9", "nine")
	var rows int
	if err := a.Writer().QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys WHERE idem_key = 't'`).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("the key taken over has %d rows (%v), want 1", rows, err)
	}
}

// TestSQLiteKeyIndexInsertsManyRows: a group's new keys go into the log
// several to a statement, and each is found by its own row afterwards, by
// this process and another (issue #35, D13).
func TestSQLiteKeyIndexInsertsManyRows(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("SQLite's keys log")
	}
	path := "sqlite:" + filepath.Join(t.TempDir(), "parley.db")
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	open := func() *store.DB {
		db := openFile(t, path)
		db.Now = func() time.Time { return now }
		return db
	}
	a := open()
	brand := mustBrand(t, a)
	field := fieldWrite(brand)
	// 90 writes held until all are queued: one group, INSERTs of 64, 16,
	// 4, 4, 1 and 1 rows.
	const n = 90
	_, errs := groupOfWritesCtx(t, a, n, func(i int) parley.Origin {
		return parley.Origin{Keyed: keyedWrite(brand, fmt.Sprint("key", i), fmt.Sprint("request", i), now)}
	}, func(i int, tx *store.Tx) error {
		tx.Answer(fmt.Sprint("answer", i))
		return field(ctx, tx)
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	b := open()
	for _, db := range []*store.DB{a, b} {
		for i := range n {
			kw := keyedWrite(brand, fmt.Sprint("key", i), fmt.Sprint("request", i), now)
			err := db.WithGroupTx(ctx, parley.Origin{Keyed: kw}, field)
			var kt *parley.KeyTaken
			if !errors.As(err, &kt) || kt.Record.Answer == nil || string(kt.Record.Answer.Body) != fmt.Sprint("answer", i) {
				t.Fatalf("key%d: %v, want it taken with answer%d", i, err, i)
			}
		}
	}
	if got := countFields(t, a, brand); got != n {
		t.Errorf("%d fields, want %d: one a key", got, n)
	}
}
