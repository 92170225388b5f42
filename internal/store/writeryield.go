package store

import (
	"context"
	"time"

	"github.com/parleyhq/parley"
)

// Background writes give way to the API's (issue #21). SQLite has one
// writer: its connection pool hands the writer to whoever asked first, so
// a signed request's write queued behind a campaign's drain — a chunk of
// the resolution, a batch's claim, its outcomes, the simulator's ledger,
// a batch of delivery reports — waited for all of them in turn (p99
// 270 – 500 ms at 100,000 messages). A background writer now first waits
// while group commits (the API's writes, WithGroupTx) are queued, so an
// API write waits for one background transaction at most, the one that
// holds the writer when it arrives. The wait is bounded (yieldMax), so a
// steady stream of API writes slows a campaign but never stops it.
// PostgreSQL has many writers: nothing waits there.
//
// An import's batches are waited on too: the contacts they subscribe
// enter flows in them (D21: 100,000 within 10 s), so background writers —
// the flow runner writing those contacts' welcomes above all — give way
// to them as to the API's (WithForegroundOriginTx).

// yieldMax bounds one background write's wait for the API's writes.
const yieldMax = 200 * time.Millisecond

// yieldStep is how often a waiting background write looks again.
const yieldStep = 500 * time.Microsecond

// YieldWriter waits, on SQLite, until no group commit is queued or
// yieldMax has passed, or ctx ends. Call it before a background
// transaction (WithBackgroundTx does).
func (db *DB) YieldWriter(ctx context.Context) {
	if db.engine != "sqlite" || db.fgWaiting.Load() == 0 {
		return
	}
	deadline := time.Now().Add(yieldMax)
	t := time.NewTimer(yieldStep)
	defer t.Stop()
	for db.fgWaiting.Load() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			t.Reset(yieldStep)
		}
	}
}

// WithBackgroundTx is WithTx for a write nobody waits on (a campaign's
// resolution and batches, delivery reports): it gives way to the API's
// writes first (YieldWriter).
func (db *DB) WithBackgroundTx(ctx context.Context, fn func(tx *Tx) error) error {
	db.YieldWriter(ctx)
	return db.WithTx(ctx, fn)
}

// WithBackgroundOriginTx is WithOriginTx after YieldWriter.
func (db *DB) WithBackgroundOriginTx(ctx context.Context, o parley.Origin, fn func(tx *Tx) error) error {
	db.YieldWriter(ctx)
	return db.WithOriginTx(ctx, o, fn)
}

// WithForegroundOriginTx is WithOriginTx for a write someone watches that
// does not go through a group commit (an import's batch): while it waits
// for the writer and runs, background writes give way to it.
func (db *DB) WithForegroundOriginTx(ctx context.Context, o parley.Origin, fn func(tx *Tx) error) error {
	db.fgWaiting.Add(1)
	defer db.fgWaiting.Add(-1)
	return db.WithOriginTx(ctx, o, fn)
}
