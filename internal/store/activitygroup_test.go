package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// activityLock is the advisory lock that writers of a contact's activity
// take on PostgreSQL (migration 00009).
const activityLock = 1600900916

// TestAPIWritesDoNotWaitForActivity: while a campaign's batch holds
// PostgreSQL's activity lock, a message's status writes (a send's outcome,
// a carrier's report) wait for it, and the API's writes must not wait with
// them (issue #35: POST /messages p99 < 50 ms while a campaign drains).
// Before WithActivityGroupTx, a status write shared its group commit with
// the API's writes: with both committers blocked behind the lock, a create
// waited for the batch to commit.
func TestAPIWritesDoNotWaitForActivity(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("PostgreSQL's activity lock (PARLEY_TEST_POSTGRES_URL)")
	}
	t.Parallel()
	ctx := t.Context()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)

	// Messages just sent, one per committer, which a carrier's reports
	// move to delivered.
	var sent []int64
	for i := range db.Committers() {
		u := &parley.User{BrandID: brand, PhoneNumber: "+1415555" + string(rune('1'+i)) + "000"}
		if err := insertUser(t, db, u); err != nil {
			t.Fatal(err)
		}
		m := &parley.Message{BrandID: brand, UserID: u.ID, Direction: parley.DirectionOutbound, Status: parley.StatusQueued,
			Body: "hi", Type: parley.TypeTransactional}
		err := db.WithTx(ctx, func(tx *store.Tx) error {
			m.DateCreated = parley.Time{Time: tx.Now()}
			if err := tx.InsertMessage(ctx, m); err != nil {
				return err
			}
			_, err := tx.TransitionMessage(ctx, brand, m.ID, store.Transition{Status: parley.StatusSent, At: tx.Now()})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m.ID)
	}

	// A campaign's batch, mid-write: it holds the lock until released.
	release := make(chan struct{})
	holding := make(chan error, 1)
	go func() {
		holding <- db.WithTx(context.Background(), func(tx *store.Tx) error {
			if err := tx.AdvisoryLock(ctx, activityLock); err != nil {
				return err
			}
			holding <- nil
			<-release
			return nil
		})
	}()
	if err := <-holding; err != nil {
		t.Fatal(err)
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	// One report per committer, each waiting for the lock in a group of
	// its own.
	reported := make(chan error, len(sent))
	for i, id := range sent {
		go func() {
			reported <- db.WithActivityGroupTx(context.Background(), parley.Origin{Source: parley.SourceCarrier},
				func(ctx context.Context, tx *store.Tx) error {
					_, err := tx.TransitionMessage(ctx, brand, id, store.Transition{Status: parley.StatusDelivered, At: tx.Now()})
					return err
				})
		}()
		waitForLockWaiters(t, db, i+1)
	}

	created := make(chan error, 1)
	go func() {
		created <- db.WithGroupTx(context.Background(), parley.Origin{Source: parley.SourceAPI}, func(ctx context.Context, tx *store.Tx) error {
			u := &parley.User{BrandID: brand, PhoneNumber: "+14155559999",
				DateCreated: parley.Time{Time: tx.Now()}, DateLastUpdated: parley.Time{Time: tx.Now()}}
			return tx.InsertUser(ctx, u)
		})
	}()
	// Not a timing assertion: without the lanes the create waits until
	// the lock is released, which this test does only after the wait (a
	// group gives up after 10 s, so the wait is shorter).
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("create beside the reports: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an API write waited for the activity lock that a campaign's batch holds")
	}
	select {
	case err := <-reported:
		t.Fatalf("a report wrote while the lock was held: %v", err)
	default:
	}

	released = true
	close(release)
	if err := <-holding; err != nil {
		t.Fatal(err)
	}
	for range sent {
		if err := <-reported; err != nil {
			t.Fatalf("report after the batch committed: %v", err)
		}
	}
}

// waitForLockWaiters waits until n transactions wait for the activity lock.
func waitForLockWaiters(t *testing.T, db *store.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var waiting int
		err := db.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND objid = ? AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`, activityLock).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d writes wait for the activity lock", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
