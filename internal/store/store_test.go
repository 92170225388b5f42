package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

// TestMain runs the store tests on SQLite and, when PARLEY_TEST_POSTGRES_URL
// is set, on PostgreSQL (issue #3).
func TestMain(m *testing.M) { apitest.Main(m) }

// mustOpenDB returns a migrated, empty database of the engine under test.
func mustOpenDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := app.OpenDB(context.Background(), apitest.MigratedDatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openFile opens the SQLite database at path (sqlite:…), as another
// process on the same file would, migrating it on first use.
func openFile(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := app.OpenDB(context.Background(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openBare opens a database of the engine under test with no migration
// applied, for the tests of a migration (MigrateTo, MigrateDownTo).
func openBare(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustBrand(t *testing.T, db *store.DB) int64 {
	t.Helper()
	b := &parley.Brand{Name: "B", PhoneNumber: "+14155550100"}
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.CreateBrand(t.Context(), b) }); err != nil {
		t.Fatal(err)
	}
	return b.ID
}

func insertUser(t *testing.T, db *store.DB, u *parley.User) error {
	t.Helper()
	return db.WithTx(t.Context(), func(tx *store.Tx) error {
		u.DateCreated = parley.Time{Time: tx.Now()}
		u.DateLastUpdated = u.DateCreated
		return tx.InsertUser(t.Context(), u)
	})
}

func TestUniquePhoneAmongLiveUsers(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand, other := mustBrand(t, db), mustBrand(t, db)
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	err := insertUser(t, db, &parley.User{BrandID: brand, PhoneNumber: "+14155552671"})
	if parley.ErrorCode(err) != parley.EDuplicate {
		t.Fatalf("duplicate insert: %v, want EDuplicate mapped from the engine's unique violation", err)
	}
	if err := insertUser(t, db, &parley.User{BrandID: other, PhoneNumber: "+14155552671"}); err != nil {
		t.Errorf("another brand's user with the number: %v", err)
	}
	u.IsDeleted = true
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.UpdateUser(t.Context(), u) }); err != nil {
		t.Fatal(err)
	}
	if err := insertUser(t, db, &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}); err != nil {
		t.Errorf("number of a deleted user not reusable: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	now := time.Date(2026, 11, 21, 22, 12, 32, 123456789, time.UTC)
	db.Now = func() time.Time { return now }
	consent := false
	name := "Zoë"
	in := &parley.User{BrandID: brand, PhoneNumber: "+14155552671", FirstName: &name, MessagingConsent: &consent,
		CustomData: []byte(`{"b":1.0,"a":[1,"x"]}`),
		Location:   &parley.Location{PostalCode: &name}}
	if err := insertUser(t, db, in); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindUserByID(t.Context(), brand, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.DateCreated.Equal(now.Truncate(time.Microsecond)) {
		t.Errorf("date_created %v, want %v to the microsecond", got.DateCreated, now)
	}
	if string(got.CustomData) != `{"b":1.0,"a":[1,"x"]}` {
		t.Errorf("custom_data %s: JSON must come back exactly as stored", got.CustomData)
	}
	if got.MessagingConsent == nil || *got.MessagingConsent || *got.FirstName != name || got.LastName != nil {
		t.Errorf("got %+v", got)
	}
	if _, err := db.FindUserByID(t.Context(), brand+1, in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another brand's id: %v, want ErrNotFound", err)
	}
}

func TestWithTxRollsBack(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	boom := errors.New("boom")
	err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
		if err := tx.InsertUser(t.Context(), u); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := db.FindUserByPhone(t.Context(), brand, "+14155552671"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rolled-back insert is visible: %v", err)
	}
}

func TestListMessagesNewestFirst(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		err := db.WithTx(t.Context(), func(tx *store.Tx) error {
			return tx.InsertMessage(t.Context(), &parley.Message{BrandID: brand, UserID: u.ID, Direction: "outbound",
				Status: "queued", Type: "CONVERSATIONAL", Body: "x", DateCreated: parley.Time{Time: tx.Now()}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	page, err := db.ListMessages(t.Context(), brand, u.ID, 0, 3)
	if err != nil || len(page) != 3 || page[0].ID < page[1].ID {
		t.Fatalf("page: %v %v", page, err)
	}
	rest, err := db.ListMessages(t.Context(), brand, 0, page[2].ID, 10)
	if err != nil || len(rest) != 2 || rest[0].ID >= page[2].ID {
		t.Fatalf("rest: %v %v", rest, err)
	}
}

func TestRedact(t *testing.T) {
	if got := store.Redact("postgres://u:secret@h/db"); got != "postgres://u:xxxxx@h/db" {
		t.Errorf("Redact = %q", got)
	}
}

// TestGenericPlansOnYoungTables: PostgreSQL plans a prepared statement
// once for all its executions (a generic plan) and keeps it; on a table
// it has never analyzed — a new installation, or a server with autovacuum
// off — every index looks alike. The hot lookups by id must still go
// through the index that finds one row, not one that reads all of a
// brand's users or messages.
func TestGenericPlansOnYoungTables(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("PostgreSQL's planner (PARLEY_TEST_POSTGRES_URL)")
	}
	db := mustOpenDB(t)
	ctx := t.Context()
	conn, err := db.Writer().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	plan := func(name, query, args string) string {
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+db.Rebind(query)); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE `+name+`(`+args+`)`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	if p := plan("user_by_id", store.QueryUserByID, "1"); !strings.Contains(p, "users_pkey") {
		t.Errorf("a user by id is not found through the primary key:\n%s", p)
	}
	p := plan("send", store.QueryInsertMessageTo, "1, 1, 'outbound', 'queued', 'hi', '[]', 'conversational', NULL, NULL, 0, NULL, NULL, 1, 1")
	if !strings.Contains(p, "users_pkey") {
		t.Errorf("a message's user is not found through the primary key:\n%s", p)
	}
	p = plan("sent", store.QuerySentByPID, "'sent', NULL, NULL, 0, 'x', 'sim', 1, 1, 'queued'")
	if !strings.Contains(p, "messages_brand_id") && !strings.Contains(p, "messages_pkey") {
		t.Errorf("a message's status change does not find it through (brand_id, id) or the primary key:\n%s", p)
	}
}
