package store_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// TestHistoryCountsConsentHourly: the consent entries of a history insert
// reach the dashboard's hourly counts (consent_hourly) in its transaction,
// a whole insert's at once (issue #35: an import's batch adds them in one
// statement, not one per contact), and only consent set true or false
// counts; a rolled-back insert counts nothing.
func TestHistoryCountsConsentHourly(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand, other := mustBrand(t, db), mustBrand(t, db)
	now := time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	ctx := t.Context()
	tru, fal := []byte("true"), []byte("false")
	entries := []parley.HistoryEntry{
		{UserID: 1, Field: parley.HistoryFieldConsent, NewValue: tru},
		{UserID: 2, Field: parley.HistoryFieldConsent, NewValue: tru},
		{UserID: 3, Field: parley.HistoryFieldConsent, OldValue: tru, NewValue: fal},
		{UserID: 4, Field: parley.HistoryFieldConsent, OldValue: tru}, // unset: neither
		{UserID: 5, Field: parley.HistoryFieldCustomData + "tier", NewValue: tru},
	}
	for i := range 5 {
		u := &parley.User{BrandID: brand, PhoneNumber: "+1415555267" + string(rune('1'+i))}
		if err := insertUser(t, db, u); err != nil {
			t.Fatal(err)
		}
		entries[i].UserID = u.ID
	}
	insert := func(brandID int64, es []parley.HistoryEntry) {
		t.Helper()
		if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertHistory(ctx, brandID, es) }); err != nil {
			t.Fatal(err)
		}
	}
	insert(brand, entries)
	insert(brand, entries[2:3])
	if err := db.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertHistory(ctx, brand, entries[:1]); err != nil {
			return err
		}
		return store.ErrNotFound
	}); err != store.ErrNotFound {
		t.Fatal(err)
	}
	since := now.Truncate(time.Hour).Add(-time.Hour)
	for _, c := range []struct {
		brand    int64
		ins, out int64
	}{{brand, 2, 2}, {other, 0, 0}} {
		ins, outs, err := db.HourlyConsent(ctx, c.brand, since, 3)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{0, c.ins, 0}; !slices.Equal(ins, want) {
			t.Errorf("brand %d opt-ins %v, want %v", c.brand, ins, want)
		}
		if want := []int64{0, c.out, 0}; !slices.Equal(outs, want) {
			t.Errorf("brand %d opt-outs %v, want %v", c.brand, outs, want)
		}
	}
}

// TestHistoryInsertInChunks: an insert larger than one statement's chunk
// stores every entry, in order, and counts every consent once.
func TestHistoryInsertInChunks(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	const n = 4001
	entries := make([]parley.HistoryEntry, n)
	for i := range entries {
		entries[i] = parley.HistoryEntry{UserID: u.ID, Field: parley.HistoryFieldConsent, NewValue: []byte("true")}
		if i%2 == 1 {
			entries[i].Field, entries[i].NewValue = parley.HistoryFieldCustomData+"n", []byte(strconv.Itoa(i))
		}
	}
	ctx := t.Context()
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertHistory(ctx, brand, entries) }); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListHistory(ctx, brand, u.ID, "", 0, n+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d entries, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Field != entries[i].Field || string(e.NewValue) != string(entries[i].NewValue) {
			t.Fatalf("entry %d: %s %s, want %s %s", i, e.Field, e.NewValue, entries[i].Field, entries[i].NewValue)
		}
	}
	ins, _, err := db.HourlyConsent(ctx, brand, got[0].OccurredAt.Truncate(time.Hour), 1)
	if err != nil {
		t.Fatal(err)
	}
	if ins[0] != (n+1)/2 {
		t.Errorf("opt-ins %d, want %d", ins[0], (n+1)/2)
	}
}
