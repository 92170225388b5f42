package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// handOverFixture is a brand with one consenting user and two queued
// MARKETING messages to them.
func handOverFixture(t *testing.T) (db *store.DB, brand int64, msgs [2]int64) {
	t.Helper()
	db = mustOpenDB(t)
	brand = mustBrand(t, db)
	yes := true
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671", MessagingConsent: &yes}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	for i := range msgs {
		m := &parley.Message{BrandID: brand, UserID: u.ID, Direction: parley.DirectionOutbound, Status: parley.StatusQueued,
			Body: "Sale", MediaItemUUIDs: []string{}, Type: parley.TypeMarketing}
		if err := db.WithTx(t.Context(), func(tx *store.Tx) error {
			m.DateCreated = parley.Time{Time: tx.Now()}
			return tx.InsertMessage(t.Context(), m)
		}); err != nil {
			t.Fatal(err)
		}
		msgs[i] = m.ID
	}
	return db, brand, msgs
}

// TestHandOverCapAcrossTransactions: two transactions hand over a
// message each to the same contact, at a cap of 1, the second while the
// first has not committed: the second waits for the first and counts its
// message in flight (issue #31 item 5, D17). On PostgreSQL the wait is
// the recipients' row lock; without it the second would count nothing.
func TestHandOverCapAcrossTransactions(t *testing.T) {
	db, brand, msgs := handOverFixture(t)
	capOf := func(tx *store.Tx) store.HandOver {
		return store.HandOver{Cap: &store.HandOverCap{Since: tx.Now().Add(-24 * time.Hour), Max: 1}}
	}
	handed := make(chan []int64, 2)
	first, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		err := db.WithTx(t.Context(), func(tx *store.Tx) error {
			got, err := tx.HandOverMessages(t.Context(), brand, msgs[:1], capOf(tx))
			if err == nil {
				handed <- got
				close(first)
				<-release // still uncommitted while the second starts
			}
			return err
		})
		if err != nil {
			t.Error(err)
		}
	})
	<-first
	wg.Go(func() {
		err := db.WithTx(t.Context(), func(tx *store.Tx) error {
			got, err := tx.HandOverMessages(t.Context(), brand, msgs[1:], capOf(tx))
			handed <- got
			return err
		})
		if err != nil {
			t.Error(err)
		}
	})
	time.Sleep(200 * time.Millisecond) // the second reaches its statement
	close(release)
	wg.Wait()
	close(handed)
	var all []int64
	for got := range handed {
		all = append(all, got...)
	}
	if len(all) != 1 || all[0] != msgs[0] {
		t.Fatalf("handed over %v, want only %d: the contact is at the cap once the first is in flight", all, msgs[0])
	}
	err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		why, err := tx.RefusedHandOvers(t.Context(), brand, msgs[1:])
		if err == nil && why[msgs[1]] != store.RefusedCapped {
			t.Errorf("refusal %v, want RefusedCapped", why[msgs[1]])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHandOverConsent: a contact who withdrew consent gets no hand-over,
// and the refusal says so (issue #31 item 12, D8).
func TestHandOverConsent(t *testing.T) {
	db, brand, msgs := handOverFixture(t)
	err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		_, err := tx.SQL().ExecContext(t.Context(), db.Rebind(`UPDATE users SET messaging_consent = FALSE WHERE brand_id = ?`), brand)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.WithTx(t.Context(), func(tx *store.Tx) error {
		got, err := tx.HandOverMessages(t.Context(), brand, msgs[:], store.HandOver{})
		if err != nil {
			return err
		}
		if len(got) != 0 {
			t.Errorf("handed over %v to a contact without consent", got)
		}
		why, err := tx.RefusedHandOvers(t.Context(), brand, msgs[:])
		if why[msgs[0]] != store.RefusedUnsubscribed || why[msgs[1]] != store.RefusedUnsubscribed {
			t.Errorf("refusals %v, want RefusedUnsubscribed", why)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := db.Deliverable(t.Context(), brand, msgs[0]); err != nil || ok {
		t.Errorf("Deliverable = %v, %v; want false", ok, err)
	}
}

// TestHandOverMigrationDown: migration 00026 goes down and up again.
func TestHandOverMigrationDown(t *testing.T) {
	db, _, _ := handOverFixture(t)
	ctx := t.Context()
	if err := db.MigrateDownTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, `UPDATE messages SET handed_at = 1`); err == nil {
		t.Error("messages.handed_at is still there after 00026 went down")
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM messages WHERE handed_at IS NULL`).Scan(&n); err != nil || n != 2 {
		t.Errorf("after 00026 up again: %d messages, %v", n, err)
	}
	if err := db.QueryRow(ctx, `SELECT count(*) FROM campaign_counts WHERE capped <> 0`).Scan(&n); err != nil {
		t.Errorf("campaign_counts.capped after 00026 up again: %v", err)
	}
}
