package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// HasAutoCollectedFields reports whether the brand has an is_auto_collected
// custom data field (D20): only then does an inbound text queue an
// extraction. It reads from the reader pool, outside the inbound
// message's write transaction.
func (db *DB) HasAutoCollectedFields(ctx context.Context, brandID int64) (bool, error) {
	var one int
	err := db.queryRow(ctx, `SELECT 1 FROM custom_fields WHERE brand_id = ? AND is_auto_collected = ? LIMIT 1`, brandID, true).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: auto-collected fields: %w", err)
	}
	return true, nil
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
