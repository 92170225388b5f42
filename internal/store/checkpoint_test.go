package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The WAL reaches the database file without the writer's help (issue
// #19): a megabyte written is copied in within a few checkpoint periods,
// although the writer's own checkpoint waits for 40 MiB. Without the
// checkpointer, the file stays as it was until the writer passes that
// (or SQLite's default 4 MiB).
func TestSQLiteCheckpointsBesideWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	db, err := Open(t.Context(), "sqlite:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	var pages int
	if err := db.write.QueryRowContext(t.Context(), "PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != walBackstopPages {
		t.Errorf("the writer checkpoints itself every %d pages, want %d (the backstop)", pages, walBackstopPages)
	}

	if _, err := db.write.ExecContext(t.Context(), "CREATE TABLE scratch (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	const size = 1 << 20
	if _, err := db.write.ExecContext(t.Context(), "INSERT INTO scratch VALUES (?)", []byte(strings.Repeat("x", size))); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() >= size {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file holds %d bytes 10 s after a 1 MiB write: the WAL was not checkpointed", st.Size())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
