package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley"
)

// ErrCampaignNotScheduled is returned by ResolveCampaign for a campaign
// that has left scheduled: another resolution committed first (a retry
// after an uncertain commit, or another node), or it was canceled.
var ErrCampaignNotScheduled = errors.New("store: campaign is not scheduled")

const campaignColumns = `id, brand_id, name, segment_id, body, media_item_uuids, type, status, send_at,
	started_at, completed_at, date_created, recipients, skipped_unsubscribed, skipped_frequency_cap + capped,
	queued, sent, delivered, undelivered, failed, canceled, cancel_reason, replies, opt_outs,
	` + campaignHeld

// campaignsFrom joins each campaign to its messages' counts (migration
// 00021: triggers keep them as messages are written and change; 00026:
// capped, the messages the frequency cap refused at the hand-over, part
// of skipped_frequency_cap and not of failed).
const campaignsFrom = `campaigns c JOIN campaign_counts k ON k.campaign_id = c.id`

// campaignHeld is the campaign's count of queued messages held for a
// sending window (scheduled_at set; migration 00031's trigger keeps it in
// campaign_counts) and the earliest of their scheduled_at (D22): the first
// entry of messages_campaign_held, read only while some are held.
const campaignHeld = `k.held, CASE WHEN k.held = 0 THEN NULL ELSE (SELECT min(h.scheduled_at) FROM messages h
		WHERE h.campaign_id = c.id AND h.status = 'queued' AND h.scheduled_at IS NOT NULL) END`

// InsertCampaign stores c and sets its ID and DateCreated; an empty
// Status is scheduled.
func (tx *Tx) InsertCampaign(ctx context.Context, c *parley.Campaign) error {
	media, err := json.Marshal(nonNil(c.MediaItemUUIDs))
	if err != nil {
		return err
	}
	if c.Status == "" {
		c.Status = parley.CampaignScheduled
	}
	c.DateCreated = parley.NewTime(tx.now)
	row := tx.queryRow(ctx, `INSERT INTO campaigns (brand_id, name, segment_id, body, media_item_uuids, type,
	status, send_at, started_at, completed_at, date_created, recipients, skipped_unsubscribed, skipped_frequency_cap)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		c.BrandID, c.Name, c.SegmentID, c.Body, string(media), c.Type, c.Status, micros(c.SendAt.Time),
		toNullTime(c.StartedAt), toNullTime(c.CompletedAt), micros(c.DateCreated.Time),
		c.Stats.Recipients, c.Stats.SkippedUnsubscribed, c.Stats.SkippedFrequencyCap)
	if err := row.Scan(&c.ID); err != nil {
		return fmt.Errorf("store: insert campaign: %w", err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO campaign_counts (campaign_id) VALUES (?)`, c.ID); err != nil {
		return fmt.Errorf("store: insert campaign: %w", err)
	}
	return nil
}

