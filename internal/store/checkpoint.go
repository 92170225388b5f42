package store

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// SQLite's WAL checkpoints run beside the single writer (issue #19).
// Left to SQLite, the commit that takes the WAL past 1,000 pages copies
// them into the database file and syncs both files itself, on the writer,
// and every write queued behind it waits: measured, that was most of the
// inbound p99 (4.7–6.1 ms; 2.6–3.7 with the checkpoints beside the
// writer, docs/performance.md).
//
// A PASSIVE checkpoint on a connection of its own never waits for the
// writer or the readers, and the writer restarts the WAL from its start
// once it finds it all copied. Under writes that never pause, though, it
// may never find that, and the WAL would grow without end: the writer
// still checkpoints itself, but only past walBackstopPages, where it finds
// nearly every page copied already.
const (
	// checkpointEvery is how often the WAL's new pages are copied.
	checkpointEvery = 200 * time.Millisecond
	// walBackstopPages is the writer's own wal_autocheckpoint (40 MiB of
	// 4 KiB pages).
	walBackstopPages = 10000
)

// checkpointer copies the WAL's pages into the database file every
// checkpointEvery, on a connection of its own, until closed.
type checkpointer struct {
	db       *sql.DB
	owner    *DB // told of a full disk; its logger reports failures
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func startCheckpointer(dsn string, owner *DB) (*checkpointer, error) {
	db, err := openSQLiteDB(dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	c := &checkpointer{db: db, owner: owner, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		// Busy: the writer is running its backstop checkpoint; the next
		// tick goes on.
		_, err := c.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		if IsUnavailable(err) {
			continue
		}
		c.owner.noteWrite(err)
		// Through the store's logger (JSON in production), and once per
		// change, not every tick of a disk that stays full (issue #31
		// item 15).
		switch {
		case err != nil && !failing:
			c.owner.logger.Warn("store: WAL checkpoint fails; the WAL grows until it succeeds", "error", err.Error())
		case err == nil && failing:
			c.owner.logger.Info("store: WAL checkpoint succeeds again")
		}
		failing = err != nil
	}
}

// close stops the checkpointer; it may be called again, as DB.Close may.
func (c *checkpointer) close() error {
	c.stopOnce.Do(func() { close(c.stop) })
	<-c.done
	return c.db.Close()
}
