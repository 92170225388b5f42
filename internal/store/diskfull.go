package store

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A full disk (issue #31 item 15) fails writes while reads go on: SQLite
// answers SQLITE_FULL once its WAL cannot grow, PostgreSQL 53100. The DB
// remembers that a write failed so, and until a write succeeds again
// Ping probes with a write (/readyz answers 503) and AwaitWritable holds
// the job workers' outcomes, which River could not record either.

// probeEvery is how often AwaitWritable tries a write while the disk is
// full: what recovery waits for at most once space is back.
const probeEvery = 200 * time.Millisecond

// IsStorageFull reports whether err means a disk is full — the
// database's or the media's (ENOSPC, a quota): a write may succeed once
// space is freed (503), unlike a bug (500).
func IsStorageFull(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgerrcode.DiskFull {
		return true
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// noteWrite makes the DB suspect when err is a full disk's. Only a
// probe clears it: a transaction that commits may have written nothing.
// Each change is logged once, not per write.
func (db *DB) noteWrite(err error) {
	if IsStorageFull(err) && db.full.CompareAndSwap(false, true) {
		db.logger.Error("store: the disk is full: writes fail until space is freed", "error", err.Error())
	}
}

// errNoSpaceLeft is a probe's failure when its write succeeded but the
// filesystem is all but full (freespace.go).
var errNoSpaceLeft = fmt.Errorf("store: less than %d bytes free beside the database: %w", minFreeBytes, syscall.ENOSPC)

// probeWrite rewrites the probe row: the DB is no longer suspect once
// that succeeds.
func (db *DB) probeWrite(ctx context.Context) error {
	_, err := db.write.ExecContext(ctx, db.rebind(`UPDATE write_probe SET probed_at = ? WHERE id = 1`), micros(time.Now()))
	if err == nil && !db.enoughSpace() {
		err = errNoSpaceLeft
	}
	if err != nil {
		db.noteWrite(err)
		return err
	}
	if db.full.CompareAndSwap(true, false) {
		db.logger.Info("store: writes succeed again")
	}
	return nil
}

// Ping checks that the database answers and, after a write failed for
// want of space, that a write succeeds again.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.read.PingContext(ctx); err != nil {
		return err
	}
	if db.full.Load() {
		return db.probeWrite(ctx)
	}
	return nil
}

// AwaitWritable returns at once unless err is a full disk's; then it
// returns once a write succeeds again, or when ctx is canceled. A job's
// deadline does not end the wait: River records a job's outcome with
// writes, and after three failed tries it leaves the job running until
// it is rescued as a crashed one (a minute later), which made sending
// resume about 55 s after space came back.
func (db *DB) AwaitWritable(ctx context.Context, err error) {
	if !IsStorageFull(err) {
		return
	}
	done := ctx.Done()
	for {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := db.probeWrite(pctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-time.After(probeEvery):
		case <-done:
			if ctx.Err() == context.Canceled {
				return // the node stops
			}
			done = nil // only the job's deadline: wait on
		}
	}
}
