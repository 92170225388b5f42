package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// SimRecord is the sim provider's carrier state for one message.
type SimRecord struct {
	ProviderID   string
	MessageID    int64
	FinalStatus  string
	ErrorCode    string
	ErrorMessage string
	DueAt        time.Time
}

// SimAccept records rec unless a record for its message exists, and returns
// the record that is stored: the sim's idempotency by message id. fresh is
// true when rec was new.
func (db *DB) SimAccept(ctx context.Context, rec SimRecord) (SimRecord, bool, error) {
	res, err := db.write.ExecContext(ctx, db.rebind(`INSERT INTO sim_messages (provider_id, message_id, final_status,
	error_code, error_message, due_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO NOTHING`),
		rec.ProviderID, rec.MessageID, rec.FinalStatus, nullIfEmpty(rec.ErrorCode), nullIfEmpty(rec.ErrorMessage), micros(rec.DueAt))
	if err != nil {
		return rec, false, fmt.Errorf("store: sim accept: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return rec, true, nil
	}
	var stored SimRecord
	var code, msg *string
	var due int64
	err = db.write.QueryRowContext(ctx, db.rebind(`SELECT provider_id, message_id, final_status, error_code, error_message, due_at
	FROM sim_messages WHERE message_id = ?`), rec.MessageID).Scan(&stored.ProviderID, &stored.MessageID, &stored.FinalStatus, &code, &msg, &due)
	if err != nil {
		return rec, false, fmt.Errorf("store: sim accept: %w", err)
	}
	if code != nil {
		stored.ErrorCode = *code
	}
	if msg != nil {
		stored.ErrorMessage = *msg
	}
	stored.DueAt = fromMicros(due)
	return stored, false, nil
}

// SimCursor is where a reading of due records stopped: the due_at and
// message id of the last one read (zero: from the start).
type SimCursor struct {
	DueAt     time.Time
	MessageID int64
}

// SimDue returns up to limit records whose final status is due by now and
// not yet reported, after the cursor, in the order of due_at then
// message id.
func (db *DB) SimDue(ctx context.Context, now time.Time, after SimCursor, limit int) ([]SimRecord, error) {
	q := `SELECT provider_id, message_id, final_status, COALESCE(error_code, ''), COALESCE(error_message, ''), due_at
	FROM sim_messages WHERE reported = FALSE AND due_at <= ?`
	args := []any{micros(now)}
	if after != (SimCursor{}) {
		// A row value: both engines walk sim_messages_pending from it.
		q += ` AND (due_at, message_id) > (?, ?)`
		args = append(args, micros(after.DueAt), after.MessageID)
	}
	rows, err := db.query(ctx, q+` ORDER BY due_at, message_id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: sim due: %w", err)
	}
	defer rows.Close()
	var out []SimRecord
	for rows.Next() {
		var r SimRecord
		var due int64
		if err := rows.Scan(&r.ProviderID, &r.MessageID, &r.FinalStatus, &r.ErrorCode, &r.ErrorMessage, &due); err != nil {
			return nil, err
		}
		r.DueAt = fromMicros(due)
		out = append(out, r)
	}
	return out, rows.Err()
}

// SimMarkReported records that the final statuses of the records of
// messageIDs were reported.
func (db *DB) SimMarkReported(ctx context.Context, messageIDs []int64) error {
	if len(messageIDs) == 0 {
		return nil
	}
	in, args := inList(messageIDs)
	db.YieldWriter(ctx) // reports: the API's writes first
	_, err := db.write.ExecContext(ctx, db.rebind(`UPDATE sim_messages SET reported = TRUE WHERE message_id IN `+in), args...)
	if err != nil {
		return fmt.Errorf("store: sim reported: %w", err)
	}
	return nil
}

// SimAcceptMany is SimAccept for many records in one statement: the
// records of messages the ledger holds already are left as they are. It
// returns the stored record of each message, in the order of recs, and
// how many were new.
func (db *DB) SimAcceptMany(ctx context.Context, recs []SimRecord) ([]SimRecord, int, error) {
	db.YieldWriter(ctx) // a batch sent outside a hand-over: the API's writes first
	return simAcceptMany(ctx, func(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
		return db.write.QueryContext(ctx, db.rebind(q), args...)
	}, recs)
}

// SimAcceptMany is DB.SimAcceptMany inside tx: the simulator's
// acceptance of a campaign's batch commits with its hand-over (issue #31
// item 12), so a STOP either comes before both or after both.
func (tx *Tx) SimAcceptMany(ctx context.Context, recs []SimRecord) ([]SimRecord, int, error) {
	return simAcceptMany(ctx, tx.query, recs)
}

func simAcceptMany(ctx context.Context, query func(ctx context.Context, q string, args ...any) (*sql.Rows, error), recs []SimRecord) ([]SimRecord, int, error) {
	if len(recs) == 0 {
		return nil, 0, nil
	}
	var q strings.Builder
	q.WriteString(`INSERT INTO sim_messages (provider_id, message_id, final_status, error_code, error_message, due_at) VALUES `)
	args := make([]any, 0, 6*len(recs))
	for i, r := range recs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?)")
		args = append(args, r.ProviderID, r.MessageID, r.FinalStatus, nullIfEmpty(r.ErrorCode), nullIfEmpty(r.ErrorMessage), micros(r.DueAt))
	}
	q.WriteString(` ON CONFLICT (message_id) DO NOTHING RETURNING message_id`)
	rows, err := query(ctx, q.String(), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: sim accept: %w", err)
	}
	fresh, err := collectIDs(rows)
	if err != nil {
		return nil, 0, fmt.Errorf("store: sim accept: %w", err)
	}
	out := append([]SimRecord(nil), recs...)
	if len(fresh) == len(recs) {
		return out, len(fresh), nil
	}
	// A repeated send (after a crash) answers with what the ledger holds.
	isFresh := make(map[int64]bool, len(fresh))
	for _, id := range fresh {
		isFresh[id] = true
	}
	var old []int64
	for _, r := range recs {
		if !isFresh[r.MessageID] {
			old = append(old, r.MessageID)
		}
	}
	in, idArgs := inList(old)
	srows, err := query(ctx, `SELECT message_id, provider_id, final_status, COALESCE(error_code, ''),
	COALESCE(error_message, ''), due_at FROM sim_messages WHERE message_id IN `+in, idArgs...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: sim accept: %w", err)
	}
	defer srows.Close()
	stored := map[int64]SimRecord{}
	for srows.Next() {
		var r SimRecord
		var due int64
		if err := srows.Scan(&r.MessageID, &r.ProviderID, &r.FinalStatus, &r.ErrorCode, &r.ErrorMessage, &due); err != nil {
			return nil, 0, fmt.Errorf("store: sim accept: %w", err)
		}
		r.DueAt = fromMicros(due)
		stored[r.MessageID] = r
	}
	if err := srows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: sim accept: %w", err)
	}
	for i, r := range out {
		if s, ok := stored[r.MessageID]; ok && !isFresh[r.MessageID] {
			out[i] = s
		}
	}
	return out, len(fresh), nil
}
