package store_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestHotTablesUnchecked: on PostgreSQL the tables written row by row by
// imports, creates and keyed requests (users, user_history, import_phones,
// idempotency_keys) have no foreign keys, each a trigger querying its
// parent FOR KEY SHARE per row (migrations 00056 and 00060, issue #35); the
// migration's Down puts 00060's back.
func TestHotTablesUnchecked(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "postgres" {
		t.Skip("SQLite checks a foreign key inside the insert, not with a trigger")
	}
	ctx := t.Context()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	keys := func() int {
		t.Helper()
		var n int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE contype = 'f'
			AND conrelid IN ('users'::regclass, 'user_history'::regclass, 'import_phones'::regclass,
				'idempotency_keys'::regclass)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := keys(); n != 0 {
		t.Errorf("%d foreign keys on the hot tables, want none", n)
	}
	if err := db.MigrateDownTo(ctx, 59); err != nil {
		t.Fatal(err)
	}
	if n := keys(); n != 4 {
		t.Errorf("%d foreign keys after 00060's Down, want its 4 back", n)
	}
}
