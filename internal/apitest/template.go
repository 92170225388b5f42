package apitest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

// MigratedDatabaseURL is DatabaseURL for a test that opens its database
// with app.Open or app.OpenDB, which migrate it. On SQLite the file is
// already migrated, River's tables included: a copy of one database
// migrated once per test process, so that opening it finds nothing to do.
// Under -race, migrating a SQLite database costs about 1.5 s of CPU, which
// was most of what a SQLite test of the HTTP suite cost. On PostgreSQL
// it is a database of the test's own, copied from a migrated template
// (postgresCopy).
func MigratedDatabaseURL(t testing.TB, dir string) string {
	t.Helper()
	if Engine() == "postgres" {
		return postgresCopy(t)
	}
	files, err := sqliteTemplate()
	if err != nil {
		t.Fatalf("apitest: migrated SQLite template: %v", err)
	}
	path := filepath.Join(dir, "parley.db")
	for suffix, b := range files {
		// 0600, as the server creates its database files.
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return "sqlite:" + path
}

// sqliteTemplate migrates a new SQLite database and returns its files by
// suffix: the database and, if closing left one, its WAL.
var sqliteTemplate = sync.OnceValues(func() (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "parley-apitest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "parley.db")
	db, err := app.OpenDB(context.Background(), "sqlite:"+path, store.Options{})
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[suffix] = b
	}
	return files, nil
})
