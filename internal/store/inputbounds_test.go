package store_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley"
)

// TestInputBoundsMigration: migration 00028 (issue #31) gives a campaign
// whose send_at was stored past year 9999 the last instant of year 9999,
// so it can be read again; it adds messages.body_truncated, and undone it
// takes the column away again, on both engines.
func TestInputBoundsMigration(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if err := f.db.MigrateDownTo(ctx, 27); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Exec(ctx, `SELECT body_truncated FROM messages`); err == nil {
		t.Error("body_truncated is still there after 00028 is undone")
	}
	// 10000-01-01T23:58:59Z, as 9999-12-31T23:59:59-23:59 was stored.
	year10000 := time.Date(10000, 1, 1, 23, 58, 59, 0, time.UTC).UnixMicro()
	if err := f.db.Exec(ctx, `UPDATE campaigns SET send_at = ? WHERE id = ?`, year10000, c.ID); err != nil {
		t.Fatal(err)
	}
	// Read as 00027 stored it (FindCampaign reads the columns of later
	// migrations too: 00030's replies, issue #32).
	if err := f.db.Exec(ctx, `SELECT send_at FROM campaigns WHERE id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := f.db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := f.db.FindCampaign(ctx, f.brand, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC); !got.SendAt.Equal(want) {
		t.Errorf("send_at after 00028 = %v, want %v", got.SendAt, want)
	}
	if _, err := got.SendAt.MarshalJSON(); err != nil {
		t.Error(err)
	}
	var n int
	if err := f.db.QueryRow(ctx, `SELECT count(*) FROM messages WHERE body_truncated = FALSE`).Scan(&n); err != nil {
		t.Errorf("body_truncated after 00028 is redone: %v", err)
	}
}
