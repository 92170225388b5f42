package store_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestMigration00025OperatorsPerBrand: migration 00025 makes operators
// unique per (brand, email) instead of per email, and allows the brand
// choice's tokens, keeping every operator, session and link (D19, issue #31
// item 10); its down migration puts the global uniqueness back, and
// refuses, changing nothing, while an email is in several brands.
func TestMigration00025OperatorsPerBrand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) error {
		t.Helper()
		return db.Exec(ctx, q, args...)
	}
	must := func(q string, args ...any) {
		t.Helper()
		if err := exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	count := func(q string) int {
		t.Helper()
		var n int
		if err := db.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	must(`INSERT INTO brands (id, name, phone_number, date_created) VALUES (1, 'A', '+14155550100', 0), (2, 'B', '+14155550101', 0)`)
	must(`INSERT INTO operators (id, brand_id, email, role, password_hash, date_created) VALUES (7, 1, 'op@x.example', 'admin', 'h', 0)`)
	// Operator 9 was deleted: its id must not come back.
	must(`INSERT INTO operators (id, brand_id, email, role, date_created) VALUES (9, 1, 'gone@x.example', 'agent', 0)`)
	must(`DELETE FROM operators WHERE id = 9`)
	must(`INSERT INTO operator_tokens (token_hash, operator_id, kind, created_at, expires_at, via_link) VALUES (?, 7, 'session', 0, 9, TRUE)`, []byte("session-token"))
	if exec(`INSERT INTO operators (brand_id, email, role, date_created) VALUES (2, 'op@x.example', 'agent', 0)`) == nil {
		t.Fatal("before 00025 an email was taken in a second brand")
	}

	if err := db.MigrateTo(ctx, 25); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM operator_tokens t JOIN operators o ON o.id = t.operator_id WHERE o.email = 'op@x.example' AND t.via_link = TRUE`); n != 1 {
		t.Errorf("the session's rows after 00025: %d, want 1", n)
	}
	must(`INSERT INTO operators (brand_id, email, role, date_created) VALUES (2, 'op@x.example', 'agent', 0)`)
	// SQLite's rebuild keeps AUTOINCREMENT's mark (PostgreSQL's identity
	// does not see the fixture's explicit id, and its table is not rebuilt).
	if id := count(`SELECT id FROM operators WHERE brand_id = 2`); apitest.Engine() == "sqlite" && id <= 9 {
		t.Errorf("a new operator got id %d, want one after 9, the deleted one's (ids are never reused)", id)
	}
	if exec(`INSERT INTO operators (brand_id, email, role, date_created) VALUES (2, 'op@x.example', 'agent', 0)`) == nil {
		t.Error("after 00025 an email was taken twice in one brand")
	}
	must(`INSERT INTO operator_tokens (token_hash, operator_id, kind, created_at, expires_at) VALUES (?, 7, 'choice', 0, 9)`, []byte("choice-token"))
	if exec(`INSERT INTO operator_tokens (token_hash, operator_id, kind, created_at, expires_at) VALUES (?, 7, 'other', 0, 9)`, []byte("other")) == nil {
		t.Error("a token of an unknown kind was stored")
	}
	if exec(`INSERT INTO operator_tokens (token_hash, operator_id, kind, created_at, expires_at) VALUES (?, 999, 'link', 0, 9)`, []byte("orphan")) == nil {
		t.Error("a token of no operator was stored: foreign keys lost")
	}

	if err := db.MigrateDownTo(ctx, 24); err == nil {
		t.Fatal("down with an email in two brands: no error")
	}
	if n := count(`SELECT count(*) FROM operators`); n != 2 {
		t.Errorf("a refused down left %d operators, want 2", n)
	}
	must(`DELETE FROM operators WHERE brand_id = 2`)
	if err := db.MigrateDownTo(ctx, 24); err != nil {
		t.Fatalf("down: %v", err)
	}
	if n := count(`SELECT count(*) FROM operator_tokens`); n != 1 {
		t.Errorf("tokens after down: %d, want the session alone (choices go)", n)
	}
	if exec(`INSERT INTO operators (brand_id, email, role, date_created) VALUES (2, 'op@x.example', 'agent', 0)`) == nil {
		t.Error("after down an email was taken in a second brand")
	}
	must(`DELETE FROM operators WHERE id = 7`)
	if n := count(`SELECT count(*) FROM operator_tokens`); n != 0 {
		t.Errorf("tokens left after their operator went: %d (ON DELETE CASCADE lost)", n)
	}
	if err := db.MigrateTo(ctx, 25); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
