package store

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/parleyhq/parley/internal/geo"
)

// defaultBackfillBatch bounds the users one backfill transaction reads, so
// a large table is filled in short transactions beside live traffic.
const defaultBackfillBatch = 1000

// backfillTimeZones fills users.time_zone (D17) for the users an older
// release stored: a postal_code and a NULL time_zone. The service sets the
// column on every write now, so this only ever finds work once.
//
// It is not a numbered migration because the zone comes from the embedded
// ZIP table, which SQL cannot read, and a goose Go migration would take a
// version number beside the SQL files. Instead Migrate runs it every time:
// it is idempotent (it fills only NULLs), resumable (it keeps no state; a
// run cut short leaves NULLs the next run fills) and walks the primary key
// in batches, each its own transaction. Once done, a run costs one pass over
// users; rows whose ZIP has no zone (unknown ZIPs, APO/FPO) stay NULL and
// are passed over again each time.
func (db *DB) backfillTimeZones(ctx context.Context) error {
	var after int64
	for {
		var last int64
		err := db.WithTx(ctx, func(tx *Tx) error {
			var err error
			last, err = tx.backfillTimeZoneBatch(ctx, after, db.backfillBatch)
			return err
		})
		if err != nil {
			return fmt.Errorf("store: backfill time_zone: %w", err)
		}
		if last == 0 {
			return nil
		}
		after = last
	}
}

// backfillTimeZoneBatch fills the zones of the next batch of users after
// id after and returns the last id it read, 0 when none was left.
func (tx *Tx) backfillTimeZoneBatch(ctx context.Context, after int64, batch int) (int64, error) {
	rows, err := tx.query(ctx, `SELECT id, postal_code FROM users
	WHERE id > ? AND postal_code IS NOT NULL AND time_zone IS NULL ORDER BY id LIMIT ?`, after, batch)
	if err != nil {
		return 0, err
	}
	var last int64
	zips := map[string][]any{} // zone → the batch's distinct ZIPs in it
	seen := map[string]bool{}
	for rows.Next() {
		var postal string
		if err := rows.Scan(&last, &postal); err != nil {
			rows.Close()
			return 0, err
		}
		zip := postal[:min(5, len(postal))] // D7: a ZIP+4 is located by its ZIP
		if seen[zip] {
			continue
		}
		seen[zip] = true
		if p, ok := geo.Lookup(zip); ok && p.TimeZone != "" {
			zips[p.TimeZone] = append(zips[p.TimeZone], zip)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	// One statement per zone, matching on the postal code the row has when
	// it is written: a user whose postal code changed since the read keeps
	// what the service wrote.
	for _, zone := range slices.Sorted(maps.Keys(zips)) {
		in := zips[zone]
		args := append([]any{zone, after, last}, in...)
		if _, err := tx.exec(ctx, `UPDATE users SET time_zone = ?
	WHERE id > ? AND id <= ? AND time_zone IS NULL AND postal_code IS NOT NULL
	AND substr(postal_code, 1, 5) IN (`+placeholders(len(in))+`)`, args...); err != nil {
			return 0, err
		}
	}
	return last, nil
}
