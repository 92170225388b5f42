package audience_test

import (
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

func insertMany(t *testing.T, db *store.DB, brandID int64, from, n int) {
	t.Helper()
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		for i := range n {
			if err := insertNamed(t, db, tx, brandID, from+i); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func rowsInMemory(t *testing.T, eng *audience.Engine, brandID int64) int {
	t.Helper()
	n, _, ok := eng.Stats(brandID)
	if !ok {
		return -1
	}
	return n
}

// TestWarmLoadsSegmentedBrands: a node that starts loads the brands with
// segments not archived (the brands whose questions will come), and no
// other brand.
func TestWarmLoadsSegmentedBrands(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	segmented, archived, none := brand(t, db), brand(t, db), brand(t, db)
	for _, b := range []int64{segmented, archived, none} {
		insertMany(t, db, b, 0, 2)
	}
	for _, s := range []*parley.Segment{
		{BrandID: segmented, Name: "S", Source: "USER_DEFINED", Type: parley.SegmentStandard, IsActive: true},
		{BrandID: archived, Name: "A", Source: "USER_DEFINED", Type: parley.SegmentStandard, IsArchived: true},
	} {
		if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateSegment(ctx, s) }); err != nil {
			t.Fatal(err)
		}
	}
	eng := audience.New(db, nil)
	if err := eng.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if got := []int{rowsInMemory(t, eng, segmented), rowsInMemory(t, eng, archived), rowsInMemory(t, eng, none)}; !slices.Equal(got, []int{2, -1, -1}) {
		t.Fatalf("rows in memory after warming (segmented, archived only, none) = %v; want [2 -1 -1]", got)
	}
}

// TestFollowCatchesUpABulkWrite: a write of more users than a request
// catches up (a bulk import) is caught up by the node's background pass
// (Run, or Changed at the end of an import), a batch at a time, so the
// next question is answered from memory, and rightly.
func TestFollowCatchesUpABulkWrite(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b := brand(t, db)
	insertMany(t, db, b, 0, 40)
	eng := audience.New(db, nil)
	eng.MaxBehind = 3
	if err := eng.Load(ctx, b); err != nil {
		t.Fatal(err)
	}
	insertMany(t, db, b, 100, 10) // 10 changes: past MaxBehind, within a share of 40 rows
	eng.Follow(ctx)
	if n := rowsInMemory(t, eng, b); n != 50 {
		t.Fatalf("rows in memory after the catch-up: %d, want 50", n)
	}
	if n, err := eng.Count(ctx, b, named("late")); err != nil || n != 50 {
		t.Fatalf("count %d, %v; want 50", n, err)
	}
}

// TestFollowReloadsWhenMostChanged: when more of the brand changed than
// a catch-up is worth (an import into a small brand), the pass reads the
// brand again instead.
func TestFollowReloadsWhenMostChanged(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b := brand(t, db)
	insertMany(t, db, b, 0, 4)
	eng := audience.New(db, nil)
	eng.MaxBehind = 3
	if err := eng.Load(ctx, b); err != nil {
		t.Fatal(err)
	}
	insertMany(t, db, b, 100, 10)
	eng.Follow(ctx)
	if n := rowsInMemory(t, eng, b); n != 14 {
		t.Fatalf("rows in memory after the reload: %d, want 14", n)
	}
	if n, err := eng.Count(ctx, b, named("late")); err != nil || n != 14 {
		t.Fatalf("count %d, %v; want 14", n, err)
	}
}

// TestAudienceChangesInBatches: the change log is read a batch at a
// time, every change once across the batches; on PostgreSQL a batch ends
// at a transaction's edge, and a transaction larger than a batch is
// reported (the brand is read again instead).
func TestAudienceChangesInBatches(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b := brand(t, db)
	pos, err := db.AudiencePosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		insertMany(t, db, b, 10*i, 2)
	}
	var all []int64
	for {
		ids, next, more, err := db.AudienceChanges(ctx, b, pos, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) > 3 || (more && len(ids) == 0) {
			t.Fatalf("a batch of %d ids (more %v) from a limit of 3", len(ids), more)
		}
		if db.IsPostgres() && len(ids)%2 != 0 {
			t.Fatalf("a batch of %d ids splits a transaction of 2", len(ids))
		}
		all, pos = append(all, ids...), next
		if !more {
			break
		}
	}
	slices.Sort(all)
	if len(slices.Compact(all)) != 6 {
		t.Fatalf("changed users read: %v; want the 6", all)
	}
	insertMany(t, db, b, 100, 5)
	ids, _, more, err := db.AudienceChanges(ctx, b, pos, 3)
	if err != nil || !more {
		t.Fatalf("5 changes with a limit of 3: more %v, %v", more, err)
	}
	if db.IsPostgres() && len(ids) != 0 {
		t.Fatalf("PostgreSQL split a transaction of 5: %v", ids)
	}
}

// TestFollowKeepsWarmBrands: a brand nobody asked about for MaxIdle is
// given back, unless it is one Warm loads (it has segments): a bulk
// import that outlasts MaxIdle with no question meanwhile still finds its
// brand in memory when it ends (issue #34).
func TestFollowKeepsWarmBrands(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	segmented, plain := brand(t, db), brand(t, db)
	for _, b := range []int64{segmented, plain} {
		insertMany(t, db, b, 0, 2)
	}
	s := &parley.Segment{BrandID: segmented, Name: "S", Source: "USER_DEFINED", Type: parley.SegmentStandard, IsActive: true}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateSegment(ctx, s) }); err != nil {
		t.Fatal(err)
	}
	eng := audience.New(db, nil)
	for _, b := range []int64{segmented, plain} {
		if err := eng.Load(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	eng.MaxIdle = time.Nanosecond
	time.Sleep(time.Millisecond) // both brands now idle past MaxIdle
	insertMany(t, db, segmented, 100, 3)
	eng.Follow(ctx)
	if got := []int{rowsInMemory(t, eng, segmented), rowsInMemory(t, eng, plain)}; !slices.Equal(got, []int{5, -1}) {
		t.Fatalf("rows in memory after an idle pass (segmented, plain) = %v; want [5 -1]: the segmented brand kept and caught up, the other given back", got)
	}
}
