package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AutoCollectingBrands reports which of the brands have an
// is_auto_collected custom data field (D20): only their texts are
// extracted from.
func (db *DB) AutoCollectingBrands(ctx context.Context, brandIDs []int64) (map[int64]bool, error) {
	out := make(map[int64]bool, len(brandIDs))
	if len(brandIDs) == 0 {
		return out, nil
	}
	args := []any{true}
	for _, id := range brandIDs {
		args = append(args, id)
	}
	rows, err := db.query(ctx, `SELECT DISTINCT brand_id FROM custom_fields WHERE is_auto_collected = ?
	AND brand_id IN (?`+strings.Repeat(", ?", len(brandIDs)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: auto-collected fields: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: auto-collected fields: %w", err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

// LastChanges returns when each of fields (history field names, such as
// "custom_data.size") of the user last changed, by field; a field that
// never changed is absent. An extraction reads it in its writing
// transaction, so it never overwrites a value set after the message it
// read (D20).
func (tx *Tx) LastChanges(ctx context.Context, brandID, userID int64, fields []string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(fields))
	if len(fields) == 0 {
		return out, nil
	}
	args := make([]any, 0, 2+len(fields))
	args = append(args, brandID, userID)
	for _, f := range fields {
		args = append(args, f)
	}
	rows, err := tx.query(ctx, `SELECT field, MAX(occurred_at) FROM user_history WHERE brand_id = ? AND user_id = ?
	AND field IN (?`+strings.Repeat(", ?", len(fields)-1)+`) GROUP BY field`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: last changes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var field string
		var at int64
		if err := rows.Scan(&field, &at); err != nil {
			return nil, fmt.Errorf("store: last changes: %w", err)
		}
		out[field] = fromMicros(at)
	}
	return out, rows.Err()
}

// ExtractionPos is a place in the order the extraction sweep reads inbound
// texts in (D20, #19). On SQLite it is a message id: its one writer
// commits ids in order, so every id up to the highest one seen is already
// visible. On PostgreSQL ids are taken before their transactions commit, and
// a text with a lower id can appear after one with a higher id: the order is
// then (Xact, ID), Xact being the id of the transaction that stored the text,
// and the sweep reads only texts of transactions that have all ended, so
// none can appear behind the cursor.
type ExtractionPos struct {
	Xact uint64 // PostgreSQL's transaction id (xid8); 0 on SQLite
	ID   int64
}

// InboundText is an inbound message as the extraction sweep reads it.
type InboundText struct {
	Pos             ExtractionPos
	BrandID, UserID int64
	Body            string
}

// ExtractionBatch is what the sweep reads in one go: the texts after the
// cursor From, oldest first, and End, where the cursor goes once they are
// all done (past the outbound messages after them on SQLite). End equals
// From when nothing new was stored. Claimed says another sweeper holds the
// batch at From.
type ExtractionBatch struct {
	From, End ExtractionPos
	Texts     []InboundText
	Claimed   bool
}

// ReadExtractionBatch reads up to limit inbound texts after the
// extraction cursor, from the reader pool: reading takes no lock, and the
// cursor is only moved by a guarded write (ClaimExtraction,
// AdvanceExtraction).
func (db *DB) ReadExtractionBatch(ctx context.Context, limit int) (*ExtractionBatch, error) {
	b := &ExtractionBatch{}
	var xact string
	var claimed int64
	if err := db.queryRow(ctx, `SELECT `+db.cursorXact()+`, message_id, claimed_until FROM extraction_cursor WHERE id = 1`).
		Scan(&xact, &b.From.ID, &claimed); err != nil {
		return nil, fmt.Errorf("store: extraction cursor: %w", err)
	}
	var err error
	if b.From.Xact, err = parseXact(xact); err != nil {
		return nil, err
	}
	b.Claimed = claimed > micros(db.Now())
	var rows *sql.Rows
	if db.engine == "postgres" {
		// Only transactions that have all ended (below the snapshot's
		// xmin): a text stored by one still running will sort after
		// the cursor when it appears.
		rows, err = db.query(ctx, `SELECT xact::text, id, brand_id, user_id, body FROM messages
		WHERE direction = 'inbound' AND xact IS NOT NULL AND (xact, id) > (?::xid8, ?) AND xact < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY xact, id LIMIT ?`, xact, b.From.ID, limit)
	} else {
		// The highest id first: any message stored after this read gets a
		// higher one, so the cursor may pass every id up to it.
		var top sql.NullInt64
		if err := db.queryRow(ctx, `SELECT max(id) FROM messages`).Scan(&top); err != nil {
			return nil, fmt.Errorf("store: extraction batch: %w", err)
		}
		if b.End.ID = max(b.From.ID, top.Int64); b.End == b.From {
			return b, nil // nothing stored since
		}
		rows, err = db.query(ctx, `SELECT '0', id, brand_id, user_id, body FROM messages
		WHERE id > ? AND id <= ? AND direction = 'inbound' ORDER BY id LIMIT ?`, b.From.ID, b.End.ID, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("store: extraction batch: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t InboundText
		if err := rows.Scan(&xact, &t.Pos.ID, &t.BrandID, &t.UserID, &t.Body); err != nil {
			return nil, fmt.Errorf("store: extraction batch: %w", err)
		}
		if t.Pos.Xact, err = parseXact(xact); err != nil {
			return nil, err
		}
		b.Texts = append(b.Texts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: extraction batch: %w", err)
	}
	if n := len(b.Texts); n == limit || db.engine == "postgres" && n > 0 {
		b.End = b.Texts[n-1].Pos
	} else if db.engine == "postgres" {
		b.End = b.From
	}
	return b, nil
}

// cursorXact is the cursor's transaction id column, as text.
func (db *DB) cursorXact() string {
	if db.engine == "postgres" {
		return "xact::text"
	}
	return "'0'"
}

func parseXact(s string) (uint64, error) {
	x, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: extraction cursor: transaction id %q: %w", s, err)
	}
	return x, nil
}

// cursorAt is the guard of every move of the cursor: it is still at p.
func (db *DB) cursorAt(p ExtractionPos) (string, []any) {
	if db.engine == "postgres" {
		return `id = 1 AND xact = ?::xid8 AND message_id = ?`, []any{strconv.FormatUint(p.Xact, 10), p.ID}
	}
	return `id = 1 AND message_id = ?`, []any{p.ID}
}

// cursorSet sets the cursor to p and its claim to until (zero: none).
func (db *DB) cursorSet(p ExtractionPos, until time.Time) (string, []any) {
	var u int64
	if !until.IsZero() {
		u = micros(until)
	}
	if db.engine == "postgres" {
		return `xact = ?::xid8, message_id = ?, claimed_until = ?`, []any{strconv.FormatUint(p.Xact, 10), p.ID, u}
	}
	return `message_id = ?, claimed_until = ?`, []any{p.ID, u}
}

// ClaimExtraction claims the batch after from until the time until, if
// the cursor is still at from and no other sweeper's claim is running:
// two nodes never both ask the extractor about the same texts. It reports
// whether this caller has the claim.
func (db *DB) ClaimExtraction(ctx context.Context, from ExtractionPos, until time.Time) (bool, error) {
	where, args := db.cursorAt(from)
	args = append([]any{micros(until)}, append(args, micros(db.Now()))...)
	res, err := db.write.ExecContext(ctx, db.rebind(`UPDATE extraction_cursor SET claimed_until = ? WHERE `+where+` AND claimed_until <= ?`), args...)
	if err != nil {
		return false, fmt.Errorf("store: claim extraction batch: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SkipExtraction moves the cursor from from to to when nothing between
// them needs an extraction, unless another sweeper has moved it or holds
// a claim on it. It reports whether the cursor moved.
func (db *DB) SkipExtraction(ctx context.Context, from, to ExtractionPos) (bool, error) {
	set, args := db.cursorSet(to, time.Time{})
	where, wargs := db.cursorAt(from)
	args = append(append(args, wargs...), micros(db.Now()))
	res, err := db.write.ExecContext(ctx, db.rebind(`UPDATE extraction_cursor SET `+set+` WHERE `+where+` AND claimed_until <= ?`), args...)
	if err != nil {
		return false, fmt.Errorf("store: move extraction cursor: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseExtraction gives up a claim on the batch after at, so that the
// next sweep need not wait for it to run out.
func (db *DB) ReleaseExtraction(ctx context.Context, at ExtractionPos) error {
	where, args := db.cursorAt(at)
	if _, err := db.write.ExecContext(ctx, db.rebind(`UPDATE extraction_cursor SET claimed_until = 0 WHERE `+where), args...); err != nil {
		return fmt.Errorf("store: release extraction batch: %w", err)
	}
	return nil
}

// ErrCursorMoved is AdvanceExtraction's error when the cursor is no longer
// where the batch began: another sweeper wrote the batch after this one's
// claim ran out. The transaction must roll back.
var ErrCursorMoved = errors.New("store: the extraction cursor moved")

// AdvanceExtraction moves the cursor from from to to in tx, with the
// values written for the texts up to it, and holds the claim until until
// (zero: releases it): a crash redoes at most the texts after to.
func (tx *Tx) AdvanceExtraction(ctx context.Context, from, to ExtractionPos, until time.Time) error {
	set, args := tx.db.cursorSet(to, until)
	where, wargs := tx.db.cursorAt(from)
	res, err := tx.exec(ctx, `UPDATE extraction_cursor SET `+set+` WHERE `+where, append(args, wargs...)...)
	if err != nil {
		return fmt.Errorf("store: advance extraction cursor: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return ErrCursorMoved
	}
	return nil
}

// ExtractionSwept reports whether the extraction sweep has passed the
// message id: its extraction, if it needed one, is written.
func (db *DB) ExtractionSwept(ctx context.Context, messageID int64) (bool, error) {
	q := `SELECT count(*) FROM extraction_cursor c WHERE c.message_id >= ?`
	if db.engine == "postgres" {
		q = `SELECT count(*) FROM extraction_cursor c, messages m WHERE m.id = ? AND m.xact IS NOT NULL AND (m.xact, m.id) <= (c.xact, c.message_id)`
	}
	var n int
	if err := db.queryRow(ctx, q, messageID).Scan(&n); err != nil {
		return false, fmt.Errorf("store: extraction swept: %w", err)
	}
	return n == 1, nil
}
