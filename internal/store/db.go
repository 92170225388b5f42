// Package store is Parley's one database/sql implementation. Every method
// takes the brand id first and every query is scoped by it. SQL lives here and
// nowhere else; business rules live in internal/service.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations
var migrations embed.FS

// DB is a handle on Parley's database.
type DB struct {
	// write runs every transaction. On SQLite it holds a single connection:
	// SQLite has one writer at a time, and queueing in the pool is cheaper than
	// retrying SQLITE_BUSY.
	write *sql.DB
	// read serves queries outside transactions. On SQLite it is a pool of
	// read-only connections that WAL lets run beside the writer.
	read *sql.DB

	engine string // "sqlite"

	readStmts  stmtCache
	writeStmts stmtCache

	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Options tune the connection pools.
type Options struct {
	// MaxReadConns bounds the reader pool (SQLite); 0 picks 2×GOMAXPROCS, at least 4.
	MaxReadConns int
	// BusyTimeout is how long SQLite waits on a lock; 0 means 5 s.
	BusyTimeout time.Duration
}

// Open connects to the database named by dsn: "sqlite:PATH" (a file path,
// created with its directory when missing). It does not migrate.
func Open(ctx context.Context, dsn string, opt Options) (*DB, error) {
	path, ok := strings.CutPrefix(dsn, "sqlite:")
	if !ok {
		return nil, fmt.Errorf("store: unsupported database %q (want sqlite:PATH)", redact(dsn))
	}
	return openSQLite(ctx, path, opt)
}

func openSQLite(ctx context.Context, path string, opt Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: empty sqlite path")
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	busy := opt.BusyTimeout
	if busy == 0 {
		busy = 5 * time.Second
	}
	params := url.Values{}
	params.Add("_pragma", "journal_mode(WAL)")
	params.Add("_pragma", "synchronous(NORMAL)")
	params.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	params.Add("_pragma", "foreign_keys(1)")
	params.Add("_time_format", "sqlite")
	base := "file:" + path + "?"

	// IMMEDIATE takes the write lock at BEGIN, so a transaction that reads
	// then writes cannot fail half-way with SQLITE_BUSY.
	write, err := sql.Open("sqlite", base+params.Encode()+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}

	params.Add("_pragma", "query_only(1)")
	read, err := sql.Open("sqlite", base+params.Encode())
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	n := opt.MaxReadConns
	if n == 0 {
		n = max(4, 2*runtime.GOMAXPROCS(0))
	}
	read.SetMaxOpenConns(n)
	read.SetMaxIdleConns(n)
	read.SetConnMaxIdleTime(0)
	return newDB(write, read, "sqlite"), nil
}

func newDB(write, read *sql.DB, engine string) *DB {
	db := &DB{write: write, read: read, engine: engine, Now: time.Now}
	db.readStmts.db = read
	db.writeStmts.db = write
	return db
}

// Close closes both pools.
func (db *DB) Close() error {
	db.readStmts.close()
	db.writeStmts.close()
	return errors.Join(db.read.Close(), db.write.Close())
}

// Engine names the database engine: "sqlite".
func (db *DB) Engine() string { return db.engine }

// Writer is the pool transactions run on; the job queue shares it so a
// change and its jobs commit together.
func (db *DB) Writer() *sql.DB { return db.write }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.read.PingContext(ctx) }

// Migrate applies every pending schema migration.
func (db *DB) Migrate(ctx context.Context) error {
	fsys, err := fs.Sub(migrations, "migrations/"+db.engine)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, db.write, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("store: migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return db.writeStmts.prepareAll(ctx, hotWrites)
}

// Tx is a transaction with its clock fixed at its start, so every row it
// writes carries the same time.
type Tx struct {
	tx    *sql.Tx
	now   time.Time
	stmts *stmtCache
}

// SQL returns the underlying transaction, for the job queue's InsertTx.
func (tx *Tx) SQL() *sql.Tx { return tx.tx }

// Now is the transaction's time.
func (tx *Tx) Now() time.Time { return tx.now }

// WithTx runs fn in a transaction, committing when fn returns nil and
// rolling back otherwise.
func (db *DB) WithTx(ctx context.Context, fn func(tx *Tx) error) error {
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, now: db.Now().UTC().Truncate(time.Microsecond), stmts: &db.writeStmts}
	if err := fn(tx); err != nil {
		sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique constraint failure,
// judged by the driver's error code, never its text.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// redact hides a password in a database URL for error messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	return u.Redacted()
}

// micros converts a time to the stored form.
func micros(t time.Time) int64 { return t.UnixMicro() }

// fromMicros converts the stored form back.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
