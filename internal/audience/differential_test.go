package audience_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

// The differential test (issue #34): random criteria over random contacts
// through the SQL path (the oracle) and the engine give the same members,
// and the same error, on the engine under test (TestMain: SQLite, and
// PostgreSQL with PARLEY_TEST_POSTGRES_URL). Between rounds the contacts
// change, so the engine's catch-up is tested with its evaluation.

func TestMain(m *testing.M) { apitest.Main(m) }

var diffNow = time.Date(2025, 12, 28, 12, 0, 0, 0, time.UTC)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := app.OpenDB(context.Background(), apitest.MigratedDatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.Now = func() time.Time { return diffNow }
	return db
}

func brand(t *testing.T, db *store.DB) int64 {
	t.Helper()
	b := &parley.Brand{Name: "B", PhoneNumber: "+14155550100"}
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.CreateBrand(t.Context(), b) }); err != nil {
		t.Fatal(err)
	}
	return b.ID
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func maybe(r *rand.Rand, s string) *string {
	if r.IntN(4) == 0 {
		return nil
	}
	return &s
}

var (
	texts   = []string{"Ann", "ann", "ANN", "Annabel", "bob", "Zoë", "ÀBc", "àbc", "", "gold", "Gold", "GOLDEN", "silver", "true", "FALSE", "x", "ab\"c", `a\b`, "Ünal", "1", "0"}
	dates   = []string{"12/01/2025", "2025-12-27", "2024-02-29", "02/29/2024", "1/2/2020", "12/28/1990", "2025-12-28", "2026-01-02", "01/03/2000", "hello", "", "2025-12-31"}
	keys    = []string{"age", "score", "tier", "tags", "vip", "renewal", "note"}
	numbers = []string{"0", "1", "1.0", "2.5", "-3", "45", "30", "100", "1e2", "0.5"}
)

func randomValue(r *rand.Rand) any {
	switch r.IntN(9) {
	case 0, 1:
		return pick(r, texts...)
	case 2, 3:
		return json.RawMessage(pick(r, numbers...))
	case 4:
		return pick(r, dates...)
	case 5:
		return r.IntN(2) == 0
	case 6:
		var items []any
		for range r.IntN(4) {
			if r.IntN(2) == 0 {
				items = append(items, pick(r, texts...))
			} else {
				items = append(items, json.RawMessage(pick(r, numbers...)))
			}
		}
		if items == nil {
			items = []any{}
		}
		return items
	case 7:
		return nil
	}
	return map[string]any{"a": 1}
}

func randomUser(r *rand.Rand, brandID int64, n int) *parley.User {
	u := &parley.User{BrandID: brandID, PhoneNumber: fmt.Sprintf("+1415555%04d", n),
		FirstName: maybe(r, pick(r, texts...)), LastName: maybe(r, pick(r, texts...)),
		EmailAddress: maybe(r, pick(r, "a@example.com", "B@Example.com", "")), DateOfBirth: maybe(r, pick(r, dates...))}
	if r.IntN(3) > 0 {
		u.MessagingConsent = new(bool)
		*u.MessagingConsent = r.IntN(2) == 0
	}
	if r.IntN(3) > 0 {
		u.Location = &parley.Location{PostalCode: maybe(r, pick(r, "02108", "94105", "")), City: maybe(r, pick(r, "Boston", "boston", "")),
			County: maybe(r, "Suffolk"), State: maybe(r, pick(r, "Massachusetts", "California")),
			StateCode: maybe(r, pick(r, "MA", "ma", "CA", "")), TimeZone: maybe(r, pick(r, "America/New_York", "America/Los_Angeles"))}
	}
	if r.IntN(5) > 0 {
		m := map[string]any{}
		for range r.IntN(5) {
			m[pick(r, keys...)] = randomValue(r)
		}
		u.CustomData, _ = json.Marshal(m)
	}
	u.DateCreated = parley.Time{Time: diffNow.Add(-time.Duration(r.IntN(800*24)) * time.Hour)}
	u.DateLastUpdated = u.DateCreated
	return u
}

