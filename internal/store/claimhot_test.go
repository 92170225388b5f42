package store_test

import (
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestCampaignClaimIsHOT: on PostgreSQL a batch's claim (sending_at,
// attempts: columns no index reads) rewrites each message on its own page,
// a HOT update that writes no index entry (00060's fillfactor on
// messages; issue #35, the PostgreSQL drain). A resolution fills pages
// only to the fillfactor, so every claimed row's new version fits beside
// the old; at 100 % only the rows of the table's last page would.
func TestCampaignClaimIsHOT(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("HOT updates and fillfactor are PostgreSQL's")
	}
	t.Parallel()
	db := mustOpenDB(t)
	ctx := t.Context()
	brand := mustBrand(t, db)
	const n, batch = 2000, 500 // 2,000 messages fill some 40 pages at 100 %
	if err := db.Exec(ctx, `INSERT INTO users (brand_id, phone_number, first_name, messaging_consent, is_deleted, date_created, date_last_updated)
		SELECT ?, '+1' || (2000000000 + x), 'n' || x, TRUE, FALSE, 1700000000000000 + x, 1700000000000000
		FROM generate_series(1::bigint, ?) x`, brand, n); err != nil {
		t.Fatal(err)
	}
	seg := &parley.Segment{BrandID: brand, Name: "all", Type: parley.SegmentStandard, IsActive: true}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateSegment(ctx, seg) }); err != nil {
		t.Fatal(err)
	}
	c := mustCampaign(t, db, brand, seg.ID)
	if written, err := resolve(t, db, c); err != nil || written != n {
		t.Fatalf("resolve: %d, %v", written, err)
	}
	if err := db.Exec(ctx, `UPDATE campaigns SET status = 'sending' WHERE id = ?`, c.ID); err != nil {
		t.Fatal(err)
	}
	err := db.WithTx(ctx, func(tx *store.Tx) error {
		got, err := tx.ClaimCampaignMessages(ctx, brand, c.ID, batch, "")
		if err != nil {
			return err
		}
		if len(got) != batch {
			t.Fatalf("claimed %d, want %d", len(got), batch)
		}
		var upd, hot int64
		if err := tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
			WHERE relid = 'messages'::regclass`).Scan(&upd, &hot); err != nil {
			return err
		}
		if upd != batch || hot != batch {
			t.Errorf("the claim updated %d messages, %d of them HOT; want %d, all HOT", upd, hot, batch)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
