package apitest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Environment variables that choose the database engine of the tests.
const (
	// EnvPostgresURL names a PostgreSQL database the tests may create
	// schemas in, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
	EnvPostgresURL = "PARLEY_TEST_POSTGRES_URL"
	// envEngine is set by Main when it runs the suite again on PostgreSQL.
	envEngine = "PARLEY_TEST_ENGINE"
)

// Engine is the database engine this test process runs on.
func Engine() string {
	if os.Getenv(envEngine) == "postgres" {
		return "postgres"
	}
	return "sqlite"
}

// Main runs a package's tests on SQLite and then, when EnvPostgresURL is
// set, the whole suite again on PostgreSQL in a child process, so one
// `go test` covers both engines. Use it as TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if Engine() == "postgres" {
		os.Exit(code)
	}
	if os.Getenv(EnvPostgresURL) == "" {
		fmt.Printf("apitest: %s is not set: the PostgreSQL variants of these tests were SKIPPED\n", EnvPostgresURL)
		os.Exit(code)
	}
	fmt.Println("apitest: running the suite again on PostgreSQL")
	cmd := exec.Command(os.Args[0], os.Args[1:]...)
	cmd.Env = append(os.Environ(), envEngine+"=postgres")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Printf("apitest: PostgreSQL run failed: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// DatabaseURL returns a fresh, empty database for one test: a SQLite file
// in dir, or on PostgreSQL a schema of its own (dropped when the test ends),
// so tests run in parallel without seeing each other.
func DatabaseURL(t testing.TB, dir string) string {
	t.Helper()
	if Engine() != "postgres" {
		return "sqlite:" + filepath.Join(dir, "parley.db")
	}
	return PostgresURL(t)
}

// PostgresURL creates a schema of the test's own in the database named by
// EnvPostgresURL, drops it when the test ends, and returns a URL whose
// search_path is that schema.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgresURL)
	if base == "" {
		t.Fatalf("%s is not set", EnvPostgresURL)
	}
	schema := randomName("t_")
	createForTest(t, base, "CREATE SCHEMA "+schema, "DROP SCHEMA "+schema+" CASCADE")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// randomName is prefix and 12 random hex digits: a schema's or a
// database's name no other test takes.
func randomName(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// createForTest runs create on the database at base, and drop when the
// test ends.
func createForTest(t testing.TB, base, create, drop string) {
	t.Helper()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(context.Background(), create); err != nil {
		t.Fatalf("%s: %v", create, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		db.ExecContext(context.Background(), drop)
	})
}
