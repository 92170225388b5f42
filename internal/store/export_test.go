package store

import (
	"context"

	"github.com/parleyhq/parley"
)

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

// MigrateTo applies the schema migrations up to version, for the tests of
// a migration on the data before it.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	p, err := db.migrations()
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}
