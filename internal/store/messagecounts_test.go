package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// TestTriggersFollowMessages: what triggers keep from the messages — the
// contacts' activity (D14's activity fields, 00009) and the campaigns'
// counts by status (D16's stats, 00021) — equals a recount of the
// messages after every kind of write: a resolution, a multi-row insert,
// many messages moved by one statement (two of one contact among them,
// which PostgreSQL's statement trigger sees together), a single
// transition, sent → failed (a message leaving the counted statuses takes
// its date with it), a cancel (failed with error_code canceled) and a
// sent write of two messages of one contact and one of a contact whose
// last text out is later. Each
// contact whose activity a step moved is in the audience's change log
// (00049; on PostgreSQL written by the activity trigger itself, 00053).
func TestTriggersFollowMessages(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	c := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if _, err := resolve(t, f.db, c); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, f, "resolution")

	sent := segNow.Add(-time.Hour).UnixMicro()
	before, pos := storedActivity(t, f), audiencePos(t, f)
	if err := f.db.Exec(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, type, date_created, date_sent)
	VALUES (?, ?, 'outbound', 'queued', 'TRANSACTIONAL', 1, NULL), (?, ?, 'outbound', 'sent', 'TRANSACTIONAL', 1, ?),
	(?, ?, 'inbound', 'delivered', 'CONVERSATIONAL', ?, NULL), (?, ?, 'outbound', 'queued', 'TRANSACTIONAL', 1, NULL)`,
		f.brand, f.ids["bob"], f.brand, f.ids["bob"], sent, f.brand, f.ids["cy"], sent, f.brand, f.ids["ann"]); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, f, "insert of four")
	checkChangesLogged(t, f, "insert of four", before, pos)

	camp := messageIDs(t, f, `campaign_id = ?`, c.ID) // ann, dee
	others := messageIDs(t, f, `campaign_id IS NULL AND direction = 'outbound' AND date_created = 1`)
	if len(camp) != 2 || len(others) != 3 {
		t.Fatalf("campaign messages %v, others %v; want 2 and 3", camp, others)
	}
	tx := func(step string, fn func(*store.Tx) error) {
		t.Helper()
		before, pos := storedActivity(t, f), audiencePos(t, f)
		if err := f.db.WithTx(ctx, fn); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		checkCounts(t, f, step)
		checkChangesLogged(t, f, step, before, pos)
		if f.db.Engine() == "sqlite" {
			var active int
			if err := f.db.Writer().QueryRowContext(ctx, `SELECT active FROM writer_counts`).Scan(&active); err != nil || active != 0 {
				t.Fatalf("after %s: writer_counts.active %d (%v); the counts trigger is left paused", step, active, err)
			}
		}
	}
	tx("campaign sent", func(tx *store.Tx) error {
		_, err := tx.MarkSentMany(ctx, f.brand, "sim", []store.Sent{{MessageID: camp[0], ProviderID: "P1"}, {MessageID: camp[1], ProviderID: "P2"}})
		return err
	})
	tx("delivered in one statement", func(tx *store.Tx) error {
		_, err := tx.TransitionMany(ctx, f.brand, append([]int64{camp[0]}, others...),
			store.Transition{Status: parley.StatusDelivered, At: segNow})
		return err
	})
	// Those delivered from queued were sent then too.
	if ids := messageIDs(t, f, `direction = 'outbound' AND status = 'delivered' AND date_sent IS NULL`); len(ids) > 0 {
		t.Errorf("delivered without date_sent: %v", ids)
	}
	code, why := "30008", "unknown error"
	tx("sent → failed", func(tx *store.Tx) error {
		_, err := tx.TransitionMessage(ctx, f.brand, camp[1], store.Transition{Status: parley.StatusFailed, At: segNow,
			ErrorCode: &code, ErrorMessage: &why})
		return err
	})

	c2 := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	if _, err := resolve(t, f.db, c2); err != nil {
		t.Fatal(err)
	}
	tx("cancel", func(tx *store.Tx) error {
		_, _, err := tx.CancelCampaign(ctx, f.brand, c2.ID, "why", nil)
		return err
	})

	// The batch writes count their own moves on SQLite (00057): from two
	// statuses in one statement, and into each column a failure may count
	// in; the counts are then left to the triggers again (the next step's
	// single transitions are counted by them).
	c3 := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	c4 := mustCampaign(t, f.db, f.brand, mustSegment(t, f, f.brand, parley.SegmentStandard))
	for _, c := range []*parley.Campaign{c3, c4} {
		if _, err := resolve(t, f.db, c); err != nil {
			t.Fatal(err)
		}
	}
	m3, m4 := messageIDs(t, f, `campaign_id = ?`, c3.ID), messageIDs(t, f, `campaign_id = ?`, c4.ID)
	tx("one of two sent", func(tx *store.Tx) error {
		_, err := tx.MarkSentMany(ctx, f.brand, "sim", []store.Sent{{MessageID: m3[0], ProviderID: "P3"}})
		return err
	})
	tx("queued and sent undelivered in one statement", func(tx *store.Tx) error {
		_, err := tx.TransitionMany(ctx, f.brand, m3, store.Transition{Status: parley.StatusUndelivered, At: segNow,
			ErrorCode: &code, ErrorMessage: &why})
		return err
	})
	capped, canceled := "frequency_capped", parley.ErrorCodeCanceled
	tx("failed, capped and canceled by statements", func(tx *store.Tx) error {
		if _, err := tx.TransitionMany(ctx, f.brand, m4[:1], store.Transition{Status: parley.StatusFailed, At: segNow,
			ErrorCode: &capped, ErrorMessage: &why}); err != nil {
			return err
		}
		_, err := tx.TransitionMany(ctx, f.brand, m4[1:], store.Transition{Status: parley.StatusFailed, At: segNow,
			ErrorCode: &canceled, ErrorMessage: &why})
		return err
	})
	// The sent write: two messages of one contact in one batch, and a
	// contact whose last text out is later than the batch's.
	later := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	if err := f.db.Exec(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, type, date_created, date_sent)
	VALUES (?, ?, 'outbound', 'queued', 'TRANSACTIONAL', 2, NULL), (?, ?, 'outbound', 'queued', 'TRANSACTIONAL', 2, NULL),
	(?, ?, 'outbound', 'sent', 'TRANSACTIONAL', 2, ?), (?, ?, 'outbound', 'queued', 'TRANSACTIONAL', 2, NULL)`,
		f.brand, f.ids["cy"], f.brand, f.ids["cy"], f.brand, f.ids["dee"], later, f.brand, f.ids["dee"]); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, f, "insert of four more")
	queued := messageIDs(t, f, `status = 'queued' AND date_created = 2`)
	if len(queued) != 3 {
		t.Fatalf("queued %v, want 3", queued)
	}
	tx("sent write: two of one contact, one behind a later text", func(tx *store.Tx) error {
		var sent []store.Sent
		for i, id := range queued {
			sent = append(sent, store.Sent{MessageID: id, ProviderID: fmt.Sprint("Q", i)})
		}
		_, err := tx.MarkSentMany(ctx, f.brand, "sim", sent)
		return err
	})
	wantStats(t, f.db, c3, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Undelivered: 2})
	wantStats(t, f.db, c4, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Canceled: 1, SkippedFrequencyCap: 1})
	wantStats(t, f.db, c, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Delivered: 1, Failed: 1})
	wantStats(t, f.db, c2, parley.CampaignStats{Recipients: 4, SkippedUnsubscribed: 2, Canceled: 2})
}

