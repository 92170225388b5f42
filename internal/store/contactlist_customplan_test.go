package store_test

import (
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestContactListPlannedPerValue (issue #32): the contacts list's page and
// total, filtered by a state, are planned for the state asked each time.
// A statement pgx's cache prepares may get one generic plan after five
// runs, planned for an average state's many contacts, with which a state
// of no contact reads the whole brand (130 – 360 ms at 1,000,000). Such a
// statement shows in pg_prepared_statements; a statement planned per run
// does not.
func TestContactListPlannedPerValue(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("PostgreSQL's plan cache (PARLEY_TEST_POSTGRES_URL)")
	}
	db := mustOpenDB(t)
	ctx := t.Context()
	brand := mustBrand(t, db)
	for i := range 20 {
		if err := insertUser(t, db, &parley.User{BrandID: brand, PhoneNumber: "+1415555" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + "00",
			Location: &parley.Location{StateCode: new("CA")}}); err != nil {
			t.Fatal(err)
		}
	}
	reader := db.Pools()["reader"]
	reader.SetMaxOpenConns(1) // one session: the one whose statements are listed
	for range 8 {
		if _, err := db.ContactList(ctx, brand, store.ContactQuery{StateCode: "NY", Limit: 50}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CountContactList(ctx, brand, store.ContactQuery{StateCode: "NY"}); err != nil {
			t.Fatal(err)
		}
	}
	var n int // (the pattern is split so as not to match this statement)
	if err := reader.QueryRowContext(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%state_code = ' || '$%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d statements of the state filter are prepared: they may be given a generic plan", n)
	}
}