// FindCampaign returns a campaign of the brand with its stats, or
// ErrNotFound.
func (db *DB) FindCampaign(ctx context.Context, brandID, id int64) (*parley.Campaign, error) {
	c, err := scanCampaign(db.queryRow(ctx, `SELECT `+campaignColumns+` FROM `+campaignsFrom+` WHERE brand_id = ? AND id = ?`,
		brandID, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return c, err
}

// ListCampaigns returns up to limit campaigns of the brand with id below
// beforeID (0: no bound), newest first, with their stats.
func (db *DB) ListCampaigns(ctx context.Context, brandID, beforeID int64, limit int) ([]*parley.Campaign, error) {
	q := `SELECT ` + campaignColumns + ` FROM ` + campaignsFrom + ` WHERE brand_id = ?`
	args := []any{brandID}
	if beforeID != 0 {
		q += ` AND id < ?`
		args = append(args, beforeID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list campaigns: %w", err)
	}
	return collect(rows, scanCampaign)
}

func scanCampaign(scan func(...any) error) (*parley.Campaign, error) {
	var c parley.Campaign
	var media string
	var sendAt, created int64
	var started, completed sql.NullInt64
	var reason sql.NullString
	var heldUntil sql.NullInt64
	if err := scan(&c.ID, &c.BrandID, &c.Name, &c.SegmentID, &c.Body, &media, &c.Type, &c.Status, &sendAt,
		&started, &completed, &created, &c.Stats.Recipients, &c.Stats.SkippedUnsubscribed,
		&c.Stats.SkippedFrequencyCap, &c.Stats.Queued, &c.Stats.Sent, &c.Stats.Delivered, &c.Stats.Undelivered,
		&c.Stats.Failed, &c.Stats.Canceled, &reason, &c.Stats.Replies, &c.Stats.OptOuts,
		&c.Stats.Held, &heldUntil); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("store: scan campaign: %w", err)
	}
	if err := json.Unmarshal([]byte(media), &c.MediaItemUUIDs); err != nil {
		return nil, fmt.Errorf("store: campaign %d media: %w", c.ID, err)
	}
	c.SendAt, c.DateCreated = parley.Time{Time: fromMicros(sendAt)}, parley.Time{Time: fromMicros(created)}
	c.StartedAt, c.CompletedAt = nullTime(started), nullTime(completed)
	if reason.Valid {
		c.CancelReason = &reason.String
	}
	c.Stats.HeldUntil = nullTime(heldUntil)
	return &c, nil
}

// ResolveCampaign resolves the segment of the brand's scheduled campaign c
// whole, in the caller's transaction (D16): StartCampaign, then every
// chunk (ResolveCampaignChunk). It returns how many messages it wrote and
// updates c. The engine resolves chunk by chunk, a transaction each, so
// the writer is never held for the whole audience; this is the same in
// one transaction, for callers that want it at once.
func (tx *Tx) ResolveCampaign(ctx context.Context, c *parley.Campaign, a Audience) (int64, error) {
	if err := tx.StartCampaign(ctx, c, a); err != nil {
		return 0, err
	}
	var total int64
	for {
		n, done, err := tx.ResolveCampaignChunk(ctx, c, a, 0)
		if err != nil {
			return total, err
		}
		total += n
		if done {
			return total, nil
		}
	}
}

// How many of the brand's users (by id, members of the segment or not)
// one ResolveCampaignChunk reads by default. SQLite: at 100,000 members
// the whole INSERT … SELECT held the only writer for 1 – 2 s, which every
// API write waited for; a chunk of 2,000 holds it for tens of
// milliseconds. PostgreSQL has many writers and the INSERT blocks none of
// them: small chunks only cost transactions (measured, 4.3 → 6.8 s to
// written at 100,000), so its chunks are large (docs/performance.md,
// "Campaigns").
const (
	DefaultResolveChunk  = 2000
	postgresResolveChunk = 100000
)

// StartCampaign starts the brand's scheduled campaign c (D16): it
// becomes sending, started now, with its segment's members counted into
// recipients and skipped_unsubscribed (consent false or null) and, for a
// MARKETING campaign of a brand with a frequency cap (D17), the consenting
// members already at it into skipped_frequency_cap; its resolve cursor is
// set to the start, so ResolveCampaignChunk writes the messages next.
//
// The campaign row is updated first, guarded by its status, so a second
// start (another node, a retry) waits for the first's transaction and
// then finds the campaign sending: ErrCampaignNotScheduled. A missing
// campaign is ErrNotFound; a missing segment too (AudienceFilter).
//
// The counts are one pass over the segment's query, fixed here: stats
// stay what D16 says (recipients = the members at send_at) while the
// messages are written chunk by chunk. A consent changed between this
// count and a chunk moves one member from one side to the other (the
// member is messaged as its chunk saw it).
func (tx *Tx) StartCampaign(ctx context.Context, c *parley.Campaign, a Audience) error {
	now := parley.NewTime(tx.now)
	res, err := tx.exec(ctx, `UPDATE campaigns SET status = ?, started_at = ?, resolve_cursor = 0,
	resolve_end = (SELECT coalesce(max(id), 0) FROM users WHERE brand_id = ?)
	WHERE brand_id = ? AND id = ? AND status = ?`,
		parley.CampaignSending, micros(now.Time), c.BrandID, c.BrandID, c.ID, parley.CampaignScheduled)
	if err != nil {
		return fmt.Errorf("store: resolve campaign: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: resolve campaign: %w", err)
	} else if n == 0 {
		var status string
		err := tx.queryRow(ctx, `SELECT status FROM campaigns WHERE brand_id = ? AND id = ?`, c.BrandID, c.ID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return fmt.Errorf("store: resolve campaign: %w", err)
		}
		return ErrCampaignNotScheduled
	}

	where, args, err := tx.AudienceFilter(ctx, c.BrandID, a)
	if err != nil {
		return err
	}
	capped, capArgs, err := tx.cappedMember(ctx, c)
	if err != nil {
		return err
	}
	var recipients, unsubscribed, skippedCap int64
	if err := tx.queryRow(ctx, `SELECT count(*), coalesce(sum(CASE WHEN u.messaging_consent = TRUE THEN 0 ELSE 1 END), 0),
	coalesce(sum(CASE WHEN u.messaging_consent = TRUE AND `+capped+` THEN 1 ELSE 0 END), 0)
	FROM users u WHERE `+where, append(append([]any{}, capArgs...), args...)...).Scan(&recipients, &unsubscribed, &skippedCap); err != nil {
		return fmt.Errorf("store: resolve campaign: count: %w", err)
	}
	if _, err := tx.exec(ctx, `UPDATE campaigns SET recipients = ?, skipped_unsubscribed = ?, skipped_frequency_cap = ?
	WHERE id = ?`, recipients, unsubscribed, skippedCap, c.ID); err != nil {
		return fmt.Errorf("store: resolve campaign: %w", err)
	}
	c.Status, c.StartedAt = parley.CampaignSending, &now
	c.Stats.Recipients, c.Stats.SkippedUnsubscribed, c.Stats.SkippedFrequencyCap = recipients, unsubscribed, skippedCap
	return nil
}

// ErrCampaignNotResolving: the campaign's resolution is not where this
// chunk expected it: another node resolved that chunk first, the
// resolution is finished, or the campaign was canceled.
var ErrCampaignNotResolving = errors.New("store: campaign is not being resolved")

// ResolveCampaignChunk writes the messages of the next chunk of the
// started campaign c: the brand's users with ids after the resolve cursor,
// at most size of them (0: DefaultResolveChunk, on PostgreSQL
// postgresResolveChunk), one queued message with
// campaign_id set to each member of a whose messaging_consent is true and
// who is not at the frequency cap (see StartCampaign). It returns how
// many messages it wrote and whether the resolution is finished (the
// cursor is then NULL). ErrCampaignNotResolving when the cursor moved
// (another node's chunk), is NULL, or the campaign is no longer sending.
//
// Exactly once rests on three things. The cursor moves first, in a
// guarded UPDATE (cursor = the value read), so of two resolvers of the
// same chunk one waits for the other's transaction and then finds the
// cursor moved; the cursor and the chunk's messages commit together, so
// a crash resumes after the last chunk written; and the messages go in
// with ON CONFLICT on the unique key (campaign_id, user_id), so no chunk
// ever writes a second message to anyone. A cancel (status no longer
// sending) stops the next chunk the same way.
//
// One INSERT … SELECT over the segment's query per chunk: the audience is
// never read into the server. The chunk's bound is the size-th user id of
// the brand after the cursor, read from users_brand_live_id.
func (tx *Tx) ResolveCampaignChunk(ctx context.Context, c *parley.Campaign, a Audience, size int) (int64, bool, error) {
	if size <= 0 {
		size = DefaultResolveChunk
		if tx.db.engine == "postgres" {
			size = postgresResolveChunk
		}
	}
	var cursor, end sql.NullInt64
	err := tx.queryRow(ctx, `SELECT resolve_cursor, resolve_end FROM campaigns WHERE brand_id = ? AND id = ? AND status = ?`,
		c.BrandID, c.ID, parley.CampaignSending).Scan(&cursor, &end)
	if errors.Is(err, sql.ErrNoRows) || err == nil && !cursor.Valid {
		return 0, false, ErrCampaignNotResolving
	} else if err != nil {
		return 0, false, fmt.Errorf("store: resolve campaign chunk: %w", err)
	}
	var bound int64
	err = tx.queryRow(ctx, `SELECT id FROM users WHERE brand_id = ? AND is_deleted = FALSE AND id > ? AND id < ?
	ORDER BY id LIMIT 1 OFFSET ?`, c.BrandID, cursor.Int64, end.Int64, size-1).Scan(&bound)
	done := errors.Is(err, sql.ErrNoRows)
	if done {
		bound = end.Int64 // the last chunk: up to the highest id at the start
	}
	if err != nil && !done {
		return 0, false, fmt.Errorf("store: resolve campaign chunk: bound: %w", err)
	}
	next := sql.NullInt64{Int64: bound, Valid: !done}
	res, err := tx.exec(ctx, `UPDATE campaigns SET resolve_cursor = ?
	WHERE brand_id = ? AND id = ? AND status = ? AND resolve_cursor = ?`,
		next, c.BrandID, c.ID, parley.CampaignSending, cursor.Int64)
	if err != nil {
		return 0, false, fmt.Errorf("store: resolve campaign chunk: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, false, fmt.Errorf("store: resolve campaign chunk: %w", err)
	} else if n == 0 {
		return 0, false, ErrCampaignNotResolving
	}

	where, args, err := tx.AudienceFilter(ctx, c.BrandID, a)
	if err != nil {
		return 0, false, err
	}
	capped, capArgs, err := tx.cappedMember(ctx, c)
	if err != nil {
		return 0, false, err
	}
	rng, rngArgs := ` AND u.id > ? AND u.id <= ?`, []any{cursor.Int64, bound}
	media, err := json.Marshal(nonNil(c.MediaItemUUIDs))
	if err != nil {
		return 0, false, err
	}
	// The columns of qInsertMessage that a queued outbound message sets;
	// provider and the delivery columns stay at their defaults until a
	// sender claims the message. The SELECT's WHERE also keeps SQLite from
	// reading ON CONFLICT as a join's ON.
	all := append([]any{parley.DirectionOutbound, parley.StatusQueued, c.Body, string(media), c.Type,
		micros(tx.now), c.ID}, args...)
	all = append(append(all, rngArgs...), capArgs...)
	res, err = tx.exec(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, body,
	media_item_uuids, type, date_created, campaign_id)
	SELECT u.brand_id, u.id, ?, ?, ?, ?, ?, ?, ?
	FROM users u WHERE `+where+rng+` AND u.messaging_consent = TRUE AND NOT `+capped+`
	ON CONFLICT (campaign_id, user_id) WHERE campaign_id IS NOT NULL DO NOTHING`, all...)
	if err != nil {
		return 0, false, fmt.Errorf("store: resolve campaign: insert messages: %w", err)
	}
	written, err := res.RowsAffected()
	if err != nil {
		return 0, false, fmt.Errorf("store: resolve campaign: %w", err)
	}
	// SQLite's per-row counts trigger skips queued campaign messages
	// (migration 00054: it was a fifth of this INSERT's CPU), so the chunk
	// counts what it wrote, in its transaction; the rows ON CONFLICT
	// skipped are not in written. PostgreSQL's trigger runs once per
	// statement and counts them itself.
	if written > 0 && tx.db.engine != "postgres" {
		if _, err := tx.exec(ctx, `UPDATE campaign_counts SET queued = queued + ? WHERE campaign_id = ?`,
			written, c.ID); err != nil {
			return 0, false, fmt.Errorf("store: resolve campaign: counts: %w", err)
		}
	}
	return written, done, nil
}

// CampaignResolving reports whether the brand's campaign's audience is
// still being written (its resolve cursor is set).
func (db *DB) CampaignResolving(ctx context.Context, brandID, id int64) (bool, error) {
	var n int64
	err := db.queryRow(ctx, `SELECT count(*) FROM campaigns WHERE brand_id = ? AND id = ? AND resolve_cursor IS NOT NULL`,
		brandID, id).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: campaign resolving: %w", err)
	}
	return n > 0, nil
}

// ResolvingCampaigns returns up to limit sending campaigns whose
// resolution has not finished (campaigns_resolving): one a crash
// interrupted, or one another node is resolving now.
func (db *DB) ResolvingCampaigns(ctx context.Context, limit int) ([]*parley.Campaign, error) {
	rows, err := db.query(ctx, `SELECT `+campaignColumns+` FROM `+campaignsFrom+`
	WHERE resolve_cursor IS NOT NULL AND status = 'sending' ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: resolving campaigns: %w", err)
	}
	return collect(rows, scanCampaign)
}

// cappedMember returns the SQL condition, on users u, of a member at the
// brand's frequency cap for campaign c, and its arguments: FALSE when the
// campaign is not MARKETING or the brand has no cap. The COALESCE keeps a
// user without outbound activity out without a NULL that NOT would keep
// NULL.
func (tx *Tx) cappedMember(ctx context.Context, c *parley.Campaign) (string, []any, error) {
	if c.Type != parley.TypeMarketing {
		return "FALSE", nil, nil
	}
	set, err := tx.BrandSettings(ctx, c.BrandID)
	if err != nil {
		return "", nil, fmt.Errorf("store: resolve campaign: settings: %w", err)
	}
	fc := set.FrequencyCap
	if fc == nil {
		return "FALSE", nil, nil
	}
	since := micros(tx.now.Add(-time.Duration(fc.PerHours) * time.Hour))
	return `(COALESCE(u.last_outbound_at, 0) >= ? AND (SELECT count(*) FROM messages cm
	WHERE cm.brand_id = u.brand_id AND cm.user_id = u.id AND cm.direction = 'outbound' AND cm.type = 'MARKETING'
	AND cm.status IN ('sent', 'delivered', 'undelivered') AND cm.date_sent >= ?) >= ?)`,
		[]any{since, since, fc.MaxMessages}, nil
}

// UpdateScheduledCampaign writes c's name, segment, body, media, type and
// send_at, while it is scheduled (ErrCampaignNotScheduled otherwise).
func (tx *Tx) UpdateScheduledCampaign(ctx context.Context, c *parley.Campaign) error {
	media, err := json.Marshal(nonNil(c.MediaItemUUIDs))
	if err != nil {
		return err
	}
	res, err := tx.exec(ctx, `UPDATE campaigns SET name = ?, segment_id = ?, body = ?, media_item_uuids = ?, type = ?,
	send_at = ? WHERE brand_id = ? AND id = ? AND status = ?`,
		c.Name, c.SegmentID, c.Body, string(media), c.Type, micros(c.SendAt.Time), c.BrandID, c.ID, parley.CampaignScheduled)
	if err != nil {
		return fmt.Errorf("store: update campaign: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: update campaign: %w", err)
	} else if n == 0 {
		return ErrCampaignNotScheduled
	}
	return nil
}
