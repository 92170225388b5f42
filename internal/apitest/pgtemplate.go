package apitest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"testing"

	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

// postgresCopy returns the URL of a database of the test's own, a copy
// of a template database migrated once, dropped when the test ends.
// Migrating a fresh schema took 3 – 6 s per test on the 2-core machine
// (fifty-odd migrations, each its own transaction, and River's), most of
// what a PostgreSQL test of the HTTP suite cost; copying the template
// takes about 0.4 s.
func postgresCopy(t testing.TB) string {
	t.Helper()
	base, err := url.Parse(os.Getenv(EnvPostgresURL))
	if err != nil || base.Host == "" {
		t.Fatalf("%s is not a postgres:// URL: %v", EnvPostgresURL, err)
	}
	tmpl, err := pgTemplate()
	if err != nil {
		t.Fatalf("apitest: migrated PostgreSQL template: %v", err)
	}
	name := randomName("t_")
	// FORCE: a test that failed may leave connections open.
	createForTest(t, base.String(), "CREATE DATABASE "+name+" TEMPLATE "+tmpl, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	u := *base
	u.Path = "/" + name
	return u.String()
}

// pgTemplate makes, once per test process, the migrated template database
// and returns its name. The name is the schema's digest, so the test
// processes of every package (and of checkouts with other migrations)
// share one template per schema; an advisory lock keeps two processes from
// building the same one at once. A template is marked done by IS_TEMPLATE,
// set last; one left half-built by a killed process is built again.
// Templates are not dropped: one per schema, about 10 MB each.
var pgTemplate = sync.OnceValues(func() (string, error) {
	ctx := context.Background()
	digest, err := store.MigrationsDigest("postgres")
	if err != nil {
		return "", err
	}
	river := "river"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				river += d.Version
			}
		}
	}
	sum := sha256.Sum256([]byte(digest + river))
	name := "parley_tmpl_" + hex.EncodeToString(sum[:8])

	base, err := url.Parse(os.Getenv(EnvPostgresURL))
	if err != nil {
		return "", err
	}
	admin, err := sql.Open("pgx", base.String())
	if err != nil {
		return "", err
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock(hashtext('parley apitest template'))`); err != nil {
		return "", err
	}
	defer conn.ExecContext(ctx, `SELECT pg_advisory_unlock(hashtext('parley apitest template'))`)

	var done sql.NullBool
	err = conn.QueryRowContext(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, name).Scan(&done)
	switch {
	case err == sql.ErrNoRows:
	case err != nil:
		return "", err
	case done.Bool:
		return name, nil
	default:
		if _, err := conn.ExecContext(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			return "", err
		}
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	u := *base
	u.Path = "/" + name
	db, err := app.OpenDB(ctx, u.String(), store.Options{})
	if err != nil {
		return "", fmt.Errorf("migrate %s: %w", name, err)
	}
	if err := db.Close(); err != nil {
		return "", err
	}
	// No connections: CREATE DATABASE … TEMPLATE refuses a template that
	// has any.
	if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true"); err != nil {
		return "", err
	}
	return name, nil
})