// messageIDs returns the ids of the messages where where holds, in id order.
func messageIDs(t *testing.T, f *segFixture, where string, args ...any) []int64 {
	t.Helper()
	rows, err := f.db.Writer().QueryContext(t.Context(), f.db.Rebind(`SELECT id FROM messages WHERE `+where+` ORDER BY id`), args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("messages where %s: %v", where, err)
	}
	return ids
}

// checkCounts compares the stored activity of every contact and the
// stored counts of every campaign with a recount of the messages.
func checkCounts(t *testing.T, f *segFixture, step string) {
	t.Helper()
	const counted = `('sent', 'delivered', 'undelivered')`
	for _, c := range []struct{ name, query string }{
		{"activity", `SELECT u.id, u.inbound_count, u.outbound_count, COALESCE(u.last_inbound_at, 0),
			COALESCE(u.last_outbound_at, 0), COALESCE(u.last_delivered_at, 0),
			(SELECT count(*) FROM messages m WHERE m.user_id = u.id AND m.direction = 'inbound'),
			(SELECT count(*) FROM messages m WHERE m.user_id = u.id AND m.direction = 'outbound' AND m.status IN ` + counted + `),
			(SELECT COALESCE(max(m.date_created), 0) FROM messages m WHERE m.user_id = u.id AND m.direction = 'inbound'),
			(SELECT COALESCE(max(m.date_sent), 0) FROM messages m WHERE m.user_id = u.id AND m.direction = 'outbound'
				AND m.status IN ` + counted + `),
			(SELECT COALESCE(max(m.date_delivered), 0) FROM messages m WHERE m.user_id = u.id AND m.direction = 'outbound'
				AND m.status = 'delivered')
			FROM users u ORDER BY u.id`},
		{"campaign counts", `SELECT k.campaign_id, k.queued, k.sent, k.delivered, k.undelivered, k.failed, k.canceled, k.capped,
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'queued'),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'sent'),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'delivered'),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'undelivered'),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'failed'
				AND COALESCE(m.error_code, '') NOT IN ('canceled', 'frequency_capped')),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'failed'
				AND m.error_code = 'canceled'),
			(SELECT count(*) FROM messages m WHERE m.campaign_id = k.campaign_id AND m.status = 'failed'
				AND m.error_code = 'frequency_capped')
			FROM campaign_counts k ORDER BY k.campaign_id`},
	} {
		rows, err := f.db.Writer().QueryContext(t.Context(), c.query)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id int64
			var v [14]int64
			dest := []any{&id}
			cols := 5
			if c.name == "campaign counts" {
				cols = 7
			}
			for i := range 2 * cols {
				dest = append(dest, &v[i])
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			if stored, recount := v[:cols], v[cols:2*cols]; !slices.Equal(stored, recount) {
				t.Errorf("after %s: %s of %d: stored %v, recount %v", step, c.name, id, stored, recount)
			}
			n++
		}
		rows.Close()
		if n == 0 {
			t.Fatalf("after %s: no rows of %s", step, c.name)
		}
	}
}

