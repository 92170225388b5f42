package store_test

import (
	"strings"
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
		t.Skip("SQLite checks a foreign key inside the insert, not with a trigger (TestSQLiteImportPhonesKeyed)")
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

// TestSQLiteImportPhonesKeyed: SQLite's import_phones is one B-tree, its
// primary key, with no foreign keys to look up (migration 00060, issue
// #35), and the numbers an unfinished import claimed before it stay
// claimed, both ways.
func TestSQLiteImportPhonesKeyed(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("PostgreSQL's migration drops constraints only (TestHotTablesUnchecked)")
	}
	ctx := t.Context()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, 59); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO brands (id, name, phone_number, date_created) VALUES (7, 'B', '+14155550100', 0)`,
		`INSERT INTO imports (id, brand_id, status, file_name, blob_key, on_duplicate, delimiter, columns, total_rows,
			next_offset, next_line, date_created) VALUES (3, 7, 'running', 'f.csv', 'k', 'skip', ',', '[]', 2, 40, 2, 0)`,
		`INSERT INTO import_phones (import_id, brand_id, phone_number, line) VALUES (3, 7, '+14155552671', 2)`,
	} {
		if err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	shape := func() (withoutRowid bool, keys int, claimed string) {
		t.Helper()
		var sql string
		if err := db.QueryRow(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'import_phones'`).Scan(&sql); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM pragma_foreign_key_list('import_phones')`).Scan(&keys); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT brand_id || ' ' || phone_number || ' ' || line FROM import_phones
			WHERE import_id = 3`).Scan(&claimed); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(sql, "WITHOUT ROWID"), keys, claimed
	}
	const want = "7 +14155552671 2"
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if noRowid, keys, claimed := shape(); !noRowid || keys != 0 || claimed != want {
		t.Errorf("after 00060: without rowid %v, %d foreign keys, claimed %q; want true, 0, %q", noRowid, keys, claimed, want)
	}
	if err := db.MigrateDownTo(ctx, 59); err != nil {
		t.Fatal(err)
	}
	if noRowid, keys, claimed := shape(); noRowid || keys != 2 || claimed != want {
		t.Errorf("after 00060's Down: without rowid %v, %d foreign keys, claimed %q; want false, 2, %q", noRowid, keys, claimed, want)
	}
}
