package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// The resolution in chunks (issue #21, D16): the engine starts a campaign
// (its counts, status sending) and writes its audience a chunk of users
// a transaction, so SQLite's writer is never held for the whole audience.

// startCampaign starts c in a transaction of its own.
func startCampaign(t *testing.T, db *store.DB, c *parley.Campaign) {
	t.Helper()
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		return tx.StartCampaign(t.Context(), c, store.Audience{SegmentID: c.SegmentID})
	}); err != nil {
		t.Fatal(err)
	}
}

// resolveChunk writes the next chunk of size users of c, a transaction.
func resolveChunk(ctx context.Context, db *store.DB, c *parley.Campaign, size int) (int64, bool, error) {
	var n int64
	var done bool
	err := db.WithTx(ctx, func(tx *store.Tx) error {
		var err error
		n, done, err = tx.ResolveCampaignChunk(ctx, c, store.Audience{SegmentID: c.SegmentID}, size)
		return err
	})
	return n, done, err
}

func resolving(t *testing.T, db *store.DB, c *parley.Campaign) bool {
	t.Helper()
	cs, err := db.ResolvingCampaigns(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(cs, func(x *parley.Campaign) bool { return x.ID == c.ID })
}

// TestCampaignResolveInChunks (D16): chunks of one user write each
// consenting member's message once (ann, dee), the counts are fixed at
// the start, and until the last chunk the campaign is listed as resolving,
// its work list says so and it cannot complete even with nothing queued;
// after it, no chunk is left.
func TestCampaignResolveInChunks(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	startCampaign(t, f.db, c)
	if c.Status != parley.CampaignSending || c.Stats.Recipients != 4 || c.Stats.SkippedUnsubscribed != 2 {
		t.Errorf("started %+v", c)
	}
	if s, err := f.db.CampaignStats(ctx, c.BrandID, c.ID); err != nil || *s != (parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2}) {
		t.Errorf("stats before any chunk %+v, %v", s, err) // counted, nothing written yet
	}
	if !resolving(t, f.db, c) {
		t.Error("a started campaign is not listed as resolving")
	}
	err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		q, err := tx.CampaignQueueState(ctx, c.BrandID, c.ID)
		if err != nil || q.Queued != 0 || !q.Resolving {
			t.Errorf("queue while resolving %+v, %v; want Resolving", q, err)
		}
		if ok, err := tx.CompleteCampaign(ctx, c.BrandID, c.ID); ok || err != nil {
			t.Errorf("completed while resolving: %v, %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	chunks := 0
	for done := false; !done; {
		var n int64
		var err error
		if n, done, err = resolveChunk(ctx, f.db, c, 1); err != nil {
			t.Fatal(err)
		}
		total += n
		chunks++
		// Each chunk's messages are counted once, as it commits (on SQLite
		// by the chunk itself, migration 00054; on PostgreSQL by the
		// statement trigger): a count dropped or doubled shows here.
		if s, err := f.db.CampaignStats(ctx, c.BrandID, c.ID); err != nil || s.Queued != total {
			t.Errorf("after chunk %d (%d written so far): stats %+v, %v; want queued %d", chunks, total, s, err, total)
		}
		if chunks > 10 {
			t.Fatal("the resolution does not end")
		}
	}
	if total != 2 || chunks < 4 {
		t.Errorf("wrote %d messages in %d chunks, want 2 in at least 4 (one user each)", total, chunks)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
	if resolving(t, f.db, c) {
		t.Error("a resolved campaign is listed as resolving")
	}
	if _, _, err := resolveChunk(ctx, f.db, c, 1); !errors.Is(err, store.ErrCampaignNotResolving) {
		t.Errorf("a chunk after the last: %v, want ErrCampaignNotResolving", err)
	}
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 2})
}

// TestCampaignResolveChunkCrash (D16): a chunk rolled back (the process
// died before commit) leaves the cursor where it was; the resolution
// resumes there and messages every member once.
func TestCampaignResolveChunkCrash(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	startCampaign(t, f.db, c)
	if n, _, err := resolveChunk(ctx, f.db, c, 1); err != nil || n != 1 {
		t.Fatalf("first chunk (ann): %d, %v", n, err)
	}
	crash := errors.New("crash")
	err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		if _, _, err := tx.ResolveCampaignChunk(ctx, c, store.Audience{SegmentID: c.SegmentID}, 10); err != nil {
			t.Error(err)
		}
		return crash
	})
	if !errors.Is(err, crash) {
		t.Fatal(err)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann"}) {
		t.Errorf("after the crash: %v, want [ann]", got)
	}
	// The rolled-back chunk's count went with it.
	if s, err := f.db.CampaignStats(ctx, c.BrandID, c.ID); err != nil || s.Queued != 1 {
		t.Errorf("stats after the crash %+v, %v; want queued 1 (ann's)", s, err)
	}
	if !resolving(t, f.db, c) {
		t.Fatal("the interrupted resolution is not listed to resume")
	}
	if n, done, err := resolveChunk(ctx, f.db, c, 10); err != nil || !done || n != 1 {
		t.Errorf("resumed: %d, %v, %v; want dee's message and done", n, done, err)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 2})
}