// storedActivity returns each contact's stored activity columns.
func storedActivity(t *testing.T, f *segFixture) map[int64][5]int64 {
	t.Helper()
	rows, err := f.db.Writer().QueryContext(t.Context(), `SELECT id, inbound_count, outbound_count,
		COALESCE(last_inbound_at, 0), COALESCE(last_outbound_at, 0), COALESCE(last_delivered_at, 0) FROM users`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64][5]int64{}
	for rows.Next() {
		var id int64
		var v [5]int64
		if err := rows.Scan(&id, &v[0], &v[1], &v[2], &v[3], &v[4]); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func audiencePos(t *testing.T, f *segFixture) int64 {
	t.Helper()
	pos, err := f.db.AudiencePosition(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// movesNoActivity are the steps of TestTriggersFollowMessages that fail
// queued messages, which counted in no activity.
var movesNoActivity = []string{"cancel", "failed, capped and canceled by statements"}

// checkChangesLogged fails unless every contact whose activity differs
// from before is among the brand's changes since pos.
func checkChangesLogged(t *testing.T, f *segFixture, step string, before map[int64][5]int64, pos int64) {
	t.Helper()
	logged, _, _, err := f.db.AudienceChanges(t.Context(), f.brand, pos, 1000)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for id, now := range storedActivity(t, f) {
		if now == before[id] {
			continue
		}
		moved++
		if !slices.Contains(logged, id) {
			t.Errorf("after %s: contact %d's activity moved %v → %v, not in the change log %v", step, id, before[id], now, logged)
		}
	}
	if moved == 0 && !slices.Contains(movesNoActivity, step) {
		t.Errorf("after %s: no contact's activity moved; the step tests nothing", step)
	}
}
