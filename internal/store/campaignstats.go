package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/parleyhq/parley"
)

// qMessageStats sums campaigns' messages by status (D16): failed leaves
// out the canceled ones, which have their own count. Its IN list is
// completed by campaignStats.
const qMessageStats = `SELECT campaign_id,
	coalesce(sum(CASE WHEN status = 'queued' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN status = 'sent' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN status = 'delivered' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN status = 'undelivered' THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN status = 'failed' AND (error_code IS NULL OR error_code <> ?) THEN 1 ELSE 0 END), 0),
	coalesce(sum(CASE WHEN status = 'failed' AND error_code = ? THEN 1 ELSE 0 END), 0)
	FROM messages WHERE brand_id = ? AND campaign_id IN (?`

// AddMessageStats fills in the message counts of cs's stats (queued,
// sent, delivered, undelivered, failed, canceled) from their messages, in
// one query over the messages_brand_campaign index however many there
// are: a page of GET /campaigns costs one query, not one per campaign.
// The counts fixed at resolution come with the campaigns' rows.
func (db *DB) AddMessageStats(ctx context.Context, brandID int64, cs []*parley.Campaign) error {
	return addMessageStats(ctx, db.query, brandID, cs)
}

// AddMessageStats is DB.AddMessageStats inside the transaction, which
// sees its own changes (a cancel's failed messages).
func (tx *Tx) AddMessageStats(ctx context.Context, brandID int64, cs []*parley.Campaign) error {
	return addMessageStats(ctx, tx.query, brandID, cs)
}

func addMessageStats(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error),
	brandID int64, cs []*parley.Campaign) error {
	if len(cs) == 0 {
		return nil
	}
	byID := make(map[int64]*parley.Campaign, len(cs))
	args := []any{parley.ErrorCodeCanceled, parley.ErrorCodeCanceled, brandID}
	for _, c := range cs {
		byID[c.ID] = c
		args = append(args, c.ID)
		s := &c.Stats
		s.Queued, s.Sent, s.Delivered, s.Undelivered, s.Failed, s.Canceled = 0, 0, 0, 0, 0, 0
	}
	rows, err := query(ctx, qMessageStats+strings.Repeat(", ?", len(cs)-1)+`) GROUP BY campaign_id`, args...)
	if err != nil {
		return fmt.Errorf("store: campaign stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var s parley.CampaignStats
		if err := rows.Scan(&id, &s.Queued, &s.Sent, &s.Delivered, &s.Undelivered, &s.Failed, &s.Canceled); err != nil {
			return fmt.Errorf("store: campaign stats: %w", err)
		}
		if c := byID[id]; c != nil {
			s.Recipients, s.SkippedUnsubscribed, s.SkippedFrequencyCap =
				c.Stats.Recipients, c.Stats.SkippedUnsubscribed, c.Stats.SkippedFrequencyCap
			c.Stats = s
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: campaign stats: %w", err)
	}
	return nil
}
