package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LockPacing returns the instant from which the brand's next send may
// start (send_pacing; zero when the brand never sent with a rate), and
// holds the brand's row until tx ends: on PostgreSQL a second node's
// reservation waits for this one and then reads what it wrote; SQLite's
// single writer serializes them anyway. The no-op UPDATE takes the lock
// portably (SQLite has no SELECT … FOR UPDATE).
func (tx *Tx) LockPacing(ctx context.Context, brandID int64) (time.Time, error) {
	for range 2 {
		var next int64
		err := tx.queryRow(ctx, `UPDATE send_pacing SET next_at = next_at WHERE brand_id = ? RETURNING next_at`, brandID).Scan(&next)
		if err == nil {
			if next == 0 {
				return time.Time{}, nil
			}
			return fromMicros(next), nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return time.Time{}, fmt.Errorf("store: lock pacing: %w", err)
		}
		if _, err := tx.exec(ctx, `INSERT INTO send_pacing (brand_id, next_at) VALUES (?, 0) ON CONFLICT (brand_id) DO NOTHING`, brandID); err != nil {
			return time.Time{}, fmt.Errorf("store: lock pacing: %w", err)
		}
	}
	return time.Time{}, errors.New("store: lock pacing: row vanished")
}

// SetPacing records the instant from which the brand's next send may
// start; call it after LockPacing in the same transaction.
func (tx *Tx) SetPacing(ctx context.Context, brandID int64, next time.Time) error {
	if _, err := tx.exec(ctx, `UPDATE send_pacing SET next_at = ? WHERE brand_id = ?`, micros(next), brandID); err != nil {
		return fmt.Errorf("store: set pacing: %w", err)
	}
	return nil
}
