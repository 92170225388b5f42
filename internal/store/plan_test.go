package store

import (
	"context"
	"os"
	"testing"
)

// planDB opens a migrated SQLite database for a test of query plans
// (SQLite's plans do not depend on statistics); the PostgreSQL side is
// measured by benchmarks.
func planDB(t *testing.T) *DB {
	t.Helper()
	if os.Getenv("PARLEY_TEST_ENGINE") == "postgres" {
		t.Skip("SQLite's plans")
	}
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+t.TempDir()+"/p.db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}
