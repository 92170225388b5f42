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
