package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// cancelFixture is a brand with n consenting users and a sending
// campaign with one queued message to each, written as a resolution does.
func cancelFixture(t *testing.T, n int) (*store.DB, int64, *parley.Campaign) {
	t.Helper()
	ctx := t.Context()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	users := make([]*parley.User, n)
	for i := range users {
		users[i] = &parley.User{BrandID: brand, PhoneNumber: fmt.Sprintf("+1415557%04d", i), MessagingConsent: ptr(true)}
	}
	seg := &parley.Segment{BrandID: brand, Name: "All", Type: parley.SegmentStandard, Source: parley.SourceUserDefined, IsActive: true}
	c := &parley.Campaign{BrandID: brand, Name: "Sale", Body: "Hi", Type: parley.TypeMarketing}
	err := db.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertUsers(ctx, users); err != nil {
			return err
		}
		if err := tx.CreateSegment(ctx, seg); err != nil {
			return err
		}
		c.SegmentID, c.SendAt = seg.ID, parley.NewTime(tx.Now())
		return tx.InsertCampaign(ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Through the resolution itself: it alone writes queued campaign
	// messages, and on SQLite it counts them itself (migration 00054).
	if written, err := resolve(t, db, c); err != nil || written != int64(n) {
		t.Fatalf("resolve: %d, %v; want %d", written, err, n)
	}
	return db, brand, c
}

// TestCampaignCancelChunks: with a callback, a cancel fails the unclaimed
// queued messages cancelChunk (1,000) at a time, each chunk once and in
// id order, every one of them and no other; without one, one UPDATE does
// the same. Claimed (sending_at set) and sent messages stay as they are.
func TestCampaignCancelChunks(t *testing.T) {
	t.Parallel()
	for _, withEach := range []bool{true, false} {
		t.Run(fmt.Sprintf("each=%v", withEach), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, brand, c := cancelFixture(t, 2500)
			// The first 7 are claimed by a sender, the next 5 handed over.
			if err := db.Exec(ctx, `UPDATE messages SET sending_at = 1 WHERE campaign_id = ? AND id IN
			(SELECT id FROM messages WHERE campaign_id = ? ORDER BY id LIMIT 12)`, c.ID, c.ID); err != nil {
				t.Fatal(err)
			}
			if err := db.Exec(ctx, `UPDATE messages SET status = 'sent', date_sent = 1 WHERE campaign_id = ? AND id IN
			(SELECT id FROM messages WHERE campaign_id = ? ORDER BY id LIMIT 5 OFFSET 7)`, c.ID, c.ID); err != nil {
				t.Fatal(err)
			}
			var chunks []int
			var seen []int64
			var each func([]*parley.Message) error
			if withEach {
				each = func(ms []*parley.Message) error {
					chunks = append(chunks, len(ms))
					for _, m := range ms {
						if m.Status != parley.StatusFailed || m.ErrorCode == nil || *m.ErrorCode != parley.ErrorCodeCanceled ||
							m.ErrorMessage == nil || *m.ErrorMessage != "why" || m.CampaignID == nil || *m.CampaignID != c.ID {
							t.Fatalf("chunk holds %+v", m)
						}
						seen = append(seen, m.ID)
					}
					return nil
				}
			}
			var got *parley.Campaign
			var changed bool
			err := db.WithTx(ctx, func(tx *store.Tx) error {
				var err error
				got, changed, err = tx.CancelCampaign(ctx, brand, c.ID, "why", each)
				return err
			})
			if err != nil || !changed || got.Status != parley.CampaignCanceled {
				t.Fatalf("cancel: %+v, %v, %v", got, changed, err)
			}
			if withEach {
				if !slices.Equal(chunks, []int{1000, 1000, 488}) {
					t.Errorf("chunks %v, want [1000 1000 488]", chunks)
				}
				if !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != 2488 {
					t.Errorf("%d messages passed, want 2488 distinct in id order", len(seen))
				}
			}
			want := parley.CampaignStats{Recipients: 2500, Queued: 7, Sent: 5, Canceled: 2488}
			if got.Stats != want {
				t.Errorf("stats %+v, want %+v", got.Stats, want)
			}
		})
	}
}

