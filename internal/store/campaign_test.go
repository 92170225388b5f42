package store_test

import (
	"errors"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// mustCampaign stores a scheduled MARKETING campaign of the brand over
// segment seg.
func mustCampaign(t *testing.T, db *store.DB, brand, seg int64) *parley.Campaign {
	t.Helper()
	c := &parley.Campaign{BrandID: brand, Name: "Sale", SegmentID: seg, Body: "20% off today",
		MediaItemUUIDs: []string{"m1"}, Type: parley.TypeMarketing, SendAt: parley.NewTime(segNow)}
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.InsertCampaign(t.Context(), c) }); err != nil {
		t.Fatal(err)
	}
	return c
}

func resolve(t *testing.T, db *store.DB, c *parley.Campaign) (int64, error) {
	t.Helper()
	var n int64
	err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		var err error
		n, err = tx.ResolveCampaign(t.Context(), c, store.Audience{SegmentID: c.SegmentID})
		return err
	})
	return n, err
}

// campaignMessages returns the names of the users the campaign's messages
// go to, sorted, checking each message's columns.
func campaignMessages(t *testing.T, f *segFixture, c *parley.Campaign) []string {
	t.Helper()
	rows, err := f.db.Writer().QueryContext(t.Context(), f.db.Rebind(`SELECT user_id, brand_id, direction, status, body,
	media_item_uuids, type, scheduled_at IS NULL FROM messages WHERE campaign_id = ?`), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var user, brand int64
		var dir, status, body, media, typ string
		var unscheduled bool
		if err := rows.Scan(&user, &brand, &dir, &status, &body, &media, &typ, &unscheduled); err != nil {
			t.Fatal(err)
		}
		if brand != c.BrandID || dir != "outbound" || status != "queued" || body != c.Body || media != `["m1"]` ||
			typ != c.Type || !unscheduled {
			t.Errorf("message to %d: %d %s %s %q %s %s scheduled_at null %v", user, brand, dir, status, body, media, typ, unscheduled)
		}
		names = append(names, f.byID[user])
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func wantStats(t *testing.T, db *store.DB, c *parley.Campaign, want parley.CampaignStats) {
	t.Helper()
	s, err := db.CampaignStats(t.Context(), c.BrandID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if *s != want {
		t.Errorf("stats %+v, want %+v", *s, want)
	}
	if sum := s.SkippedUnsubscribed + s.SkippedFrequencyCap + s.Queued + s.Sent + s.Delivered + s.Undelivered +
		s.Failed + s.Canceled; sum != s.Recipients {
		t.Errorf("stats %+v do not add up to recipients", *s)
	}
}

// TestCampaignResolve: one queued message per consenting member (ann, dee),
// none to bob (consent false), cy (null), eve (deleted) or zed (the other
// brand's); the counts are stored and the campaign is sending.
func TestCampaignResolve(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	n, err := resolve(t, f.db, c)
	if err != nil || n != 2 {
		t.Fatalf("resolve: %d, %v; want 2", n, err)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
	got, err := f.db.FindCampaign(t.Context(), f.brand, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != parley.CampaignSending || got.StartedAt == nil || !got.StartedAt.Equal(segNow) ||
		got.Stats.Recipients != 4 || got.Stats.SkippedUnsubscribed != 2 || got.Stats.Queued != 2 ||
		got.Stats.SkippedFrequencyCap != c.Stats.SkippedFrequencyCap || got.Status != c.Status {
		t.Errorf("campaign after resolution %+v (in memory %+v)", got, c)
	}
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 2})
}

// TestCampaignResolveOnce: a second resolution after the first committed
// (a retry, another node) finds the campaign sending; one that gets past
// that check (its status put back) writes nothing either: the unique key
// (campaign_id, user_id) refuses a second message to anyone.
func TestCampaignResolveOnce(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if n, err := resolve(t, f.db, c); err != nil || n != 2 {
		t.Fatalf("first resolution: %d, %v", n, err)
	}
	if n, err := resolve(t, f.db, c); !errors.Is(err, store.ErrCampaignNotScheduled) || n != 0 {
		t.Errorf("second resolution: %d, %v; want ErrCampaignNotScheduled", n, err)
	}
	if err := f.db.Exec(ctx, `UPDATE campaigns SET status = 'scheduled' WHERE id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := resolve(t, f.db, c); err != nil || n != 0 {
		t.Errorf("resolution past the status check: %d, %v; want 0 written", n, err)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
	err := f.db.Exec(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, type, date_created, campaign_id)
	VALUES (?, ?, 'outbound', 'queued', 'MARKETING', 0, ?)`, f.brand, f.ids["ann"], c.ID)
	if err == nil {
		t.Error("a second message of the campaign to ann was stored")
	}
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Queued: 2})
}

// TestCampaignResolveRollsBack: a crash before commit leaves no message
// and the campaign scheduled, so resolving again writes them all.
func TestCampaignResolveRollsBack(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	crash := errors.New("crash")
	err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		if n, err := tx.ResolveCampaign(ctx, c, store.Audience{SegmentID: c.SegmentID}); err != nil || n != 2 {
			t.Errorf("resolve: %d, %v", n, err)
		}
		return crash
	})
	if !errors.Is(err, crash) {
		t.Fatal(err)
	}
	if got := campaignMessages(t, f, c); len(got) != 0 {
		t.Errorf("messages after rollback: %v", got)
	}
	if got, _ := f.db.FindCampaign(ctx, f.brand, c.ID); got.Status != parley.CampaignScheduled || got.StartedAt != nil {
		t.Errorf("campaign after rollback %+v", got)
	}
	if n, err := resolve(t, f.db, c); err != nil || n != 2 {
		t.Errorf("resolution after the crash: %d, %v", n, err)
	}
}

