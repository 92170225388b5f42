package store

import (
	"context"
	"fmt"
)

// A claim read ahead (SQLite, issue #35). SQLite's claim returned each
// claimed message's recipient from five subqueries of its RETURNING, run
// while the claim held the one writer: about a third of the claim's work,
// which every other write waited for. A sender now reads the messages it
// means to claim, with their recipients, on a reader before its
// transaction, and the claim in the transaction writes those of them that
// are still queued, unclaimed and due (the guard of the source checked
// again), and returns their recipients as read. What may change between
// the two is decided later anyway: a withdrawal of consent or a deletion
// at the hand-over; the time zone and state only say which sending window
// holds a message. The other way round is not: a batch that read a
// recipient deleted or opted out (which fails the message) is claimed as
// before, reading every recipient in the transaction, so that one who
// opted in again meanwhile is sent to. Such batches are rare: the
// resolution left out who had opted out then.
// PostgreSQL's claim picks its rows under locks in the transaction (FOR
// UPDATE SKIP LOCKED, so two senders take different rows) and reads
// nothing ahead.

// Ahead is what a sender read before its claim's transaction: the
// messages it may claim, in the queue's order (by scheduled_at, then id),
// with their recipients.
type Ahead struct {
	recipients []CampaignRecipient
}

// ReadCampaignAhead reads up to limit of the campaign's due, unclaimed
// queued messages ahead of ClaimCampaignMessages, or nothing on
// PostgreSQL.
func (db *DB) ReadCampaignAhead(ctx context.Context, brandID, campaignID int64, limit int) (*Ahead, error) {
	return db.readAhead(ctx, campaignSource, brandID, campaignID, limit)
}

// ReadFlowAhead is ReadCampaignAhead for ClaimFlowMessages.
func (db *DB) ReadFlowAhead(ctx context.Context, brandID, flowID int64, limit int) (*Ahead, error) {
	return db.readAhead(ctx, flowSource, brandID, flowID, limit)
}

func (db *DB) readAhead(ctx context.Context, src queuedSource, brandID, id int64, limit int) (*Ahead, error) {
	if db.engine == "postgres" {
		return nil, nil
	}
	pick, args := src.pick(brandID, id, micros(db.Now()), limit)
	rows, err := db.query(ctx, `SELECT m.id, m.user_id, u.phone_number, u.is_deleted, u.messaging_consent,
	COALESCE(u.time_zone, ''), COALESCE(u.state_code, '') FROM messages m JOIN users u ON u.id = m.user_id
	WHERE m.id IN (`+pick+`) ORDER BY COALESCE(m.scheduled_at, 0), m.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read claim ahead: %w", err)
	}
	rs, err := scanRecipients(rows)
	if err != nil {
		return nil, fmt.Errorf("store: read claim ahead: %w", err)
	}
	for _, r := range rs {
		if r.Deleted || r.Consent != nil && !*r.Consent {
			return nil, nil // claimed in the transaction (see above)
		}
	}
	return &Ahead{recipients: rs}, nil
}

// claimAhead claims the first limit of ahead's messages that are still
// queued, unclaimed and due, with the source's guard, setting set, and
// returns their recipients as read, in id order.
func (tx *Tx) claimAhead(ctx context.Context, src queuedSource, brandID, id int64, limit int, set string, setArgs []any, ahead *Ahead) ([]CampaignRecipient, error) {
	rs := ahead.recipients
	if len(rs) > limit { // a send rate reserved fewer than were read
		rs = rs[:limit]
	}
	if len(rs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.MessageID
	}
	in, idArgs := inList(ids)
	args := append(append(setArgs, brandID), idArgs...)
	args = append(args, micros(tx.now))
	if src.guard != "" {
		args = append(args, id)
	}
	rows, err := tx.query(ctx, `UPDATE messages SET `+set+` WHERE +brand_id = ? AND id IN `+in+`
	AND status = 'queued' AND sending_at IS NULL AND COALESCE(scheduled_at, 0) <= ? `+src.guard+` RETURNING id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: claim queued messages: %w", err)
	}
	claimed, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("store: claim queued messages: %w", err)
	}
	ok := make(map[int64]bool, len(claimed))
	for _, id := range claimed {
		ok[id] = true
	}
	out := make([]CampaignRecipient, 0, len(claimed))
	for _, r := range rs {
		if ok[r.MessageID] {
			out = append(out, r)
		}
	}
	sortRecipients(out)
	return out, nil
}
