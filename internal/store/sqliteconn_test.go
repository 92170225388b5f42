package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"
)

// cacheDB opens a one-connection SQLite pool whose connection keeps at most
// max statements, with a table t(n) holding 1, 2, 3.
func cacheDB(t *testing.T, max int) (*sql.DB, *sql.Conn) {
	t.Helper()
	c, err := sqlite.NewConnector("file:" + filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(cachingConnector{Connector: c, max: max})
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, q := range []string{`CREATE TABLE t (n INTEGER)`, `INSERT INTO t VALUES (1), (2), (3)`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return db, conn
}

func prepares(t *testing.T, conn *sql.Conn) int {
	t.Helper()
	var n int
	if err := conn.Raw(func(dc any) error { n = dc.(*cachingConn).prepares; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func sum(t *testing.T, conn *sql.Conn, q string) int {
	t.Helper()
	var n int
	if err := conn.QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A statement run again on the same connection is not parsed again.
func TestStmtCacheReusesStatements(t *testing.T) {
	_, conn := cacheDB(t, 10)
	ctx := context.Background()
	before := prepares(t, conn)
	for i := range 5 {
		if got := sum(t, conn, `SELECT sum(n) FROM t`); got != 6+i*10 {
			t.Fatalf("run %d: sum %d, want %d", i, got, 6+i*10)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO t VALUES (?)`, 10); err != nil {
			t.Fatal(err)
		}
	}
	if got := prepares(t, conn) - before; got != 2 {
		t.Fatalf("prepared %d statements for 2 queries run 5 times each", got)
	}
}

// While rows of a statement are open, the same query runs on its own
// statement; both give their rows.
func TestStmtCacheBusyStatement(t *testing.T) {
	_, conn := cacheDB(t, 10)
	ctx := context.Background()
	const q = `SELECT n FROM t ORDER BY n`
	outer, err := conn.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for outer.Next() {
		var n int
		if err := outer.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
		var inner int
		if err := conn.QueryRowContext(ctx, q).Scan(&inner); err != nil || inner != 1 {
			t.Fatalf("same query while its rows are open: %d, %v", inner, err)
		}
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2] != 3 {
		t.Fatalf("outer rows %v, want [1 2 3]", got)
	}
	before := prepares(t, conn)
	if n := sum(t, conn, `SELECT n FROM t ORDER BY n`); n != 1 {
		t.Fatalf("first row %d", n)
	}
	if prepares(t, conn) != before {
		t.Fatal("the statement was prepared again after its rows closed")
	}
}

// The cache keeps at most max statements; one evicted while its rows are
// open still reads them to the end, and is closed with them.
func TestStmtCacheEviction(t *testing.T) {
	_, conn := cacheDB(t, 2)
	ctx := context.Background()
	rows, err := conn.QueryContext(ctx, `SELECT n FROM t ORDER BY n`)
	if err != nil {
		t.Fatal(err)
	}
	sum(t, conn, `SELECT 1`)
	sum(t, conn, `SELECT 2`) // evicts the open one
	var n, count int
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		count++
	}
	if err := rows.Close(); err != nil || count != 3 {
		t.Fatalf("evicted statement's rows: %d rows, close: %v", count, err)
	}
	if err := conn.Raw(func(dc any) error {
		if c := dc.(*cachingConn); c.lru.Len() != 2 || len(c.stmts) != 2 {
			t.Fatalf("cache holds %d/%d statements, want 2", c.lru.Len(), len(c.stmts))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before := prepares(t, conn)
	sum(t, conn, `SELECT n FROM t ORDER BY n`)
	if prepares(t, conn) != before+1 {
		t.Fatal("an evicted statement was not prepared again")
	}
}

// Column types still reach database/sql through cached statements.
func TestStmtCacheColumnTypes(t *testing.T) {
	_, conn := cacheDB(t, 10)
	rows, err := conn.QueryContext(context.Background(), `SELECT n FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil || len(types) != 1 || types[0].DatabaseTypeName() != "INTEGER" {
		t.Fatalf("column types %v, %v", types, err)
	}
}
