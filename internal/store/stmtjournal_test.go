package store

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A statement of a write transaction keeps its statement journal in
// memory up to stmtJournalSpill (issue #35), where SQLite's default moved
// one past 64 KiB to a temporary file: every create of a group commit
// did. Here a transaction's second statement changes ~250 KiB of pages
// that existed before it, and no temporary file is open while it holds
// them. Not parallel: another test's temporary file would count.
func TestSQLiteStatementJournalInMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the process's open files from /proc")
	}
	ctx := t.Context()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "parley.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// NOT NULL lets the UPDATE below fail half-way, so SQLite journals it.
	for _, q := range []string{
		`CREATE TABLE scratch (id INTEGER PRIMARY KEY, b BLOB NOT NULL)`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 120)
			INSERT INTO scratch SELECT i, zeroblob(2000) FROM n`,
	} {
		if _, err := db.write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	before := tempFiles(t)
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE scratch SET b = zeroblob(2001) WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE scratch SET b = zeroblob(1999)`); err != nil {
		t.Fatal(err)
	}
	if files := tempFiles(t); len(files) > len(before) {
		t.Errorf("a statement journal of ~250 KiB went to a temporary file (%s): it should stay in memory below %d bytes",
			strings.Join(files, ", "), stmtJournalSpill)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// tempFiles lists the files the process has open that are deleted: a
// temporary file of SQLite's is, from the moment it is opened.
func tempFiles(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasSuffix(target, " (deleted)") {
			out = append(out, target)
		}
	}
	return out
}
