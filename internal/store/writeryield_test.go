package store

import (
	"context"
	"testing"

	"github.com/parleyhq/parley"
)

// TestForegroundTxHoldsBackgroundWriters (D21, issue #33): while an
// import's batch (WithForegroundOriginTx) waits for SQLite's writer or
// runs, it counts as a write background writers give way to, as a queued
// group commit does; once it ends, they go on at once.
func TestForegroundTxHoldsBackgroundWriters(t *testing.T) {
	db := planDB(t)
	ctx := context.Background()
	if err := db.WithForegroundOriginTx(ctx, parley.Origin{Source: parley.SourceImport}, func(tx *Tx) error {
		if n := db.fgWaiting.Load(); n != 1 {
			t.Errorf("inside the import's batch %d writes are waited on, want 1", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := db.fgWaiting.Load(); n != 0 {
		t.Errorf("after the batch %d writes are waited on, want 0", n)
	}
}
