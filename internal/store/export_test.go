package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/parleyhq/parley"
)

// Hot queries, for the test of their plans.
var (
	QueryUserByID        = qUserByID
	QuerySentByPID       = transitionQuery(parley.StatusSent, true, true)
	QueryInsertMessageTo = qInsertMessageToUser
)

// SplitCounts makes every SQLite count of an audience run in 3 parts of
// ids at once when its brand's ids span minIDs or more.
func (db *DB) SplitCounts(minIDs int64) { db.splitMinIDs = minIDs }

// Rebind is rebind, for the test of plans.
func (db *DB) Rebind(q string) string { return db.rebind(q) }

// Committers is how many group commits run at once.
func (db *DB) Committers() int { return db.committers }

// Queued is how many writes wait for a group committer.
func (db *DB) Queued() int { db.startGroup(&db.group); return len(db.group.queue) }

// MigrateTo applies the schema migrations up to version, for tests of a
// migration's data step.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	p, err := db.migrations()
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// MigrateDownTo undoes the migrations after version.
func (db *DB) MigrateDownTo(ctx context.Context, version int64) error {
	p, err := db.migrations()
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}

// Exec runs a statement on the writer, for fixtures the store has no
// method for (location.time_zone is filled by another change).
func (db *DB) Exec(ctx context.Context, q string, args ...any) error {
	_, err := db.write.ExecContext(ctx, db.rebind(q), args...)
	return err
}

// QueryRow reads a row on the writer, for what the store has no method for.
func (db *DB) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return db.write.QueryRowContext(ctx, db.rebind(q), args...)
}

// AudienceSQL is the query CountAudience runs, for the plans.
func (db *DB) AudienceSQL(ctx context.Context, brandID int64, a Audience) (string, []any, error) {
	where, args, err := db.audienceFilter(ctx, db, brandID, a, db.Now())
	return db.rebind(`SELECT count(*) FROM users u WHERE ` + where), args, err
}

// Plan explains q.
func (db *DB) Plan(ctx context.Context, q string, args []any) string {
	pre := "EXPLAIN QUERY PLAN "
	if db.engine == "postgres" {
		pre = "EXPLAIN (ANALYZE, BUFFERS) "
	}
	rows, err := db.read.QueryContext(ctx, pre+q, args...)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	out := ""
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		rows.Scan(ptrs...)
		out += fmt.Sprintln(vals...)
	}
	return out
}

// SetBackfillBatch sets how many users one time-zone backfill transaction
// reads, so a test can make it take several.
func (db *DB) SetBackfillBatch(n int) { db.backfillBatch = n }

// ReadersInUse is how many reader connections are busy now.
func (db *DB) ReadersInUse() int { return db.read.Stats().InUse }

// AdvisoryLock takes PostgreSQL's transaction-level advisory lock key in
// tx, as a writer of activity does (migration 00009).
func (tx *Tx) AdvisoryLock(ctx context.Context, key int64) error {
	_, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(?)`, key)
	return err
}
