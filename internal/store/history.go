package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/parleyhq/parley"
)

// historyChunk bounds the entries of one insert: an import's batch of
// 500 new contacts with consent and three custom values writes its 2,000
// entries in one statement (18,000 parameters, inside both engines'
// limits) rather than four (issue #35).
const historyChunk = 2000

const historyColumns = `id, user_id, field, old_value, new_value, source, detail, message_id, occurred_at`

// InsertHistory appends entries to the contacts' history (D18) at the
// transaction's time, in one statement per chunk, and adds their consent
// changes to the dashboard's hourly counts in one more. An entry without
// a Source takes the transaction's Origin: its source, detail and message.
func (tx *Tx) InsertHistory(ctx context.Context, brandID int64, entries []parley.HistoryEntry) error {
	o := tx.historyOrigin()
	var ins, outs int64
	for start := 0; start < len(entries); start += historyChunk {
		batch := entries[start:min(start+historyChunk, len(entries))]
		var q strings.Builder
		q.WriteString(`INSERT INTO user_history (brand_id, user_id, field, old_value, new_value, source, detail,
	message_id, occurred_at) VALUES `)
		args := make([]any, 0, 9*len(batch))
		for i, e := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
			source, detail, msg := e.Source, e.Detail, e.MessageID
			if source == "" {
				source, detail = o.Source, o.Detail
				if o.MessageID != 0 {
					msg = &o.MessageID
				}
			}
			var m sql.NullInt64
			if msg != nil {
				m = sql.NullInt64{Int64: *msg, Valid: true}
			}
			newV := jsonText(e.NewValue)
			if e.Field == parley.HistoryFieldConsent {
				switch newV.String {
				case "true":
					ins++
				case "false":
					outs++
				}
			}
			args = append(args, brandID, e.UserID, e.Field, jsonText(e.OldValue), newV,
				source, detail, m, micros(tx.now))
		}
		if _, err := tx.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("store: history: %w", err)
		}
	}
	return tx.addConsentHourly(ctx, brandID, ins, outs)
}

// historyOrigin is the Origin the transaction's history entries take
// when they name none: the transaction's, from the API when unset.
func (tx *Tx) historyOrigin() parley.Origin {
	o := tx.origin
	if o.Source == "" {
		o.Source = parley.SourceAPI
	}
	return o
}

// addConsentHourly adds opt-ins and opt-outs at the transaction's time to
// the brand's hourly counts (consent_hourly, which the dashboard reads).
// Every entry of an insert has the same time, so the whole insert is one
// upsert (migration 00052; a trigger upserted once per entry before).
func (tx *Tx) addConsentHourly(ctx context.Context, brandID, ins, outs int64) error {
	if ins == 0 && outs == 0 {
		return nil
	}
	_, err := tx.exec(ctx, `INSERT INTO consent_hourly (brand_id, hour, opt_ins, opt_outs) VALUES (?, ?, ?, ?)
	ON CONFLICT (brand_id, hour) DO UPDATE SET opt_ins = consent_hourly.opt_ins + excluded.opt_ins,
		opt_outs = consent_hourly.opt_outs + excluded.opt_outs`, brandID, micros(tx.now)/3600000000, ins, outs)
	if err != nil {
		return fmt.Errorf("store: hourly consent: %w", err)
	}
	return nil
}

// jsonText stores a JSON value as text; nil (and JSON null) as NULL.
func jsonText(v []byte) sql.NullString {
	if len(v) == 0 || string(v) == "null" {
		return sql.NullString{}
	}
	return sql.NullString{String: string(v), Valid: true}
}

// ListHistory returns up to limit entries of a user's history after the
// entry afterID, oldest first; field "" means every field.
func (db *DB) ListHistory(ctx context.Context, brandID, userID int64, field string, afterID int64, limit int) ([]*parley.HistoryEntry, error) {
	q := `SELECT ` + historyColumns + ` FROM user_history WHERE brand_id = ? AND user_id = ? AND id > ?`
	args := []any{brandID, userID, afterID}
	if field != "" {
		q += ` AND field = ?`
		args = append(args, field)
	}
	q += ` ORDER BY id LIMIT ?`
	rows, err := db.query(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	return collect(rows, scanHistory)
}

// EachHistory calls fn with every history entry of the brand, deleted
// users' included, with the user's phone number, by user and then oldest
// first, streaming: an export holds one entry at a time.
func (db *DB) EachHistory(ctx context.Context, brandID int64, fn func(e *parley.HistoryEntry, phone string) error) error {
	rows, err := db.query(ctx, `SELECT h.id, h.user_id, h.field, h.old_value, h.new_value, h.source, h.detail, h.message_id,
		h.occurred_at, u.phone_number FROM user_history h JOIN users u ON u.id = h.user_id
		WHERE h.brand_id = ? ORDER BY h.user_id, h.id`, brandID)
	if err != nil {
		return fmt.Errorf("store: history: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var phone string
		e, err := scanHistory(func(dest ...any) error { return rows.Scan(append(dest, &phone)...) })
		if err != nil {
			return err
		}
		if err := fn(e, phone); err != nil {
			return err
		}
	}
	return rows.Err()
}

func scanHistory(scan func(...any) error) (*parley.HistoryEntry, error) {
	var e parley.HistoryEntry
	var oldV, newV sql.NullString
	var msg sql.NullInt64
	var at int64
	if err := scan(&e.ID, &e.UserID, &e.Field, &oldV, &newV, &e.Source, &e.Detail, &msg, &at); err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	if oldV.Valid {
		e.OldValue = []byte(oldV.String)
	}
	if newV.Valid {
		e.NewValue = []byte(newV.String)
	}
	if msg.Valid {
		e.MessageID = &msg.Int64
	}
	e.OccurredAt = parley.Time{Time: fromMicros(at)}
	return &e, nil
}
