package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The hand-over (issue #31 items 5 and 12): the last statement before a
// provider call. Consent (D8) and the frequency cap (D17) are decided in
// it, not when a batch was claimed, which may be long before the call: a
// STOP that commits before the hand-over stops the message, and of two
// campaigns' messages to one contact the second hand-over counts the
// first, sent or still with the provider. It sets handed_at: a queued
// message with handed_at set is in flight (migration 00026).

// HandOverCap is a brand's frequency cap as a hand-over applies it: a
// recipient may have fewer than Max MARKETING messages sent since Since
// or in flight.
type HandOverCap struct {
	Since time.Time
	Max   int
}

// HandOver says what a hand-over records and checks besides consent.
type HandOver struct {
	// Provider, when not empty, also records an attempt as MarkSending
	// does: a provider that is not idempotent, for a message no claim
	// recorded it for.
	Provider string
	// Cap, when not nil, refuses recipients at it (MARKETING messages).
	Cap *HandOverCap
}

// HandOverMessages marks those of the brand's queued messages ids whose
// recipient is not deleted, has not withdrawn consent and, with h.Cap, is
// under the cap as handed over, in one statement, and returns the ids it
// marked. The others are left as they were (RefusedHandOvers says why).
// With neither a cap nor an attempt to record, the statement only reads
// (handed_at stays NULL: only a cap counts messages in flight); tx still
// orders it against a STOP as below.
//
// On PostgreSQL the recipients' rows are locked first, in id order, and
// held until tx ends: two nodes handing over to one contact take turns,
// and the second's statement, which starts after the first committed,
// counts the first's message; a STOP (an update of the recipient) either
// committed before the statement, which then sees it, or waits for tx,
// so it is answered after whatever tx hands over (and a provider that
// accepts within tx, the simulator, has accepted). SQLite has one
// writer: its statement is atomic alone.
func (tx *Tx) HandOverMessages(ctx context.Context, brandID int64, ids []int64, h HandOver) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	in, idArgs := inList(ids)
	if tx.db.engine == "postgres" {
		// NO KEY UPDATE: a message inserted for the user (KEY SHARE) does
		// not wait for it; another hand-over to the user, or a change of
		// the user (a STOP), does.
		rows, err := tx.query(ctx, `SELECT id FROM users WHERE id IN (SELECT user_id FROM messages WHERE +brand_id = ? AND id IN `+in+`)
		ORDER BY id FOR NO KEY UPDATE`, append([]any{brandID}, idArgs...)...)
		if err != nil {
			return nil, fmt.Errorf("store: hand over: lock recipients: %w", err)
		}
		if _, err := collectIDs(rows); err != nil { // each row fetched is locked
			return nil, fmt.Errorf("store: hand over: lock recipients: %w", err)
		}
	}
	if h.Provider == "" && h.Cap == nil {
		// Nothing to record: with no cap, nobody counts what is in flight,
		// and the claim recorded the attempt. A read decides, and leaves
		// the rows unwritten (a campaign's batch writes them twice already).
		rows, err := tx.query(ctx, `SELECT id FROM messages WHERE +brand_id = ? AND id IN `+in+` AND status = 'queued'
		AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = messages.user_id AND (u.is_deleted OR u.messaging_consent = FALSE AND messages.auto_reply IS NULL))`,
			append([]any{brandID}, idArgs...)...)
		if err != nil {
			return nil, fmt.Errorf("store: hand over: %w", err)
		}
		return collectIDs(rows)
	}
	set, args := `handed_at = ?`, []any{micros(tx.now)}
	if h.Provider != "" {
		set += `, sending_at = ?, attempts = attempts + 1, provider = ?`
		args = append(args, micros(tx.now), h.Provider)
	}
	args = append(append(args, brandID), idArgs...)
	q := `UPDATE messages SET ` + set + ` WHERE +brand_id = ? AND id IN ` + in + ` AND status = 'queued'
	AND NOT EXISTS (SELECT 1 FROM users u WHERE u.id = messages.user_id AND (u.is_deleted OR u.messaging_consent = FALSE AND messages.auto_reply IS NULL))`
	if h.Cap != nil {
		q += ` AND (SELECT count(*) FROM messages o WHERE o.brand_id = messages.brand_id AND o.user_id = messages.user_id
		AND o.id <> messages.id AND o.direction = 'outbound' AND o.type = 'MARKETING'
		AND (o.status IN ('sent', 'delivered', 'undelivered') AND o.date_sent >= ? OR o.status = 'queued' AND o.handed_at IS NOT NULL)) < ?`
		args = append(args, micros(h.Cap.Since), h.Cap.Max)
	}
	rows, err := tx.query(ctx, q+` RETURNING id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: hand over: %w", err)
	}
	return collectIDs(rows)
}

// Deliverable reports whether the brand's message is queued and its
// recipient is neither deleted nor unsubscribed: the hand-over of a
// message that needs nothing recorded (an idempotent provider, no cap),
// read just before the provider call.
func (db *DB) Deliverable(ctx context.Context, brandID, messageID int64) (bool, error) {
	var n int
	err := db.queryRow(ctx, `SELECT count(*) FROM messages m JOIN users u ON u.id = m.user_id
	WHERE m.brand_id = ? AND m.id = ? AND m.status = 'queued' AND NOT u.is_deleted
	AND (u.messaging_consent IS NULL OR u.messaging_consent OR m.auto_reply IS NOT NULL)`, brandID, messageID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("store: deliverable: %w", err)
	}
	return n == 1, nil
}

// Refusal is why a hand-over left a message.
type Refusal int

// The refusals, in the order they are decided.
const (
	RefusedNotQueued    Refusal = iota // another path moved it: nothing to do
	RefusedDeleted                     // the recipient was deleted
	RefusedUnsubscribed                // the recipient withdrew consent
	RefusedCapped                      // the recipient is at the frequency cap
)

// RefusedHandOvers says, for each of the brand's messages ids that a
// hand-over left, why: read after it, in the same transaction.
func (tx *Tx) RefusedHandOvers(ctx context.Context, brandID int64, ids []int64) (map[int64]Refusal, error) {
	out := make(map[int64]Refusal, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	in, args := inList(ids)
	rows, err := tx.query(ctx, `SELECT m.id, m.status, u.is_deleted, u.messaging_consent OR m.auto_reply IS NOT NULL
	FROM messages m JOIN users u ON u.id = m.user_id WHERE +m.brand_id = ? AND m.id IN `+in, append([]any{brandID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: refused hand-overs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var status string
		var deleted bool
		var consent sql.NullBool
		if err := rows.Scan(&id, &status, &deleted, &consent); err != nil {
			return nil, fmt.Errorf("store: refused hand-overs: %w", err)
		}
		switch {
		case status != "queued":
			out[id] = RefusedNotQueued
		case deleted:
			out[id] = RefusedDeleted
		case consent.Valid && !consent.Bool:
			out[id] = RefusedUnsubscribed
		default:
			out[id] = RefusedCapped
		}
	}
	return out, rows.Err()
}
