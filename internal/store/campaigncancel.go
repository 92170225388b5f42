package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/parleyhq/parley"
)

// ErrCampaignNotCancelable is returned by CancelCampaign for a campaign
// that has completed: every message it had is with the provider or
// failed, so there is nothing left to cancel.
var ErrCampaignNotCancelable = errors.New("store: campaign has completed")

// cancelChunk is how many messages one statement of a canceling that
// emits events fails and returns: the events are written as the chunks
// come, so a campaign of 100,000 never sits in memory at once.
const cancelChunk = 1000

// qCancelMessages are the campaign's messages that no sender has claimed:
// still queued and without sending_at (the campaign sender sets it when
// it claims a batch, the single-message path before its provider call).
// A message claimed before the cancel goes on; one claimed after it is
// failed already and a claim skips it (it wants status queued).
const qCancelMessages = `brand_id = ? AND campaign_id = ? AND status = 'queued' AND sending_at IS NULL`

// CancelCampaign cancels the brand's scheduled or sending campaign in the
// caller's transaction (D16): the campaign becomes canceled, and each of
// its messages that no sender has claimed becomes failed with error_code
// canceled and reason as error_message. It returns the campaign as stored
// now, its stats counting the failed messages, and whether this call canceled it:
// a campaign canceled already is returned unchanged (false). A completed
// campaign is ErrCampaignNotCancelable, a missing one ErrNotFound.
//
// With each nil the messages are failed by one set-based UPDATE. With
// each set they are failed cancelChunk at a time and each chunk, as
// stored, is passed to each (to write message.failed events) before the
// next, in id order.
//
// The campaign row is updated first and guarded by its status, so a
// resolution (scheduled → sending) or a completion (sending → completed)
// running beside it either commits first, and is seen, or waits and finds
// the campaign canceled.
func (tx *Tx) CancelCampaign(ctx context.Context, brandID, id int64, reason string, each func([]*parley.Message) error) (*parley.Campaign, bool, error) {
	res, err := tx.exec(ctx, `UPDATE campaigns SET status = ? WHERE brand_id = ? AND id = ? AND status IN (?, ?)`,
		parley.CampaignCanceled, brandID, id, parley.CampaignScheduled, parley.CampaignSending)
	if err != nil {
		return nil, false, fmt.Errorf("store: cancel campaign: %w", err)
	}
	changed, err := res.RowsAffected()
	if err != nil {
		return nil, false, fmt.Errorf("store: cancel campaign: %w", err)
	}
	find := func() (*parley.Campaign, error) {
		c, err := tx.FindCampaign(ctx, brandID, id)
		if err != nil && !errors.Is(err, ErrNotFound) {
			err = fmt.Errorf("store: cancel campaign: %w", err)
		}
		return c, err
	}
	if changed == 0 {
		c, err := find()
		if err != nil {
			return nil, false, err
		}
		if c.Status == parley.CampaignCompleted {
			return nil, false, ErrCampaignNotCancelable
		}
		return c, false, nil // canceled already
	}

	args := []any{parley.StatusFailed, parley.ErrorCodeCanceled, reason, brandID, id}
	if each == nil {
		if _, err := tx.exec(ctx, `UPDATE messages SET status = ?, error_code = ?, error_message = ?
		WHERE `+qCancelMessages, args...); err != nil {
			return nil, false, fmt.Errorf("store: cancel campaign messages: %w", err)
		}
		c, err := find()
		return c, err == nil, err
	}
	// Chunk by chunk, in id order: the first query finds where the chunk
	// ends (none: this is the last one), the UPDATE fails what is still
	// cancelable up to there. All its tests are on the updated rows
	// themselves, so PostgreSQL checks them again on a row that a claim
	// committing beside it changed (READ COMMITTED's recheck); rows read
	// by a subquery would stay as first read, and a claimed message would
	// be failed (TestCampaignCancelWaitsForClaim). A chunk that such
	// claims emptied does not end the loop; the end does.
	for after := int64(0); ; {
		var upto int64
		err := tx.queryRow(ctx, `SELECT id FROM messages WHERE `+qCancelMessages+` AND id > ?
		ORDER BY id LIMIT 1 OFFSET ?`, brandID, id, after, cancelChunk-1).Scan(&upto)
		last := errors.Is(err, sql.ErrNoRows)
		if err != nil && !last {
			return nil, false, fmt.Errorf("store: cancel campaign messages: %w", err)
		}
		q, chunkArgs := `UPDATE messages SET status = ?, error_code = ?, error_message = ?
		WHERE `+qCancelMessages+` AND id > ?`, append(args, after)
		if !last {
			q, chunkArgs = q+` AND id <= ?`, append(chunkArgs, upto)
		}
		rows, err := tx.query(ctx, q+` RETURNING `+messageColumns, chunkArgs...)
		if err != nil {
			return nil, false, fmt.Errorf("store: cancel campaign messages: %w", err)
		}
		ms, err := collect(rows, scanMessage)
		if err != nil {
			return nil, false, fmt.Errorf("store: cancel campaign messages: %w", err)
		}
		if len(ms) > 0 {
			// RETURNING follows the order rows were updated in: events
			// go in id order.
			slices.SortFunc(ms, func(a, b *parley.Message) int { return cmp.Compare(a.ID, b.ID) })
			if err := each(ms); err != nil {
				return nil, false, err
			}
		}
		if last {
			c, err := find()
			return c, err == nil, err
		}
		after = upto
	}
}
