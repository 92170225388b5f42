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
	started_at, completed_at, date_created, recipients, skipped_unsubscribed, skipped_frequency_cap`

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
	return nil
}

// FindCampaign returns a campaign of the brand with the counts fixed at
// resolution (CampaignStats adds the messages'), or ErrNotFound.
func (db *DB) FindCampaign(ctx context.Context, brandID, id int64) (*parley.Campaign, error) {
	c, err := scanCampaign(db.queryRow(ctx, `SELECT `+campaignColumns+` FROM campaigns WHERE brand_id = ? AND id = ?`,
		brandID, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return c, err
}

// ListCampaigns returns up to limit campaigns of the brand with id below
// beforeID (0: no bound), newest first, with the counts fixed at
// resolution.
func (db *DB) ListCampaigns(ctx context.Context, brandID, beforeID int64, limit int) ([]*parley.Campaign, error) {
	q := `SELECT ` + campaignColumns + ` FROM campaigns WHERE brand_id = ?`
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
	if err := scan(&c.ID, &c.BrandID, &c.Name, &c.SegmentID, &c.Body, &media, &c.Type, &c.Status, &sendAt,
		&started, &completed, &created, &c.Stats.Recipients, &c.Stats.SkippedUnsubscribed,
		&c.Stats.SkippedFrequencyCap); err != nil {
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
	return &c, nil
}

// ResolveCampaign resolves the segment of the brand's scheduled campaign c
// once, in the caller's transaction (D16): every member of a whose
// messaging_consent is true gets one queued message with campaign_id set;
// the members are counted into recipients and skipped_unsubscribed (consent
// false or null); the campaign becomes sending, started now. It returns
// how many messages it wrote and updates c.
//
// A MARKETING campaign of a brand with a frequency cap (D17) skips the
// consenting members already at it, counted in skipped_frequency_cap: the
// rule of CountMarketingSent (MARKETING messages sent, delivered or
// undelivered with date_sent in the last per_hours), as one correlated
// count per member, read only for members whose last_outbound_at (the
// activity columns, any type) falls inside the period.
//
// Exactly once rests on two things. The campaign row is updated first, so
// a second resolution (another node, a retry) waits for the first's
// transaction and then finds the campaign sending: ErrCampaignNotScheduled.
// And the messages go in with ON CONFLICT on the unique key (campaign_id,
// user_id), so even a resolution that got past the first check writes no
// second message to anyone. A crash before commit rolls all of it back.
//
// One INSERT … SELECT over the segment's query: the audience is never read
// into the server, and the database writes it in one pass.
// A missing campaign is ErrNotFound; a missing segment too (AudienceFilter).
func (tx *Tx) ResolveCampaign(ctx context.Context, c *parley.Campaign, a Audience) (int64, error) {
	now := parley.NewTime(tx.now)
	res, err := tx.exec(ctx, `UPDATE campaigns SET status = ?, started_at = ?
	WHERE brand_id = ? AND id = ? AND status = ?`,
		parley.CampaignSending, micros(now.Time), c.BrandID, c.ID, parley.CampaignScheduled)
	if err != nil {
		return 0, fmt.Errorf("store: resolve campaign: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("store: resolve campaign: %w", err)
	} else if n == 0 {
		var status string
		err := tx.queryRow(ctx, `SELECT status FROM campaigns WHERE brand_id = ? AND id = ?`, c.BrandID, c.ID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, ErrNotFound
		} else if err != nil {
			return 0, fmt.Errorf("store: resolve campaign: %w", err)
		}
		return 0, ErrCampaignNotScheduled
	}

	where, args, err := tx.AudienceFilter(ctx, c.BrandID, a)
	if err != nil {
		return 0, err
	}
	capped, capArgs, err := tx.cappedMember(ctx, c)
	if err != nil {
		return 0, err
	}
	// The counts come first, from one pass over the same filter. Under
	// PostgreSQL's READ COMMITTED the INSERT reads a later snapshot: a
	// consent changed in between can move one member from one side to the
	// other (the member is then messaged as the INSERT saw it).
	var recipients, unsubscribed, skippedCap int64
	if err := tx.queryRow(ctx, `SELECT count(*), coalesce(sum(CASE WHEN u.messaging_consent = TRUE THEN 0 ELSE 1 END), 0),
	coalesce(sum(CASE WHEN u.messaging_consent = TRUE AND `+capped+` THEN 1 ELSE 0 END), 0)
	FROM users u WHERE `+where, append(append([]any{}, capArgs...), args...)...).Scan(&recipients, &unsubscribed, &skippedCap); err != nil {
		return 0, fmt.Errorf("store: resolve campaign: count: %w", err)
	}

	media, err := json.Marshal(nonNil(c.MediaItemUUIDs))
	if err != nil {
		return 0, err
	}
	// The columns of qInsertMessage that a queued outbound message sets;
	// provider and the delivery columns stay at their defaults until a
	// sender claims the message. The SELECT's WHERE also keeps SQLite from
	// reading ON CONFLICT as a join's ON.
	res, err = tx.exec(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, body,
	media_item_uuids, type, date_created, campaign_id)
	SELECT u.brand_id, u.id, ?, ?, ?, ?, ?, ?, ?
	FROM users u WHERE `+where+` AND u.messaging_consent = TRUE AND NOT `+capped+`
	ON CONFLICT (campaign_id, user_id) WHERE campaign_id IS NOT NULL DO NOTHING`,
		append(append([]any{parley.DirectionOutbound, parley.StatusQueued, c.Body, string(media), c.Type,
			micros(now.Time), c.ID}, args...), capArgs...)...)
	if err != nil {
		return 0, fmt.Errorf("store: resolve campaign: insert messages: %w", err)
	}
	written, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("store: resolve campaign: %w", err)
	}

	if _, err := tx.exec(ctx, `UPDATE campaigns SET recipients = ?, skipped_unsubscribed = ?, skipped_frequency_cap = ?
	WHERE id = ?`, recipients, unsubscribed, skippedCap, c.ID); err != nil {
		return 0, fmt.Errorf("store: resolve campaign: %w", err)
	}
	c.Status, c.StartedAt = parley.CampaignSending, &now
	c.Stats.Recipients, c.Stats.SkippedUnsubscribed, c.Stats.SkippedFrequencyCap = recipients, unsubscribed, skippedCap
	return written, nil
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