// TestCampaignCancelStates: a canceled campaign is returned unchanged
// (false), a completed one is ErrCampaignNotCancelable and a missing or
// another brand's one ErrNotFound, each changing nothing.
func TestCampaignCancelStates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, brand, c := cancelFixture(t, 3)
	cancel := func(brandID int64) (*parley.Campaign, bool, error) {
		var got *parley.Campaign
		var changed bool
		err := db.WithTx(ctx, func(tx *store.Tx) error {
			var err error
			got, changed, err = tx.CancelCampaign(ctx, brandID, c.ID, "why", nil)
			return err
		})
		return got, changed, err
	}
	if _, _, err := cancel(mustBrand(t, db)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another brand's campaign: %v, want ErrNotFound", err)
	}
	if _, changed, err := cancel(brand); err != nil || !changed {
		t.Fatalf("first cancel: %v, %v", changed, err)
	}
	if got, changed, err := cancel(brand); err != nil || changed || got.Status != parley.CampaignCanceled {
		t.Errorf("second cancel: %+v, %v, %v; want the canceled campaign, unchanged", got, changed, err)
	}
	if err := db.Exec(ctx, `UPDATE campaigns SET status = 'completed' WHERE id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cancel(brand); !errors.Is(err, store.ErrCampaignNotCancelable) {
		t.Errorf("completed campaign: %v, want ErrCampaignNotCancelable", err)
	}
	s, err := db.CampaignStats(ctx, brand, c.ID)
	if err != nil || s.Canceled != 3 || s.Queued != 0 {
		t.Errorf("stats %+v, %v; want the 3 messages canceled by the first cancel only", s, err)
	}
}

// TestCampaignCancelWaitsForClaim: a sender's claim that is committing
// while a cancel runs wins for the messages it claimed: the cancel waits
// for it and leaves them to go, and fails the rest — by one UPDATE and by
// chunks alike. On PostgreSQL the cancel is seen waiting on the claimed
// rows' locks before the claim commits, so READ COMMITTED's recheck of
// the new row versions is what is tested; SQLite has one writer, so the
// cancel runs after the claim.
func TestCampaignCancelWaitsForClaim(t *testing.T) {
	t.Parallel()
	for _, withEach := range []bool{false, true} {
		t.Run(fmt.Sprintf("each=%v", withEach), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, brand, c := cancelFixture(t, 10)
			claiming, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				done <- db.WithTx(ctx, func(tx *store.Tx) error {
					_, err := tx.SQL().ExecContext(ctx, db.Rebind(`UPDATE messages SET sending_at = 1 WHERE campaign_id = ? AND id IN
					(SELECT id FROM messages WHERE campaign_id = ? ORDER BY id LIMIT 3)`), c.ID, c.ID)
					close(claiming)
					<-release
					return err
				})
			}()
			<-claiming
			var each func([]*parley.Message) error
			if withEach {
				each = func([]*parley.Message) error { return nil }
			}
			canceled := make(chan error, 1)
			go func() {
				canceled <- db.WithTx(ctx, func(tx *store.Tx) error {
					_, _, err := tx.CancelCampaign(ctx, brand, c.ID, "why", each)
					return err
				})
			}()
			if db.Engine() == "postgres" {
				waitForLockWait(t, db, "UPDATE messages SET status")
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := <-canceled; err != nil {
				t.Fatal(err)
			}
			s, err := db.CampaignStats(ctx, brand, c.ID)
			if err != nil || s.Queued != 3 || s.Canceled != 7 {
				t.Errorf("stats %+v, %v; want the 3 claimed messages queued, 7 canceled", s, err)
			}
		})
	}
}

// waitForLockWait polls PostgreSQL until a statement starting with
// prefix waits for a lock (a test signal, not a timing assertion).
func waitForLockWait(t *testing.T, db *store.DB, prefix string) {
	t.Helper()
	for range 2000 {
		var n int
		if err := db.Writer().QueryRowContext(t.Context(), `SELECT count(*) FROM pg_stat_activity
		WHERE wait_event_type = 'Lock' AND ltrim(query) LIKE $1`, prefix+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no statement %q ever waited for a lock", prefix)
}