// TestCampaignResolveChunksConcurrent (D16): two resolvers of the same
// campaign at once (two nodes) take turns by the cursor: every member is
// messaged once, and the one that finds the cursor moved stops.
func TestCampaignResolveChunksConcurrent(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	startCampaign(t, f.db, c)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var total int64
	for range 2 {
		wg.Go(func() {
			cc := *c
			for {
				n, done, err := resolveChunk(ctx, f.db, &cc, 1)
				mu.Lock()
				total += n
				mu.Unlock()
				if errors.Is(err, store.ErrCampaignNotResolving) || done {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if total != 2 {
		t.Errorf("wrote %d, want 2", total)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 2})
}

// TestCampaignResolveStopsWhenCanceled (D16): a campaign canceled while
// its audience is being written gets no further message.
func TestCampaignResolveStopsWhenCanceled(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	startCampaign(t, f.db, c)
	if n, _, err := resolveChunk(ctx, f.db, c, 1); err != nil || n != 1 {
		t.Fatalf("first chunk (ann): %d, %v", n, err)
	}
	if err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		_, _, err := tx.CancelCampaign(ctx, c.BrandID, c.ID, "canceled", nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := resolveChunk(ctx, f.db, c, 10); !errors.Is(err, store.ErrCampaignNotResolving) {
		t.Errorf("a chunk after the cancel: %v, want ErrCampaignNotResolving", err)
	}
	if resolving(t, f.db, c) {
		t.Error("a canceled campaign is listed as resolving")
	}
	if n := len(messageIDs(t, f, `campaign_id = ?`, c.ID)); n != 1 {
		t.Errorf("%d messages after the cancel, want ann's alone", n)
	}
}

// TestCampaignResolveAudienceAtStart (D16): a contact created after the
// campaign started is not in its audience, as it is not in the counts.
func TestCampaignResolveAudienceAtStart(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	startCampaign(t, f.db, c)
	late := parley.User{BrandID: f.brand, PhoneNumber: "+14155550099", MessagingConsent: ptr(true),
		DateCreated: parley.Time{Time: segNow}, DateLastUpdated: parley.Time{Time: segNow}}
	if err := f.db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertUser(ctx, &late) }); err != nil {
		t.Fatal(err)
	}
	if n, done, err := resolveChunk(ctx, f.db, c, 100); err != nil || !done || n != 2 {
		t.Errorf("resolution: %d, %v, %v; want 2 and done", n, done, err)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
}

// TestCampaignCountsOtherWriters (migration 00054): the chunks count their
// queued messages themselves; a campaign message written in any other
// status is still counted by the triggers, and a delete uncounts either.
func TestCampaignCountsOtherWriters(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if n, err := resolve(t, f.db, c); err != nil || n != 2 {
		t.Fatalf("resolve: %d, %v", n, err)
	}
	if err := f.db.Exec(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, type, date_created, campaign_id, error_code)
	VALUES (?, ?, 'outbound', 'failed', 'MARKETING', 0, ?, 'canceled')`, f.brand, f.ids["bob"], c.ID); err != nil {
		t.Fatal(err)
	}
	want := parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 2, Canceled: 1}
	if s, err := f.db.CampaignStats(ctx, c.BrandID, c.ID); err != nil || *s != want {
		t.Errorf("after a canceled message written: %+v, %v; want %+v", s, err, want)
	}
	if err := f.db.Exec(ctx, `DELETE FROM messages WHERE campaign_id = ? AND user_id IN (?, ?)`,
		c.ID, f.ids["bob"], f.ids["ann"]); err != nil {
		t.Fatal(err)
	}
	want = parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 1}
	if s, err := f.db.CampaignStats(ctx, c.BrandID, c.ID); err != nil || *s != want {
		t.Errorf("after deleting ann's and bob's: %+v, %v; want %+v", s, err, want)
	}
}