// TestCampaignResolveConcurrent: two resolutions at once, as on two nodes,
// write each member's message once; the later waits for the earlier.
func TestCampaignResolveConcurrent(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	var wg sync.WaitGroup
	written := make([]int64, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			cc := *c
			written[i], errs[i] = resolve(t, f.db, &cc)
		})
	}
	wg.Wait()
	slices.Sort(written)
	if written[0] != 0 || written[1] != 2 {
		t.Errorf("written %v, want one resolution to write 2 and the other none", written)
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, store.ErrCampaignNotScheduled) {
			t.Errorf("resolution: %v", err)
		}
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann", "dee"}) {
		t.Errorf("messaged %v, want [ann dee]", got)
	}
}

// TestCampaignPointInTime: a POINT IN TIME segment's frozen members are
// the audience; those deleted since drop out, those added since are not in.
func TestCampaignPointInTime(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	seg := mustSegment(t, f, f.brand, parley.SegmentPointInTime) // ann bob cy dee
	fay := &parley.User{BrandID: f.brand, PhoneNumber: "+14155550009", MessagingConsent: ptr(true)}
	if err := insertUser(t, f.db, fay); err != nil {
		t.Fatal(err)
	}
	dee := f.userOf["dee"]
	dee.IsDeleted = true
	if err := f.db.WithTx(ctx, func(tx *store.Tx) error { return tx.UpdateUser(ctx, dee) }); err != nil {
		t.Fatal(err)
	}
	c := mustCampaign(t, f.db, f.brand, seg)
	if n, err := resolve(t, f.db, c); err != nil || n != 1 {
		t.Fatalf("resolve: %d, %v; want 1", n, err)
	}
	if got := campaignMessages(t, f, c); !slices.Equal(got, []string{"ann"}) {
		t.Errorf("messaged %v, want [ann]", got)
	}
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 3, SkippedUnsubscribed: 2, Queued: 1})
}

