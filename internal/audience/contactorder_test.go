package audience_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

// TestContactListActivityFromMemory (issue #35, migration 00058): the
// contacts list's order by latest activity, read from the engine, gives
// the pages SQL's sort gives (the oracle, with a window as large as the
// brand so its pages are never partial): the same contacts, keys and
// More, forward and back, under each filter, with ties of activity and
// contacts never texted, and after writes the engine catches up.
func TestContactListActivityFromMemory(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	old := store.ContactWindow
	store.ContactWindow = 1 << 20
	t.Cleanup(func() { store.ContactWindow = old })
	b, other := brand(t, db), brand(t, db)
	r := rand.New(rand.NewPCG(35, 58))
	var users []*parley.User
	// text writes a message in or out at one of a few days, so contacts
	// share an activity.
	text := func(tx *store.Tx, u *parley.User) error {
		at := parley.Time{Time: diffNow.Add(-time.Duration(r.IntN(6)) * 24 * time.Hour)}
		m := &parley.Message{BrandID: u.BrandID, UserID: u.ID, Body: "hi", Type: "CONVERSATIONAL", DateCreated: at}
		if r.IntN(2) == 0 {
			m.Direction, m.Status = "inbound", "delivered"
		} else {
			m.Direction, m.Status, m.DateSent = "outbound", "sent", &at
		}
		return tx.InsertMessage(ctx, m)
	}
	addUsers := func(k int) {
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			for range k {
				id := b
				if r.IntN(10) == 0 {
					id = other
				}
				u := randomUser(r, id, len(users))
				if len(users)%7 == 0 { // a state code whose case only SQL tells apart
					u.Location = &parley.Location{StateCode: new(pick(r, "ÉT", "Ét", "ét"))}
				}
				if err := tx.InsertUser(ctx, u); err != nil {
					return err
				}
				users = append(users, u)
				if r.IntN(3) > 0 { // a third never texted
					if err := text(tx, u); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	addUsers(200)
	seg := &parley.Segment{BrandID: b, Name: "s", Type: parley.SegmentStandard, IsActive: true,
		Criteria: []parley.SegmentCriterion{{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionContact,
			FieldName: "city", FieldType: parley.CustomString}, OperatorType: parley.OpEquals, StrFieldValue: new("Boston")}}}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateSegment(ctx, seg) }); err != nil {
		t.Fatal(err)
	}

	eng := audience.New(db, nil)
	eng.Eager = true
	queries := []store.ContactQuery{
		{}, {Consent: parley.ConsentIn}, {Consent: parley.ConsentOut}, {Consent: parley.ConsentNone},
		{StateCode: "MA"}, {StateCode: "CA", Consent: parley.ConsentIn}, {StateCode: "ÉT"},
		{Audience: store.Audience{SegmentID: seg.ID}},
		{Audience: store.Audience{Criteria: seg.Criteria}, Consent: parley.ConsentOut},
	}
	var ties, never, compared int
	for round := range 4 {
		for _, q := range queries {
			q.Sort, q.Limit = parley.SortActivity, 1+r.IntN(25)
			desc := fmt.Sprintf("round %d, %+v", round, q)
			var last *store.ContactKey
			for pages := 0; ; pages++ {
				want := samePage(t, db, eng, b, q, desc)
				compared += len(want.Keys)
				for i, k := range want.Keys {
					if k.Activity == 0 {
						never++
					} else if i > 0 && want.Keys[i-1].Activity == k.Activity {
						ties++
					}
				}
				if !want.More {
					if n := len(want.Keys); n > 0 {
						last = &want.Keys[n-1]
					}
					break
				}
				q.After = &want.Keys[len(want.Keys)-1]
			}
			// Back from the list's end to its start.
			for q.After, q.Back = last, true; q.After != nil; {
				want := samePage(t, db, eng, b, q, desc+", back")
				if !want.More {
					break
				}
				q.After = &want.Keys[0]
			}
		}
		// Writes the engine must catch up: new texts (activity moves),
		// changed and deleted contacts, new contacts.
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			for range 30 {
				u := users[r.IntN(len(users))]
				if r.IntN(2) == 0 {
					if err := text(tx, u); err != nil {
						return err
					}
					continue
				}
				if _, err := rewriteUser(ctx, tx, r, u, 6); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		addUsers(10)
		diffNow = diffNow.Add(24 * time.Hour)
	}
	if ties == 0 || never == 0 || compared < 500 {
		t.Fatalf("ties %d, never texted %d, contacts compared %d: the test tests too little", ties, never, compared)
	}
	if mem, _ := eng.Answers(); mem == 0 {
		t.Fatal("the engine answered nothing from memory")
	}
}

// samePage reads q's page from SQL and from the engine and fails unless
// they are the same.
func samePage(t *testing.T, db *store.DB, eng *audience.Engine, brandID int64, q store.ContactQuery, desc string) *store.ContactPage {
	t.Helper()
	want, err := db.ContactList(t.Context(), brandID, q)
	if err != nil {
		t.Fatalf("%s: SQL: %v", desc, err)
	}
	mem0, sql0 := eng.Answers()
	got, err := eng.ContactList(t.Context(), brandID, q)
	if err != nil {
		t.Fatalf("%s: engine: %v", desc, err)
	}
	if mem, sql := eng.Answers(); mem+sql != mem0+sql0+1 {
		t.Fatalf("%s: a page counted as %d answers, want 1", desc, mem+sql-mem0-sql0)
	}
	ids := func(p *store.ContactPage) []int64 {
		var out []int64
		for _, u := range p.Users {
			out = append(out, u.ID)
		}
		return out
	}
	if !slices.Equal(want.Keys, got.Keys) || !slices.Equal(ids(want), ids(got)) || want.More != got.More ||
		want.WindowEnd != nil || got.WindowEnd != nil {
		t.Fatalf("%s, after %+v:\nSQL    %v %v more %v end %v\nengine %v %v more %v end %v", desc, q.After,
			ids(want), want.Keys, want.More, want.WindowEnd, ids(got), got.Keys, got.More, got.WindowEnd)
	}
	return want
}
