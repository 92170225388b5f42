package store_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestAnalyzeContactsReachesReaders: on SQLite, after AnalyzeContacts the
// reader pool plans on the new statistics, not on those its connections
// loaded before: once an import has made a brand most of the table, the
// count reads the brand's id range by rowid instead of walking its index
// (issue #34).
func TestAnalyzeContactsReachesReaders(t *testing.T) {
	if apitest.Engine() != "sqlite" {
		t.Skip("SQLite's readers (PostgreSQL's backends read the statistics as they change)")
	}
	db := mustOpenDB(t)
	ctx := t.Context()
	brand, other := mustBrand(t, db), mustBrand(t, db)
	add := func(brandID int64, n, from int) {
		users := make([]*parley.User, n)
		for i := range users {
			users[i] = &parley.User{BrandID: brandID, PhoneNumber: "+1415" + strconv.Itoa(from+i), CustomData: []byte(`{}`)}
		}
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			now := parley.Time{Time: tx.Now()}
			for _, u := range users {
				u.DateCreated, u.DateLastUpdated = now, now
			}
			return tx.InsertUsers(ctx, users)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The brand is a small part of the table: its index is the plan.
	add(brand, 100, 2000000)
	add(other, 30000, 3000000)
	const q = `SELECT count(*) FROM users u WHERE u.brand_id = ? AND u.is_deleted = FALSE AND u.custom_data IS NOT NULL AND u.id >= ? AND u.id < ?`
	// Each plan is the reader pool's, as a count's: without the fix, a
	// connection opened before the ANALYZE.
	plan := func() string {
		reader, err := db.Pools()["reader"].Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		var c int
		// A statement that reads the database, as a count does, first.
		if err := reader.QueryRowContext(ctx, q, brand, 0, 1<<40).Scan(&c); err != nil {
			t.Fatal(err)
		}
		rows, err := reader.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, brand, 0, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "; ")
	}
	if err := db.AnalyzeContacts(ctx); err != nil { // the first creates sqlite_stat1
		t.Fatal(err)
	}
	before := plan()
	// An import makes it most of the table: reading its id range by rowid
	// is now the plan.
	add(brand, 90000, 4000000)
	if err := db.AnalyzeContacts(ctx); err != nil {
		t.Fatal(err)
	}
	after := plan()
	t.Logf("plan before: %s; after: %s", before, after)
	if before == after {
		t.Fatalf("the reader's plan did not change after AnalyzeContacts (%s): it plans on the statistics it loaded before", after)
	}
}
