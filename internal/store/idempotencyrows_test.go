package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestSQLiteIdempotencyRowsMigration: migration 00018 keeps SQLite's
// idempotency keys in a table whose rows go in the order stored (issue
// #15: a stored answer no longer lands on a random page), 00059 drops its
// unique index on (brand, key) for the index in memory (issue #35: the
// entry no longer lands on a random page either), and a key stored before
// them still holds its answer after them (D13).
func TestSQLiteIdempotencyRowsMigration(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("the PostgreSQL migration changes nothing")
	}
	ctx := t.Context()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, 13); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Microsecond)
	db.Now = func() time.Time { return now }
	for _, q := range []string{
		`INSERT INTO brands (id, name, phone_number, date_created, stop_reply) VALUES (7, 'B', '+14155550100', 1, 'bye')`,
		`INSERT INTO idempotency_keys (brand_id, idem_key, request_hash, status, content_type, body, created_at, expires_at)
			VALUES (7, 'k', CAST('request-1' AS BLOB), 201, 'text/plain', CAST('first' AS BLOB), 1, 9000000000000000)`,
	} {
		if err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var schema string
	if err := db.Writer().QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'idempotency_keys'`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToUpper(schema), "WITHOUT ROWID") {
		t.Errorf("idempotency_keys is %s; want a table with rowids", schema)
	}
	var indexes []string
	rows, err := db.Writer().QueryContext(ctx, `SELECT name FROM pragma_index_list('idempotency_keys')`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, name)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(indexes) != 1 || indexes[0] != "idempotency_keys_expires" {
		t.Errorf("idempotency_keys has the indexes %v; want only idempotency_keys_expires, appended to like the rows", indexes)
	}

	// The key holds its answer: the same request gets it, its write does not run.
	kw := keyedWrite(7, "k", "request-1", now)
	ran := false
	err = db.WithOriginTx(ctx, parley.Origin{Keyed: kw}, func(tx *store.Tx) error { ran = true; return nil })
	var taken *parley.KeyTaken
	if !errors.As(err, &taken) || ran || taken.Record.Answer == nil || string(taken.Record.Answer.Body) != "first" {
		t.Fatalf("a key stored before the migration: %v (write ran: %v); want it taken with its answer", err, ran)
	}
	// A new key is stored, once (D13).
	kw2 := keyedWrite(7, "k2", "request-2", now)
	if err := db.WithOriginTx(ctx, parley.Origin{Keyed: kw2}, func(tx *store.Tx) error { tx.Answer("second"); return nil }); err != nil {
		t.Fatal(err)
	}
	kw2 = keyedWrite(7, "k2", "request-2", now)
	if err := db.WithOriginTx(ctx, parley.Origin{Keyed: kw2}, func(tx *store.Tx) error { return nil }); !errors.As(err, &taken) {
		t.Fatalf("the key stored after the migration: %v, want it taken", err)
	}
}