// rewriteUser gives u new random data (its id, number and creation
// kept), deleted one time in deletedOneIn, and stores it.
func rewriteUser(ctx context.Context, tx *store.Tx, r *rand.Rand, u *parley.User, deletedOneIn int) (*parley.User, error) {
	nu := randomUser(r, u.BrandID, 0)
	nu.ID, nu.PhoneNumber, nu.DateCreated = u.ID, u.PhoneNumber, u.DateCreated
	nu.IsDeleted = r.IntN(deletedOneIn) == 0
	return nu, tx.UpdateUser(ctx, nu)
}

var opsByType = map[int64][]int64{
	parley.CustomInteger: {1, 2, 3, 4, 5, 6, 10, 11},
	parley.CustomFloat:   {1, 2, 3, 4, 5, 6, 10, 11},
	parley.CustomString:  {1, 2, 7, 8, 9, 10, 11},
	parley.CustomList:    {1, 2, 7, 8, 10, 11},
	parley.CustomBoolean: {1, 2, 10, 11},
	parley.CustomDate:    {1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14},
}

func randomCriterion(r *rand.Rand, segs []int64) parley.SegmentCriterion {
	var c parley.SegmentCriterion
	c.AndGroupNum = int64(r.IntN(3))
	switch d := r.IntN(20); {
	case d < 8:
		names := []string{"first_name", "last_name", "email_address", "phone_number", "date_of_birth", "messaging_consent",
			"postal_code", "city", "county", "state", "state_code", "time_zone", "date_created"}
		c.Attribute.DimensionType, c.Attribute.FieldName = parley.DimensionContact, pick(r, names...)
		c.Attribute.FieldType = parley.ContactFieldTypes[c.Attribute.FieldName]
	case d < 16:
		c.Attribute.DimensionType, c.Attribute.FieldName = parley.DimensionCustomData, pick(r, keys...)
		c.Attribute.FieldType = int64(1 + r.IntN(6))
	case d < 19 || len(segs) == 0:
		names := []string{"last_inbound_at", "last_outbound_at", "last_delivered_at", "inbound_count", "outbound_count"}
		c.Attribute.DimensionType, c.Attribute.FieldName = parley.DimensionActivity, pick(r, names...)
		c.Attribute.FieldType = parley.ActivityFieldTypes[c.Attribute.FieldName]
	default:
		c.Attribute.DimensionType, c.Attribute.FieldType = parley.DimensionSegment, parley.CustomInteger
		c.OperatorType = int64(1 + r.IntN(2))
		c.IntFieldValue = new(int64)
		*c.IntFieldValue = pick(r, segs...)
		return c
	}
	c.OperatorType = pick(r, opsByType[c.Attribute.FieldType]...)
	switch c.Attribute.FieldType {
	case parley.CustomInteger:
		c.IntFieldValue = new(int64)
		*c.IntFieldValue = pick[int64](r, 0, 1, 2, 30, 45, -3, 100)
	case parley.CustomFloat:
		c.FloatFieldValue = new(float64)
		*c.FloatFieldValue = pick(r, 0, 1, 2.5, 10, 0.5, 45)
	case parley.CustomString, parley.CustomList:
		c.StrFieldValue = new(string)
		*c.StrFieldValue = pick(r, append(texts, "go", "LD", "an", "a", "Bo", "2", "0.5", " 2 ")...)
	case parley.CustomBoolean:
		c.BoolFieldValue = new(bool)
		*c.BoolFieldValue = r.IntN(2) == 0
	case parley.CustomDate:
		if c.OperatorType >= parley.OpInLastDays {
			c.IntFieldValue = new(int64)
			*c.IntFieldValue = pick[int64](r, 0, 1, 3, 7, 30, 365, 366, 400, 100000)
		} else {
			c.DateFieldValue = new(string)
			*c.DateFieldValue = pick(r, "2025-12-28", "2025-12-27", "2024-02-29", "1990-12-28", "2025-01-01", "2000-01-03", "9999-12-31", "0001-01-01")
		}
	}
	if r.IntN(40) == 0 { // refused the same way by both paths
		c.StrFieldValue, c.IntFieldValue, c.DateFieldValue, c.BoolFieldValue, c.FloatFieldValue = nil, nil, nil, nil, nil
	}
	return c
}

func randomCriteria(r *rand.Rand, segs []int64) []parley.SegmentCriterion {
	var cs []parley.SegmentCriterion
	for range r.IntN(5) {
		cs = append(cs, randomCriterion(r, segs))
	}
	return cs
}

