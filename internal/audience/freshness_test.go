package audience_test

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

func named(name string) store.Audience {
	return store.Audience{Criteria: []parley.SegmentCriterion{{Attribute: parley.SegmentAttribute{
		DimensionType: parley.DimensionContact, FieldName: "first_name", FieldType: parley.CustomString},
		OperatorType: parley.OpEquals, StrFieldValue: &name}}}
}

func insertNamed(t *testing.T, db *store.DB, tx *store.Tx, brandID int64, n int) error {
	t.Helper()
	name := "Late"
	u := &parley.User{BrandID: brandID, PhoneNumber: fmt.Sprintf("+1617555%04d", n), FirstName: &name}
	u.DateCreated = parley.Time{Time: tx.Now()}
	u.DateLastUpdated = u.DateCreated
	return tx.InsertUser(t.Context(), u)
}

// TestCatchUpSeesLateCommits: on PostgreSQL transactions commit out of
// the order of their ids. A transaction that wrote before the engine's
// catch-up but commits after it (the catch-up saw a later transaction's
// write) is still read at the next catch-up: the position is the xmin of
// a snapshot, not the highest id seen.
func TestCatchUpSeesLateCommits(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	if !db.IsPostgres() {
		t.Skip("SQLite has one writer: changes commit in seq order")
	}
	b := brand(t, db)
	eng := audience.New(db, nil)
	eng.Eager = true
	count := func() int64 {
		t.Helper()
		n, err := eng.Count(ctx, b, named("late"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("count %d before any write", n)
	}
	wrote, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.WithTx(ctx, func(tx *store.Tx) error {
			if err := insertNamed(t, db, tx, b, 1); err != nil {
				return err
			}
			close(wrote)
			<-release
			return nil
		})
	}()
	<-wrote
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return insertNamed(t, db, tx, b, 2) }); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("count %d with the later transaction committed, want 1", n)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 2 {
		t.Fatalf("count %d once the earlier transaction committed, want 2", n)
	}
}

// TestReloadWhenFarBehind: more changes than MaxBehind, and the engine
// reads the brand again instead of user by user; the answer is the same.
func TestReloadWhenFarBehind(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b := brand(t, db)
	eng := audience.New(db, nil)
	eng.Eager, eng.MaxBehind = true, 3
	if n, err := eng.Count(ctx, b, named("late")); err != nil || n != 0 {
		t.Fatalf("count %d, %v", n, err)
	}
	if err := db.WithTx(ctx, func(tx *store.Tx) error {
		for i := range 10 {
			if err := insertNamed(t, db, tx, b, i); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := eng.Count(ctx, b, named("late")); err != nil || n != 10 {
		t.Fatalf("count %d, %v; want 10", n, err)
	}
}

// TestPurgeKeepsRecentChanges: the change log is purged by the periodic
// purge (store.PurgeExpired), which keeps the last hour.
func TestPurgeKeepsRecentChanges(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b := brand(t, db)
	pos, err := db.AudiencePosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return insertNamed(t, db, tx, b, 1) }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.PurgeExpired(ctx); err != nil {
		t.Fatal(err)
	}
	ids, _, _, err := db.AudienceChanges(ctx, b, pos, 10)
	if err != nil || len(ids) != 1 {
		t.Fatalf("changes after a purge: %v, %v; want the one user", ids, err)
	}
}