// CampaignStats returns the stats of the brand's campaign: the counts
// fixed at resolution and its messages by status, in one query over the
// campaign's index (canceled: failed with error_code canceled, not counted
// in failed). A missing campaign is ErrNotFound.
func (db *DB) CampaignStats(ctx context.Context, brandID, id int64) (*parley.CampaignStats, error) {
	var s parley.CampaignStats
	err := db.queryRow(ctx, `SELECT c.recipients, c.skipped_unsubscribed, c.skipped_frequency_cap,
	coalesce(sum(CASE WHEN m.status = 'queued' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN m.status = 'sent' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN m.status = 'delivered' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN m.status = 'undelivered' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN m.status = 'failed' AND (m.error_code IS NULL OR m.error_code <> ?) THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN m.status = 'failed' AND m.error_code = ? THEN 1 ELSE 0 END), 0)
	FROM campaigns c LEFT JOIN messages m ON m.brand_id = c.brand_id AND m.campaign_id = c.id
	WHERE c.brand_id = ? AND c.id = ?
	GROUP BY c.id, c.recipients, c.skipped_unsubscribed, c.skipped_frequency_cap`,
		parley.ErrorCodeCanceled, parley.ErrorCodeCanceled, brandID, id).Scan(
		&s.Recipients, &s.SkippedUnsubscribed, &s.SkippedFrequencyCap,
		&s.Queued, &s.Sent, &s.Delivered, &s.Undelivered, &s.Failed, &s.Canceled)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("store: campaign stats: %w", err)
	}
	return &s, nil
}
