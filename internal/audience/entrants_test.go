package audience_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

// TestSegmentEntrantsFromEngine: a flow's segment-entered scan with the
// engine's member ids (store.Tx.SegmentEntrantsByID) enters and forgets
// the same contacts as the SQL scan (store.Tx.SegmentEntrants), round
// after round of changed, deleted and new contacts, for random segments.
// The engine's ids are given stale ids besides (a deleted contact of the
// brand, another brand's contact, an id no one has), as a snapshot older
// than the transaction would hold: the check in the transaction must keep
// them out. Both engines.
func TestSegmentEntrantsFromEngine(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b, other := brand(t, db), brand(t, db)
	r := rand.New(rand.NewPCG(34, 21))
	var users []*parley.User
	addUsers := func(k int) {
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			for range k {
				id := b
				if r.IntN(8) == 0 {
					id = other
				}
				u := randomUser(r, id, len(users))
				if err := tx.InsertUser(ctx, u); err != nil {
					return err
				}
				users = append(users, u)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	addUsers(200)
	var segs []int64
	for i := 0; len(segs) < 6 && i < 200; i++ {
		s := &parley.Segment{BrandID: b, Name: fmt.Sprint("s", i), Type: parley.SegmentStandard, IsActive: true,
			Criteria: randomCriteria(r, nil)}
		if n, err := db.CountAudience(ctx, b, store.Audience{Criteria: s.Criteria}); err != nil || n == 0 {
			continue // refused, or no one: nothing to compare
		}
		if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateSegment(ctx, s) }); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s.ID)
	}
	if len(segs) == 0 {
		t.Fatal("no segment has members: the test tests nothing")
	}
	eng := audience.New(db, nil)
	eng.Eager = true
	entered := 0
	for round := range 6 {
		var deleted, others []int64
		for _, u := range users {
			switch {
			case u.BrandID == other:
				others = append(others, u.ID)
			case u.IsDeleted:
				deleted = append(deleted, u.ID)
			}
		}
		for i, seg := range segs {
			sqlFlow := store.ScanFlow{FlowEntry: store.FlowEntry{BrandID: b, FlowID: int64(1000 + i)},
				Trigger: parley.FlowTrigger{Type: parley.TriggerSegmentEntered, SegmentID: seg}}
			engFlow := sqlFlow
			engFlow.FlowID = int64(2000 + i)
			ids, err := eng.MemberIDs(ctx, b, store.Audience{SegmentID: seg})
			if err != nil {
				t.Fatal(err)
			}
			stale := append(append(append(slices.Clone(ids), 1<<40), deleted...), others...)
			var want, got, wantKept, gotKept []int64
			if err := db.WithTx(ctx, func(tx *store.Tx) error {
				if want, err = tx.SegmentEntrants(ctx, sqlFlow); err != nil {
					return err
				}
				if got, err = tx.SegmentEntrantsByID(ctx, engFlow, stale); err != nil {
					return err
				}
				if wantKept, err = recorded(tx, sqlFlow.FlowID); err != nil {
					return err
				}
				gotKept, err = recorded(tx, engFlow.FlowID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Fatalf("round %d, segment %d: SQL entered %v; engine ids %v", round, seg, want, got)
			}
			if !slices.Equal(wantKept, gotKept) {
				t.Fatalf("round %d, segment %d: SQL recorded %v; engine ids %v", round, seg, wantKept, gotKept)
			}
			entered += len(got)
		}
		// Changes: some contacts change (and leave or join), some are
		// deleted, new ones come.
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			for range 40 {
				u := users[r.IntN(len(users))]
				nu, err := rewriteUser(ctx, tx, r, u, 6)
				if err != nil {
					return err
				}
				*u = *nu
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		addUsers(15)
	}
	if entered == 0 {
		t.Fatal("no one entered: the test tests nothing")
	}
}

// recorded reads the members a flow's scans recorded, by id.
func recorded(tx *store.Tx, flowID int64) ([]int64, error) {
	rows, err := tx.SQL().Query(`SELECT user_id FROM flow_segment_members WHERE flow_id = ` + fmt.Sprint(flowID) + ` ORDER BY user_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