func TestDifferential(t *testing.T) {
	ctx := t.Context()
	db := openDB(t)
	b, other := brand(t, db), brand(t, db)
	r := rand.New(rand.NewPCG(34, 14))
	var users []*parley.User
	addUsers := func(k int) {
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			for range k {
				id := b
				if r.IntN(10) == 0 {
					id = other
				}
				u := randomUser(r, id, len(users))
				if err := tx.InsertUser(ctx, u); err != nil {
					return err
				}
				users = append(users, u)
				for range r.IntN(3) {
					at := parley.Time{Time: diffNow.Add(-time.Duration(r.IntN(400*24)) * time.Hour)}
					m := &parley.Message{BrandID: u.BrandID, UserID: u.ID, Body: "hi", Type: "CONVERSATIONAL", DateCreated: at}
					if r.IntN(2) == 0 {
						m.Direction, m.Status = "inbound", "delivered"
					} else {
						m.Direction, m.Status, m.DateSent = "outbound", pick(r, "sent", "delivered"), &at
						if m.Status == "delivered" {
							m.DateDelivered = &at
						}
					}
					if err := tx.InsertMessage(ctx, m); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	addUsers(300)
	var segs []int64
	for i, typ := range []string{parley.SegmentStandard, parley.SegmentStandard, parley.SegmentPointInTime} {
		s := &parley.Segment{BrandID: b, Name: fmt.Sprint("s", i), Type: typ, IsActive: true, Criteria: randomCriteria(r, segs)}
		if _, err := db.ResolveAudience(ctx, b, store.Audience{Criteria: s.Criteria}); err != nil {
			s.Criteria = nil
		}
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateSegment(ctx, s); err != nil {
				return err
			}
			if typ == parley.SegmentPointInTime {
				_, err := tx.FreezeSegment(ctx, b, s.ID)
				return err
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s.ID)
	}

	eng := audience.New(db, nil)
	eng.Eager = true
	members := 0
	for round := range 8 {
		for range 60 {
			a := store.Audience{Criteria: randomCriteria(r, segs)}
			if r.IntN(10) == 0 {
				a = store.Audience{SegmentID: pick(r, segs...)}
			}
			agree(t, db, eng, b, a)
			n, _ := db.CountAudience(ctx, b, a)
			members += int(n)
		}
		// Writes the engine must catch up: changed, deleted and new users.
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			for range 40 {
				if _, err := rewriteUser(ctx, tx, r, users[r.IntN(len(users))], 8); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		addUsers(10)
		diffNow = diffNow.Add(time.Duration(round) * 7 * time.Hour)
	}
	if members == 0 {
		t.Fatal("no criteria selected anyone: the test tests nothing")
	}
}

// agree demands the same error, or the same count and members, from both
// paths, and the same page after a cursor.
func agree(t *testing.T, db *store.DB, eng *audience.Engine, brandID int64, a store.Audience) {
	t.Helper()
	ctx := t.Context()
	desc, _ := json.Marshal(a)
	want, werr := db.CountAudience(ctx, brandID, a)
	got, gerr := eng.Count(ctx, brandID, a)
	if fmt.Sprint(werr) != fmt.Sprint(gerr) || want != got {
		t.Fatalf("%s: SQL %d, %v; engine %d, %v", desc, want, werr, got, gerr)
	}
	if werr != nil {
		return
	}
	var wids, gids []int64
	if err := db.EachAudienceUser(ctx, brandID, a, func(u *parley.User) error { wids = append(wids, u.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := eng.EachUser(ctx, brandID, a, func(u *parley.User) error { gids = append(gids, u.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wids, gids) {
		t.Fatalf("%s:\nSQL    %v\nengine %v", desc, wids, gids)
	}
	if len(wids) > 2 {
		after := wids[len(wids)/2]
		wp, err1 := db.AudienceUsers(ctx, brandID, a, after, 3)
		gp, err2 := eng.Users(ctx, brandID, a, after, 3)
		if err1 != nil || err2 != nil || len(wp) != len(gp) {
			t.Fatalf("%s: page after %d: SQL %d users, %v; engine %d, %v", desc, after, len(wp), err1, len(gp), err2)
		}
		for i := range wp {
			if wp[i].ID != gp[i].ID {
				t.Fatalf("%s: page after %d differs at %d", desc, after, i)
			}
		}
	}
}
