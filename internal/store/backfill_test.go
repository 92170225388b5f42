package store_test

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley"
)

// TestBackfillTimeZones: users stored before users.time_zone existed (a
// postal_code, a NULL time_zone) get their ZIP's zone at the next Migrate
// (D17), in bounded batches; ZIPs without a zone stay NULL, a zone already
// set is kept, and running it again changes nothing.
func TestBackfillTimeZones(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	db.SetBackfillBatch(2) // several batches over the users below
	brand := mustBrand(t, db)
	users := []struct {
		postal *string
		stored *string // time_zone as an older release left it
		want   *string // after the backfill
	}{
		{ptr("90210"), nil, ptr("America/Los_Angeles")},
		{nil, nil, nil},
		{ptr("85001-1234"), nil, ptr("America/Phoenix")}, // ZIP+4
		{ptr("00000"), nil, nil},                         // not in the data set
		{ptr("09001"), nil, nil},                         // APO: no zone
		{ptr("46320"), nil, ptr("America/Chicago")},
		{ptr("10001"), ptr("America/Chicago"), ptr("America/Chicago")}, // set: kept
		{ptr("46204"), nil, ptr("America/Indiana/Indianapolis")},
		{ptr("10001"), nil, ptr("America/New_York")},
	}
	ids := make([]int64, len(users))
	for i, tt := range users {
		u := &parley.User{BrandID: brand, PhoneNumber: fmt.Sprintf("+1415555%04d", i)}
		if tt.postal != nil {
			u.Location = &parley.Location{PostalCode: tt.postal}
		}
		if err := insertUser(t, db, u); err != nil {
			t.Fatal(err)
		}
		ids[i] = u.ID
		if _, err := db.Writer().ExecContext(t.Context(), db.Rebind(`UPDATE users SET time_zone = ? WHERE id = ?`),
			deref(tt.stored), u.ID); err != nil {
			t.Fatal(err)
		}
	}
	check := func(run string) {
		t.Helper()
		for i, tt := range users {
			var got *string
			if err := db.Writer().QueryRowContext(t.Context(), db.Rebind(`SELECT time_zone FROM users WHERE id = ?`), ids[i]).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("%s: postal_code %v: time_zone %v, want %v", run, deref(tt.postal), deref(got), deref(tt.want))
			}
		}
	}
	for _, run := range []string{"first Migrate", "second Migrate"} {
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		check(run)
	}
}

// deref is what s points to, nil for nil: for messages and SQL arguments.
func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
