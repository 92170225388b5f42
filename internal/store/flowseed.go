package store

import (
	"context"
	"fmt"
	"time"
)

// SeedWaitingRuns writes n active runs of the flow at step 1, due at
// nextAt, and counts them entered and active: `parley bench --scenario
// flows` seeds a million waiting runs this way, which entering them one
// trigger at a time would take longer than the measurement. Their user ids
// (from 1<<40) are no contacts': nothing reads a run's contact before its
// step is due. Chunks of 50,000 a transaction keep the SQLite writer free
// for the server that runs meanwhile.
func (db *DB) SeedWaitingRuns(ctx context.Context, flowID int64, n int, nextAt time.Time) error {
	series := `WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i < ?) SELECT i FROM s`
	if db.engine == "postgres" {
		series = `SELECT generate_series(?::bigint, ?::bigint) AS i`
	}
	const chunk = 50000
	for from := 0; from < n; from += chunk {
		to := min(from+chunk, n) - 1
		err := db.WithTx(ctx, func(tx *Tx) error {
			if _, err := tx.exec(ctx, `INSERT INTO flow_runs (brand_id, flow_id, version, user_id, status, step, entered_at, next_at)
			SELECT f.brand_id, f.id, f.version, (1 << 40) + s.i, 'active', 1, ?, ? FROM flows f, (`+series+`) s WHERE f.id = ?`,
				micros(tx.now), micros(nextAt), from, to, flowID); err != nil {
				return err
			}
			_, err := tx.exec(ctx, `UPDATE flow_counts SET entered = entered + ?, active = active + ? WHERE flow_id = ?`,
				to-from+1, to-from+1, flowID)
			return err
		})
		if err != nil {
			return fmt.Errorf("store: seed waiting runs: %w", err)
		}
	}
	return nil
}
