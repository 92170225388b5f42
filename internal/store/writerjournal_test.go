package store

import (
	"path/filepath"
	"testing"
)

// SQLite's writer keeps its statement journals in memory (issue #35): a
// statement after a transaction's first copies every page it changes to
// one, and SQLite moved a journal past 64 KiB to a temporary file, two
// pwrite calls a page (29 % of the server's CPU in keyed creates). The
// readers keep the default: their large sorts may spill to disk.
func TestSQLiteWriterJournalsInMemory(t *testing.T) {
	db, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "parley.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const memory = 2 // PRAGMA temp_store: 0 default, 1 file, 2 memory
	var w, r int
	if err := db.write.QueryRowContext(t.Context(), "PRAGMA temp_store").Scan(&w); err != nil {
		t.Fatal(err)
	}
	if err := db.read.QueryRowContext(t.Context(), "PRAGMA temp_store").Scan(&r); err != nil {
		t.Fatal(err)
	}
	if w != memory {
		t.Errorf("the writer's temp_store is %d, want %d (memory): its statement journals spill to temporary files", w, memory)
	}
	if r == memory {
		t.Errorf("the readers' temp_store is memory: a large sort would be held in memory whole")
	}
}
