package store

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley"
)

// Campaign counts written by the statement (SQLite, migration 00057). The
// drain's two batch writes, Tx.MarkSentMany and Tx.TransitionMany, move up
// to a batch of one campaign's messages from one status to another; on
// SQLite the per-row trigger messages_campaign_update would update the
// campaign's counts row once for each. They pause it instead
// (writer_counts.active, which only their own transaction can see) and
// add what they moved once per campaign and status. PostgreSQL's counts
// trigger runs once per statement already.

// countMove is one campaign's messages moved from one counts column to
// another.
type countMove struct {
	campaign int64
	from, to string
}

// countColumn is the campaign_counts column a message in status with
// error code counts in (00026's triggers: a failed message is counted as
// canceled or capped by its code).
func countColumn(status, code string) string {
	if status != parley.StatusFailed {
		return status // queued, sent, delivered, undelivered
	}
	switch code {
	case parley.ErrorCodeCanceled:
		return "canceled"
	case "frequency_capped":
		return "capped"
	}
	return "failed"
}

// countsColumns are the columns countColumn names: the only names put in
// the statement addCounts writes.
var countsColumns = map[string]bool{"queued": true, "sent": true, "delivered": true, "undelivered": true,
	"failed": true, "canceled": true, "capped": true}

// countsByWriter reports whether the transaction counts its batch writes
// itself; when it does, it pauses the counts trigger until addCounts.
func (tx *Tx) countsByWriter(ctx context.Context) (bool, error) {
	if tx.db.engine == "postgres" {
		return false, nil
	}
	if _, err := tx.exec(ctx, `UPDATE writer_counts SET active = 1`); err != nil {
		return false, fmt.Errorf("store: pause counts trigger: %w", err)
	}
	return true, nil
}

// addCounts applies moves to campaign_counts, one statement a campaign,
// and lets the counts trigger run again.
func (tx *Tx) addCounts(ctx context.Context, moves map[countMove]int64) error {
	delta := map[int64]map[string]int64{}
	for m, n := range moves {
		if m.from == m.to || n == 0 {
			continue
		}
		d := delta[m.campaign]
		if d == nil {
			d = map[string]int64{}
			delta[m.campaign] = d
		}
		d[m.from] -= n
		d[m.to] += n
	}
	for campaign, d := range delta {
		set, args := "", []any{}
		for col, n := range d {
			if !countsColumns[col] {
				return fmt.Errorf("store: no campaign count %q", col)
			}
			if n == 0 {
				continue
			}
			if set != "" {
				set += ", "
			}
			set += col + " = " + col + " + ?"
			args = append(args, n)
		}
		if set == "" {
			continue
		}
		if _, err := tx.exec(ctx, `UPDATE campaign_counts SET `+set+` WHERE campaign_id = ?`, append(args, campaign)...); err != nil {
			return fmt.Errorf("store: campaign counts: %w", err)
		}
	}
	if _, err := tx.exec(ctx, `UPDATE writer_counts SET active = 0`); err != nil {
		return fmt.Errorf("store: resume counts trigger: %w", err)
	}
	return nil
}
