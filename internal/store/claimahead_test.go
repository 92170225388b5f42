package store_test

import (
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// TestClaimAheadRechecks: a claim of messages read ahead of its
// transaction (SQLite) writes only those still queued, unclaimed and due
// when it runs, and none once the campaign has stopped sending; it
// returns their recipients as read. PostgreSQL reads nothing ahead.
func TestClaimAheadRechecks(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	claim := func(c *parley.Campaign, ahead *store.Ahead) []store.CampaignRecipient {
		t.Helper()
		var got []store.CampaignRecipient
		if err := f.db.WithTx(ctx, func(tx *store.Tx) error {
			var err error
			got, err = tx.ClaimCampaignMessages(ctx, f.brand, c.ID, 10, "", ahead)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	readAhead := func(c *parley.Campaign) *store.Ahead {
		t.Helper()
		ahead, err := f.db.ReadCampaignAhead(ctx, f.brand, c.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ahead
	}

	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if _, err := resolve(t, f.db, c); err != nil {
		t.Fatal(err)
	}
	ahead := readAhead(c)
	if f.db.Engine() == "postgres" {
		if ahead != nil {
			t.Fatalf("PostgreSQL read ahead %+v; its claim picks under locks", ahead)
		}
		return
	}
	msgs := messageIDs(t, f, `campaign_id = ?`, c.ID) // ann, dee
	if len(msgs) != 2 {
		t.Fatalf("campaign messages %v, want 2", msgs)
	}
	// Meanwhile another sender claims the first, and the second is held
	// for its window: the claim read ahead takes neither.
	if err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		if _, err := tx.ClaimCampaignMessages(ctx, f.brand, c.ID, 1, "", nil); err != nil {
			return err
		}
		return tx.HoldCampaignMessages(ctx, f.brand, msgs[1:], segNow.Add(time.Hour))
	}); err != nil {
		t.Fatal(err)
	}
	if got := claim(c, ahead); len(got) != 0 {
		t.Fatalf("claimed %+v, already claimed or held since read", got)
	}
	// Read again once the hold has passed: the held one is claimed, with
	// its recipient as read.
	f.db.Now = func() time.Time { return segNow.Add(2 * time.Hour) }
	got := claim(c, readAhead(c))
	if len(got) != 1 || got[0].MessageID != msgs[1] || got[0].UserID != f.ids["dee"] || got[0].To != "+16175550004" {
		t.Fatalf("claimed %+v, want message %d to dee", got, msgs[1])
	}

	// A recipient read as opted out, who opted in again before the claim:
	// the batch is claimed in the transaction, with what it reads there.
	c3 := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if _, err := resolve(t, f.db, c3); err != nil {
		t.Fatal(err)
	}
	setConsent := func(v bool) {
		t.Helper()
		if err := f.db.Exec(ctx, `UPDATE users SET messaging_consent = ? WHERE id = ?`, v, f.ids["ann"]); err != nil {
			t.Fatal(err)
		}
	}
	setConsent(false)
	ahead = readAhead(c3)
	setConsent(true)
	got = claim(c3, ahead)
	if len(got) != 2 || got[0].UserID != f.ids["ann"] || got[0].Consent == nil || !*got[0].Consent {
		t.Fatalf("claimed %+v, want ann's message with her consent as it is now", got)
	}

	c2 := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if _, err := resolve(t, f.db, c2); err != nil {
		t.Fatal(err)
	}
	ahead = readAhead(c2)
	if err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		_, _, err := tx.CancelCampaign(ctx, f.brand, c2.ID, "why", nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := claim(c2, ahead); len(got) != 0 {
		t.Fatalf("claimed %+v of a campaign canceled since read", got)
	}
}
