package store

import "github.com/parleyhq/parley"

// Hot queries, for the test of their plans.
var (
	QueryUserByID        = qUserByID
	QuerySentByPID       = transitionQuery(parley.StatusSent, true, true)
	QueryInsertMessageTo = qInsertMessageToUser
)

// Rebind is rebind, for the test of plans.
func (db *DB) Rebind(q string) string { return db.rebind(q) }

// Committers is how many group commits run at once.
func (db *DB) Committers() int { return db.committers }

// Queued is how many writes wait for a group committer.
func (db *DB) Queued() int { return len(db.startGroup().queue) }

// SetBackfillBatch sets how many users one time-zone backfill transaction
// reads, so a test can make it take several.
func (db *DB) SetBackfillBatch(n int) { db.backfillBatch = n }
