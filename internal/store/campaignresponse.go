package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// AttributionWindow is how long after a campaign message was sent to a
// contact an inbound text from them answers that campaign (D22).
const AttributionWindow = 72 * time.Hour

// AttributeInbound attributes an inbound text the contact sent at at to
// the latest campaign whose message was sent to them in the
// AttributionWindow before (D22), in the inbound's transaction: the
// contact counts once in the campaign's replies, and once in its opt_outs
// when optOut (a D12 opt-out keyword). It returns the campaign's id, 0
// when the text answers none. Served by messages_user_campaign_sent
// (migration 00030).
func (tx *Tx) AttributeInbound(ctx context.Context, brandID, userID int64, at time.Time, optOut bool) (int64, error) {
	var campaignID int64
	err := tx.queryRow(ctx, `SELECT campaign_id FROM messages
	WHERE user_id = ? AND campaign_id IS NOT NULL AND date_sent IS NOT NULL AND date_sent >= ? AND date_sent <= ?
	AND brand_id = ? AND direction = 'outbound'
	ORDER BY date_sent DESC LIMIT 1`,
		userID, micros(at.Add(-AttributionWindow)), micros(at), brandID).Scan(&campaignID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: attribute inbound: %w", err)
	}
	res, err := tx.exec(ctx, `INSERT INTO campaign_responses (campaign_id, user_id, replied_at) VALUES (?, ?, ?)
	ON CONFLICT (campaign_id, user_id) DO NOTHING`, campaignID, userID, micros(at))
	if err != nil {
		return 0, fmt.Errorf("store: attribute inbound: %w", err)
	}
	replied, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	var optedOut int64
	if optOut {
		res, err = tx.exec(ctx, `UPDATE campaign_responses SET opted_out_at = ?
		WHERE campaign_id = ? AND user_id = ? AND opted_out_at IS NULL`, micros(at), campaignID, userID)
		if err != nil {
			return 0, fmt.Errorf("store: attribute inbound: %w", err)
		}
		if optedOut, err = res.RowsAffected(); err != nil {
			return 0, err
		}
	}
	if replied+optedOut > 0 {
		if _, err := tx.exec(ctx, `UPDATE campaign_counts SET replies = replies + ?, opt_outs = opt_outs + ?
		WHERE campaign_id = ?`, replied, optedOut, campaignID); err != nil {
			return 0, fmt.Errorf("store: attribute inbound: %w", err)
		}
	}
	return campaignID, nil
}

// FirstHeldRecipient returns the recipient of the brand's campaign's
// message held for its sending window that goes first (the earliest
// scheduled_at, D22): one seek of messages_campaign_held (00031). ok is
// false when none is held.
func (db *DB) FirstHeldRecipient(ctx context.Context, brandID, campaignID int64) (r CampaignRecipient, ok bool, err error) {
	err = db.queryRow(ctx, `SELECT m.id, m.user_id, u.phone_number, COALESCE(u.time_zone, ''), COALESCE(u.state_code, '')
	FROM messages m JOIN users u ON u.id = m.user_id
	WHERE m.campaign_id = ? AND m.status = 'queued' AND m.scheduled_at IS NOT NULL AND m.brand_id = ?
	ORDER BY m.scheduled_at LIMIT 1`, campaignID, brandID).Scan(
		&r.MessageID, &r.UserID, &r.To, &r.ZipZone, &r.StateCode)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("store: first held recipient: %w", err)
	}
	return r, true, nil
}
