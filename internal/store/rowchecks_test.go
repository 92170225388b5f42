package store_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
)

// TestHotTablesUnchecked: on PostgreSQL the tables written row by row by
// imports, creates and keyed requests (users, user_history, import_phones,
// idempotency_keys) have no foreign keys, each a trigger querying its
// parent FOR KEY SHARE per row (migrations 00056 and 00060, issue #35); the
// migration's Down puts 00060's back.
func TestHotTablesUnchecked(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "postgres" {
		t.Skip("SQLite checks a foreign key inside the insert (TestSQLiteImportPhonesKeyed, TestSQLiteHistoryUnchecked)")
	}
	ctx := t.Context()
	db := openBare(t)
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
	db := openBare(t)
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
	const claimed = "7 +14155552671 2"
	check := func(step string, wantNoRowid bool, wantKeys int) {
		t.Helper()
		var noRowid bool
		var keys int
		var got string
		if err := db.QueryRow(ctx, `SELECT (SELECT sql LIKE '%WITHOUT ROWID' FROM sqlite_schema WHERE name = 'import_phones'),
			(SELECT count(*) FROM pragma_foreign_key_list('import_phones')),
			(SELECT brand_id || ' ' || phone_number || ' ' || line FROM import_phones WHERE import_id = 3)`).
			Scan(&noRowid, &keys, &got); err != nil {
			t.Fatal(err)
		}
		if noRowid != wantNoRowid || keys != wantKeys || got != claimed {
			t.Errorf("%s: without rowid %v, %d foreign keys, claimed %q; want %v, %d, %q", step, noRowid, keys, got,
				wantNoRowid, wantKeys, claimed)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	check("after 00060", true, 0)
	if err := db.MigrateDownTo(ctx, 59); err != nil {
		t.Fatal(err)
	}
	check("after 00060's Down", false, 2)
}

// TestSQLiteHistoryUnchecked: migration 00061 rebuilds SQLite's
// user_history without foreign keys (issue #35), keeping every entry, its
// index, and its AUTOINCREMENT sequence, so an id given out before is not
// given again, both ways.
func TestSQLiteHistoryUnchecked(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("PostgreSQL's user_history lost its foreign keys in 00056")
	}
	ctx := t.Context()
	db := openBare(t)
	if err := db.MigrateTo(ctx, 60); err != nil {
		t.Fatal(err)
	}
	exec := func(q string) {
		t.Helper()
		if err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	entry := func(field string) {
		t.Helper()
		exec(`INSERT INTO user_history (brand_id, user_id, field, new_value, source, occurred_at)
			VALUES (7, 3, '` + field + `', '"gold"', 'import', 5)`)
	}
	exec(`INSERT INTO brands (id, name, phone_number, date_created) VALUES (7, 'B', '+14155550100', 0)`)
	exec(`INSERT INTO users (id, brand_id, phone_number, date_created, date_last_updated) VALUES (3, 7, '+14155552671', 0, 0)`)
	entry("custom_data.tier")
	entry("custom_data.gone")
	exec(`DELETE FROM user_history WHERE id = 2`) // the sequence stays at 2
	check := func(step string, wantKeys int, wantIDs string) {
		t.Helper()
		var keys, index int
		var ids string
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM pragma_foreign_key_list('user_history')),
			(SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'user_history_user'),
			(SELECT group_concat(id || ':' || field, ' ') FROM (SELECT id, field FROM user_history ORDER BY id))`).
			Scan(&keys, &index, &ids); err != nil {
			t.Fatal(err)
		}
		if keys != wantKeys || index != 1 || ids != wantIDs {
			t.Errorf("%s: %d foreign keys, %d user_history_user, entries %q; want %d, 1, %q", step, keys, index, ids,
				wantKeys, wantIDs)
		}
	}
	if err := db.MigrateTo(ctx, 61); err != nil {
		t.Fatal(err)
	}
	entry("custom_data.after")
	check("after 00061", 0, "1:custom_data.tier 3:custom_data.after")
	if err := db.MigrateDownTo(ctx, 60); err != nil {
		t.Fatal(err)
	}
	entry("custom_data.down")
	check("after 00061's Down", 2, "1:custom_data.tier 3:custom_data.after 4:custom_data.down")
}
