package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// seedHeavy gives the brand n users whose custom_data.note is 2,000 x's,
// the worst case of a substring search for a needle of x's ending in
// something else.
func seedHeavy(t *testing.T, db *store.DB, brand int64, n int) {
	t.Helper()
	var err error
	if apitest.Engine() == "postgres" {
		err = db.Exec(t.Context(), `INSERT INTO users (brand_id, phone_number, custom_data, is_deleted, date_created, date_last_updated)
		SELECT ?, '+1' || (2000000000 + x), json_build_object('note', repeat('x', 2000)), FALSE, 1700000000000000 + x, 1700000000000000
		FROM generate_series(1::bigint, ?) x`, brand, n)
	} else {
		err = db.Exec(t.Context(), `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
		INSERT INTO users (brand_id, phone_number, custom_data, is_deleted, date_created, date_last_updated)
		SELECT ?, '+1' || (2000000000 + x), json_object('note', printf('%.2000c', 'x')), 0, 1700000000000000 + x, 1700000000000000
		FROM c`, n, brand)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// heavyCriteria are the costliest criteria D14 allows on a text: CONTAINS
// of 1,024 characters that almost match everywhere, one shaped for each
// engine's search (SQLite's LIKE compares forwards, PostgreSQL's strpos
// from the needle's end).
func heavyCriteria() []parley.SegmentCriterion {
	fwd := strings.Repeat("x", parley.MaxCriterionText-1) + "y"
	back := "y" + strings.Repeat("x", parley.MaxCriterionText-1)
	note := parley.SegmentAttribute{DimensionType: parley.DimensionCustomData, FieldName: "note", FieldType: parley.CustomString}
	return []parley.SegmentCriterion{
		{Attribute: note, OperatorType: parley.OpContains, StrFieldValue: &fwd, AndGroupNum: 0},
		{Attribute: note, OperatorType: parley.OpContains, StrFieldValue: &back, AndGroupNum: 1},
	}
}

// TestAudienceCountStopsWithContext: a segment query ends when its
// context does, inside the database, on both engines (issue #31 item 2):
// the engine itself reports the query interrupted (SQLite's
// SQLITE_INTERRUPT, PostgreSQL's query_canceled 57014), which it would
// not if database/sql merely stopped waiting for a query that ran on.
func TestAudienceCountStopsWithContext(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	seedHeavy(t, db, brand, 3000)
	a := store.Audience{Criteria: heavyCriteria()}
	for _, op := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"count", func(ctx context.Context) error { _, err := db.CountAudience(ctx, brand, a); return err }},
		{"users", func(ctx context.Context) error { _, err := db.AudienceUsers(ctx, brand, a, 0, 10); return err }},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		err := op.run(ctx)
		t.Logf("%s on %s: canceled after 300 ms, returned after %v: %v", op.name, apitest.Engine(), time.Since(start), err)
		var se *sqlite.Error
		var pe *pgconn.PgError
		switch {
		case errors.Is(err, context.Canceled): // what both drivers answer once the engine stopped
		case errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_INTERRUPT:
		case errors.As(err, &pe) && pe.Code == "57014":
		default:
			t.Errorf("%s: %v, want the query interrupted", op.name, err)
		}
		// The driver's call has returned: its connection is back in the
		// pool (database/sql cannot take it back from a running query),
		// and on PostgreSQL no backend still runs the search.
		if n := db.ReadersInUse(); n != 0 {
			t.Errorf("%s: %d reader connections still in use after the cancel", op.name, n)
		}
		if apitest.Engine() == "postgres" {
			var running int
			if err := db.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND query LIKE '%strpos%' AND pid <> pg_backend_pid()`).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if running != 0 {
				t.Errorf("%s: %d backends still run the canceled search", op.name, running)
			}
		}
		cancel()
	}
}