// TestCampaignStats: the stats follow the messages' statuses; a canceled
// message counts as canceled, not failed; lookups are per brand.
func TestCampaignStats(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if _, err := resolve(t, f.db, c); err != nil {
		t.Fatal(err)
	}
	ids := map[int64]int64{}
	if err := f.db.Exec(ctx, `UPDATE messages SET scheduled_at = 1 WHERE campaign_id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	ms, err := f.db.ListMessages(ctx, f.brand, 0, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Type == parley.TypeMarketing {
			ids[m.UserID] = m.ID
		}
	}
	move := func(user int64, tr store.Transition) {
		t.Helper()
		if err := f.db.WithTx(ctx, func(tx *store.Tx) error {
			_, err := tx.TransitionMessage(ctx, f.brand, ids[user], tr)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	move(f.ids["ann"], store.Transition{Status: parley.StatusSent, At: segNow})
	move(f.ids["ann"], store.Transition{Status: parley.StatusDelivered, At: segNow})
	move(f.ids["dee"], store.Transition{Status: parley.StatusFailed, ErrorCode: ptr(parley.ErrorCodeCanceled)})
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Delivered: 1, Canceled: 1})

	if _, err := f.db.CampaignStats(ctx, f.other, c.ID); err != store.ErrNotFound {
		t.Errorf("another brand's stats: %v, want ErrNotFound", err)
	}
	if _, err := f.db.FindCampaign(ctx, f.other, c.ID); err != store.ErrNotFound {
		t.Errorf("another brand's campaign: %v, want ErrNotFound", err)
	}
	c2 := mustCampaign(t, f.db, f.brand, c.SegmentID)
	list, err := f.db.ListCampaigns(ctx, f.brand, 0, 10)
	if err != nil || len(list) != 2 || list[0].ID != c2.ID || list[1].ID != c.ID {
		t.Fatalf("list: %v, %v", list, err)
	}
	if l := list[1]; l.Name != c.Name || l.Body != c.Body || !slices.Equal(l.MediaItemUUIDs, c.MediaItemUUIDs) ||
		l.SegmentID != c.SegmentID || l.Type != c.Type || !l.SendAt.Equal(c.SendAt.Time) || !l.DateCreated.Equal(c.DateCreated.Time) {
		t.Errorf("listed %+v, stored %+v", l, c)
	}
	if page, err := f.db.ListCampaigns(ctx, f.brand, c2.ID, 10); err != nil || len(page) != 1 || page[0].ID != c.ID {
		t.Errorf("page before %d: %v, %v", c2.ID, page, err)
	}
	if other, err := f.db.ListCampaigns(ctx, f.other, 0, 10); err != nil || len(other) != 0 {
		t.Errorf("other brand's list: %v, %v", other, err)
	}
}

// TestCampaignScale measures, never asserts: with SEGPERF_N=100000 it seeds
// that many consenting users and logs how long resolving a campaign over
// all of them takes (issue #21: ≤ 2 s on SQLite, ≤ 3 s on PostgreSQL).
// Run it alone: SEGPERF_N=100000 go test ./internal/store -run TestCampaignScale -v
func TestCampaignScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SEGPERF_N"))
	if n == 0 {
		t.Skip()
	}
	db := mustOpenDB(t)
	ctx := t.Context()
	brand := mustBrand(t, db)
	var err error
	if apitest.Engine() == "postgres" {
		err = db.Exec(ctx, `INSERT INTO users (brand_id, phone_number, first_name, messaging_consent, is_deleted, date_created, date_last_updated)
		SELECT ?, '+1' || (2000000000 + x), 'n' || x, TRUE, FALSE, 1700000000000000 + x, 1700000000000000
		FROM generate_series(1::bigint, ?) x`, brand, n)
		db.Exec(ctx, `ANALYZE users`)
	} else {
		err = db.Exec(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
		INSERT INTO users (brand_id, phone_number, first_name, messaging_consent, is_deleted, date_created, date_last_updated)
		SELECT ?, '+1' || (2000000000 + x), 'n' || x, 1, 0, 1700000000000000 + x, 1700000000000000 FROM c`, n, brand)
		db.Exec(ctx, `ANALYZE`)
	}
	if err != nil {
		t.Fatal(err)
	}
	seg := &parley.Segment{BrandID: brand, Name: "all", Type: parley.SegmentStandard, IsActive: true}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateSegment(ctx, seg) }); err != nil {
		t.Fatal(err)
	}
	c := mustCampaign(t, db, brand, seg.ID)
	start := time.Now()
	written, err := resolve(t, db, c)
	took := time.Since(start)
	if err != nil || written != int64(n) {
		t.Fatalf("resolve: %d, %v", written, err)
	}
	t.Logf("%s: resolved a campaign over %d consenting contacts (%d messages) in %v", apitest.Engine(), n, written, took)
	s := time.Now()
	stats, err := db.CampaignStats(ctx, brand, c.ID)
	t.Logf("stats %+v in %v (%v)", stats, time.Since(s), err)
}
