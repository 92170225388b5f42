//go:build unix

package store_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/store"
)

// A new SQLite database and its -wal and -shm files are private to the
// server's user (0600), like the key file, whatever the umask: they hold
// phone numbers and sealed secrets.
func TestSQLiteFilesPrivate(t *testing.T) {
	// Not parallel: the umask is the process's. 0 makes any 0644 default
	// show, and proves the mode does not rest on the caller's umask.
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	path := filepath.Join(t.TempDir(), "data", "parley.db")
	db, err := store.Open(t.Context(), "sqlite:"+path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(t.Context()); err != nil { // writes: the WAL and its index exist after
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(p), err)
			continue
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(p), got)
		}
	}
}
