// Package store is Parley's one database/sql implementation. Every method
// takes the brand id first and every query is scoped by it. SQL lives here and
// nowhere else; business rules live in internal/service.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"golang.org/x/sync/semaphore"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/secretbox"
)

//go:embed migrations
var migrations embed.FS

// DB is a handle on Parley's database.
type DB struct {
	// splitMinIDs, when not 0, replaces the const of countSplit (tests).
	splitMinIDs int64
	// audience bounds the reader connections segment queries hold at once
	// (audienceReaders).
	audience     *semaphore.Weighted
	audienceOnce sync.Once
	audienceMax  int64
	// write runs every transaction. On SQLite it holds a single connection:
	// SQLite has one writer at a time, and queueing in the pool is cheaper than
	// retrying SQLITE_BUSY.
	write *sql.DB
	// read serves queries outside transactions. On SQLite it is a pool of
	// read-only connections that WAL lets run beside the writer.
	read *sql.DB
	// readConns is the SQLite reader pool's size (AnalyzeContacts).
	readConns int

	engine string // "sqlite" or "postgres"

	rebound sync.Map    // query → query with the engine's placeholders
	group   groupCommit // small writes of signed requests, committed together
	// activityGroup commits the small writes that move a contact's
	// activity on PostgreSQL (WithActivityGroupTx).
	activityGroup groupCommit
	// committers is how many groups commit at once: one on SQLite, whose
	// single writer would only queue more; several on PostgreSQL, where
	// one goroutine running every write's statements in turn, a round trip
	// each, became the limit (issue #4).
	committers int
	// sigs indexes the recorded signatures on SQLite (replayindex.go);
	// nil on PostgreSQL, whose table has its own unique index.
	sigs *sigIndex
	// keys indexes the stored idempotency keys on SQLite (keyindex.go);
	// nil on PostgreSQL, whose table has its own unique index.
	keys *keyIndex
	// fgWaiting counts the group-commit writes queued and not yet done:
	// background writes give way to them (YieldWriter).
	fgWaiting atomic.Int64

	// userIDs are ids reserved for the users a PostgreSQL group holds
	// (writebehind.go).
	userIDs userIDs

	// answers seals the answers of Idempotency-Keys; legacyAnswers opens
	// those sealed before (see Options).
	answers, legacyAnswers *secretbox.Box

	// backfillBatch is how many users one backfill transaction reads.
	backfillBatch int

	// ckpt checkpoints SQLite's WAL beside the writer.
	ckpt *checkpointer

	// full says a write failed for want of space and none has succeeded
	// since (diskfull.go).
	full atomic.Bool
	// path is the SQLite database file, whose filesystem's free space a
	// probe checks (freespace.go); empty on PostgreSQL.
	path string
	// logger reports what an operator must act on (a full disk).
	logger *slog.Logger

	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Options tune the connection pools.
type Options struct {
	// MaxReadConns bounds the reader pool (SQLite); 0 picks 2×GOMAXPROCS, at least 4.
	MaxReadConns int
	// MaxConns bounds each of the two pools (PostgreSQL); 0 picks
	// 2×GOMAXPROCS, at least 8 (a node's total is what one pool of
	// 4×GOMAXPROCS was before reads got their own).
	MaxConns int
	// BusyTimeout is how long SQLite waits on a lock; 0 means 5 s.
	BusyTimeout time.Duration
	// AnswerBox seals the answers kept for Idempotency-Keys, which may
	// hold secrets (a webhook's signing secret); nil keeps them as they
	// are, for tools that answer no requests. It seals one answer per
	// keyed request: a box made by secretbox.NewX, whose nonces never
	// run out, under a key of the answers' own.
	AnswerBox *secretbox.Box
	// LegacyAnswerBox opens the answers stored before AnswerBox sealed
	// them: AES-GCM under the server key itself. They expire within 24 h.
	LegacyAnswerBox *secretbox.Box
	// Logger receives the store's warnings (a full disk, failed
	// checkpoints); nil discards them.
	Logger *slog.Logger
}

// Open connects to the database named by dsn: "sqlite:PATH" (a file path,
// created with its directory when missing) or a "postgres://" URL. It does
// not migrate.
func Open(ctx context.Context, dsn string, opt Options) (*DB, error) {
	var db *DB
	var err error
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		db, err = openSQLite(ctx, path, opt)
	} else if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		db, err = openPostgres(ctx, dsn, opt)
	} else {
		return nil, fmt.Errorf("store: unsupported database %q (want sqlite:PATH or postgres://…)", Redact(dsn))
	}
	if err != nil {
		return nil, err
	}
	db.answers, db.legacyAnswers = opt.AnswerBox, opt.LegacyAnswerBox
	if opt.Logger != nil {
		db.logger = opt.Logger
	}
	return db, nil
}

func openPostgres(ctx context.Context, dsn string, opt Options) (*DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", Redact(dsn), err)
	}
	if cfg.ConnectTimeout == 0 {
		// A database that does not answer must not hang requests.
		cfg.ConnectTimeout = 5 * time.Second
	}
	// A canceled context (a request that ended) cancels the statement on
	// the server, as SQLite's interrupt does: pgx's default only closes
	// the connection, and the backend ran the query on to its end
	// (issue #31 item 2). A server that does not answer the cancel within
	// a second loses the connection, as before.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
	}
	n := opt.MaxConns
	if n == 0 {
		n = max(8, 2*runtime.GOMAXPROCS(0))
	}
	// Two pools, as on SQLite: reads never queue for a connection behind
	// the delivery workers' transactions, which hold theirs across a commit
	// each. With one pool, API reads during a backlog drain waited behind
	// 200 workers (p99 86 ms).
	write, read := stdlib.OpenDB(*cfg), stdlib.OpenDB(*cfg)
	for _, db := range []*sql.DB{write, read} {
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
		db.SetConnMaxIdleTime(5 * time.Minute)
		db.SetConnMaxLifetime(time.Hour)
	}
	if err := write.PingContext(ctx); err != nil {
		write.Close()
		read.Close()
		return nil, fmt.Errorf("store: open %s: %w", Redact(dsn), err)
	}
	db := newDB(write, read, "postgres")
	// Two committers: each group's users go in one INSERT (writebehind.go),
	// so a group costs a few statements whatever its size, and fewer,
	// larger groups cost PostgreSQL's backends, which share the cores with
	// the server, less per write (issue #15: at n/2 = 4 committers creates
	// came in groups of ~11 and cost the backends ~55 µs each; at 2, ~20
	// and ~33 µs).
	db.committers = min(2, n)
	return db, nil
}

func openSQLite(ctx context.Context, path string, opt Options) (*DB, error) {
	if path == "" {
		return nil, errors.New("store: empty sqlite path")
	}
	if stmtJournalErr != nil {
		return nil, stmtJournalErr
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("store: %w", err)
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
	// then writes cannot fail half-way with SQLITE_BUSY. The checkpointer
	// copies the WAL (checkpoint.go).
	rw := base + params.Encode()
	write, err := openSQLiteDB(rw +
		fmt.Sprintf("&_pragma=wal_autocheckpoint(%d)&_txlock=immediate", walBackstopPages))
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
	read, err := openSQLiteDB(base + params.Encode())
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
	db := newDB(write, read, "sqlite")
	db.path = path
	db.readConns = n
	if opt.Logger != nil {
		db.logger = opt.Logger
	}
	ckpt, err := startCheckpointer(rw, db)
	if err != nil {
		write.Close()
		read.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	db.ckpt = ckpt
	db.sigs = newSigIndex()
	db.keys = newKeyIndex()
	return db, nil
}

// createPrivate creates a missing database file with mode 0600, like the
// key file: it holds phone numbers and sealed secrets. SQLite creates the
// -wal and -shm files with the mode of the database file, so they follow.
// An existing file keeps the mode its operator gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// The umask may have taken bits away, never added them; Chmod makes
	// the mode exactly 0600 whatever it is.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newDB(write, read *sql.DB, engine string) *DB {
	return &DB{write: write, read: read, engine: engine, Now: time.Now, committers: 1, backfillBatch: defaultBackfillBatch,
		logger: slog.New(slog.DiscardHandler)}
}

// Close closes both pools, and stops SQLite's checkpointer.
func (db *DB) Close() error {
	db.stopGroups()
	var err error
	if db.ckpt != nil {
		err = db.ckpt.close()
	}
	return errors.Join(err, db.read.Close(), db.write.Close())
}

// Engine names the database engine: "sqlite" or "postgres".
func (db *DB) Engine() string { return db.engine }

// Writer is the pool transactions run on; the job queue shares it so a
// change and its jobs commit together.
func (db *DB) Writer() *sql.DB { return db.write }

// Pools names the connection pools for their metrics: "writer" (the
// transactions) and "reader".
func (db *DB) Pools() map[string]*sql.DB {
	return map[string]*sql.DB{"writer": db.write, "reader": db.read}
}

// Migrate applies every pending schema migration, then fills the data an
// older release left out (backfillTimeZones).
func (db *DB) Migrate(ctx context.Context) error {
	p, err := db.migrations()
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	return db.backfillTimeZones(ctx)
}

func (db *DB) migrations() (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations/"+db.engine)
	if err != nil {
		return nil, err
	}
	dialect := goose.DialectSQLite3
	if db.engine == "postgres" {
		dialect = goose.DialectPostgres
	}
	p, err := goose.NewProvider(dialect, db.write, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, nil
}

// Tx is a transaction with its clock fixed at its start, so every row it
// writes carries the same time.
type Tx struct {
	tx  *sql.Tx
	now time.Time
	db  *DB
	// hooks remembers each brand's enabled webhook endpoints for the
	// transaction: the writes of a group commit ask for them once per
	// brand, not once each. Writes to the endpoints forget it.
	hooks map[int64][]*WebhookRecord
	// result is what the write running in the transaction named as its
	// request's outcome (see Answer).
	result any
	// origin is who asked for the write running in the transaction.
	origin parley.Origin
	// committed run once the transaction has committed (see AfterCommit).
	committed []func()
	// batches are flushed just before the commit, in the order made (see Batch).
	batches    map[any]Flusher
	batchOrder []Flusher
	// readKeys are the keys a PostgreSQL group read with its signatures
	// (recordSignatures), held by a request, for checkKeys; nil when not read.
	readKeys map[brandKey]*parley.IdempotencyRecord
	// keysWithRows are the keys a group found rows of when it read them,
	// held or not: only those can be taken over (storeKeys).
	keysWithRows map[brandKey]bool
	// behind holds the users that a PostgreSQL group's writes created,
	// for one INSERT (writebehind.go); nil sends each at once.
	behind *writeBehind
	// sigsSynced says the transaction read the signatures log into the
	// index (SQLite, replayindex.go).
	sigsSynced bool
	// keysSynced says the transaction read the keys log into the index,
	// and keyRows are the key rows it stored (SQLite, keyindex.go).
	keysSynced bool
	keyRows    map[keyName]keyRef
}

// A Flusher finishes work that the writes of a transaction added to it.
type Flusher interface {
	Flush(ctx context.Context, tx *Tx) error
}

// Batch returns the transaction's batch under key, made by mk on first
// use. Its Flush runs once, inside the transaction, just before it commits:
// the writes of a group commit that each add to it — jobs to queue, say —
// then cost one statement between them. A batch whose flush fails fails the
// transaction, so a group's writes run again, each with a batch of its own.
// A Flush may make new batches, which flush after it, but must not add to
// one flushed already.
func (tx *Tx) Batch(key any, mk func() Flusher) Flusher {
	if b, ok := tx.batches[key]; ok {
		return b
	}
	if tx.batches == nil {
		tx.batches = map[any]Flusher{}
	}
	b := mk()
	tx.batches[key] = b
	tx.batchOrder = append(tx.batchOrder, b)
	return b
}

// AfterCommit runs f once the transaction commits, and never if it rolls
// back. What a write reports outside the database (metrics) goes here: a
// write in a failed group commit runs again, in a transaction of its own.
func (tx *Tx) AfterCommit(f func()) { tx.committed = append(tx.committed, f) }

// SQL returns the underlying transaction, for the job queue's inserts.
// The users the transaction holds are sent first; if that fails, the
// transaction will not commit (flushBehind keeps the error).
func (tx *Tx) SQL() *sql.Tx {
	tx.flushBehind(context.Background())
	return tx.tx
}

// Now is the transaction's time.
func (tx *Tx) Now() time.Time { return tx.now }

// Origin is who asked for the change running in tx (D18).
func (tx *Tx) Origin() parley.Origin { return tx.origin }

// WithTx runs fn in a transaction, committing when fn returns nil and
// rolling back otherwise. A transaction that PostgreSQL aborts for a
// serialization failure or a deadlock is run again, a few times: it was
// rolled back, so running fn again is safe.
func (db *DB) WithTx(ctx context.Context, fn func(tx *Tx) error) error {
	return db.WithOriginTx(ctx, parley.Origin{}, fn)
}

// WithOriginTx is WithTx for a change asked for as o says. A signed
// request's signature is recorded in its first transaction (D2); its
// Idempotency-Key is checked before fn runs — fn does not run when another
// request holds the key (*parley.KeyTaken) — and stored after it, with the
// answer that fn named with Tx.Answer (D13). Tx.Origin returns o.
func (db *DB) WithOriginTx(ctx context.Context, o parley.Origin, fn func(tx *Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.withTx(ctx, o, fn)
		if attempt < 4 && isRetryable(err) {
			continue
		}
		db.noteWrite(err)
		return err
	}
}

// WithGroupTx runs fn in a transaction it may share with other small
// writes that arrive while the previous group commits (see groupCommit):
// one commit, and on PostgreSQL one wait for the disk, for all of them.
// fn runs under the group's context, not ctx, and must change nothing
// outside the transaction: if a write of the group fails, each runs again
// in a transaction of its own — unless fn fails with Unchanged, which
// fails only itself, or the COMMIT's outcome is unknown, which fails all.
// Once queued, the call waits for the outcome even if ctx ends. A signed
// request's signature is recorded in the same transaction (D2), and its
// Idempotency-Key claimed there, as in WithOriginTx (D13) — except that
// on PostgreSQL fn may first run in a transaction that rolls back, when a
// transaction beside it stored the key meanwhile; Tx.Origin returns o
// while fn runs. Never call it while holding the writer (inside
// WithTx): on SQLite the group would wait for it forever.
func (db *DB) WithGroupTx(ctx context.Context, o parley.Origin, fn func(ctx context.Context, tx *Tx) error) error {
	return db.laneTx(ctx, &db.group, o, fn)
}

// WithActivityGroupTx is WithGroupTx for a write that moves a contact's
// activity: a message's status change to or from sent, delivered or
// undelivered (a send's outcome, a carrier's report). On PostgreSQL such
// a write waits for the activity lock (migration 00009), which a
// campaign's batch holds for tens of milliseconds while it writes 500
// messages' outcomes; these writes share commits with each other, not
// with the API's (WithGroupTx), so a send or create queued beside one
// does not wait with it (issue #35: POST /messages p99 < 50 ms while a
// campaign drains). On SQLite, whose one writer every write waits for
// alike, they share the API's group commits: one commit fewer.
func (db *DB) WithActivityGroupTx(ctx context.Context, o parley.Origin, fn func(ctx context.Context, tx *Tx) error) error {
	return db.laneTx(ctx, db.activityLane(), o, fn)
}

// activityLane is the group commits of the writes that move a contact's
// activity: their own on PostgreSQL, the API's on SQLite.
func (db *DB) activityLane() *groupCommit {
	if db.engine == "postgres" {
		return &db.activityGroup
	}
	return &db.group
}

// laneTx is WithGroupTx in the group commits of lane g.
func (db *DB) laneTx(ctx context.Context, g *groupCommit, o parley.Origin, fn func(ctx context.Context, tx *Tx) error) error {
	err := db.inLane(ctx, g, &groupOp{fn: fn, origin: o, signed: unrecorded(o), keyed: unclaimed(o)})
	db.noteWrite(err)
	return err
}

// Unchanged marks the error of a grouped write (WithGroupTx) that failed
// before it changed anything, such as a check that found no such user: the
// other writes of its group commit without it, instead of each running
// again alone. Its caller gets err. The write must only have read: what
// it did besides — a statement, an AfterCommit, an addition to a Batch —
// still commits with the group.
func Unchanged(err error) error { return unchanged{err} }

type unchanged struct{ error }

func (u unchanged) Unwrap() error { return u.error }

// unrecorded returns o's signed write if its signature is yet to be
// recorded.
func unrecorded(o parley.Origin) *parley.SignedWrite {
	if sw := o.Signed; sw != nil && !sw.Recorded() {
		return sw
	}
	return nil
}

// unclaimed returns o's Idempotency-Key if no transaction of its request
// has claimed it yet.
func unclaimed(o parley.Origin) *parley.KeyedWrite {
	if kw := o.Keyed; kw != nil && !kw.Claimed() {
		return kw
	}
	return nil
}

func (db *DB) withTx(ctx context.Context, o parley.Origin, fn func(tx *Tx) error) error {
	sqlTx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	tx := &Tx{tx: sqlTx, now: db.Now().UTC().Truncate(time.Microsecond), db: db, origin: o}
	defer func() {
		// A caller that recovers a panic of fn (the campaign scheduler)
		// must not be left holding the writer.
		if p := recover(); p != nil {
			sqlTx.Rollback()
			panic(p)
		}
	}()
	sw := unrecorded(o)
	if sw != nil {
		if err := tx.recordSignature(ctx, sw); err != nil {
			sqlTx.Rollback()
			return err
		}
	}
	kw := unclaimed(o)
	if err := tx.checkKey(ctx, kw); err != nil {
		sqlTx.Rollback()
		return err
	}
	if err := fn(tx); err != nil {
		sqlTx.Rollback()
		return err
	}
	answer, err := tx.storeKey(ctx, kw)
	if err != nil {
		sqlTx.Rollback()
		return err
	}
	for i := 0; i < len(tx.batchOrder); i++ { // a flush may add a batch
		if err := tx.batchOrder[i].Flush(ctx, tx); err != nil {
			sqlTx.Rollback()
			return err
		}
	}
	// The users still held go last, and a send that failed (even one a
	// write did not see the error of) stops the commit.
	if err := tx.flushBehind(ctx); err != nil {
		sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		var pe *pgconn.PgError
		// The server refused the COMMIT, or SQLite failed it in-process:
		// it rolled back. Anything else (a lost connection) is uncertain.
		return &commitError{err: err, uncertain: db.engine == "postgres" && !errors.As(err, &pe)}
	}
	if sw != nil {
		sw.MarkRecorded()
	}
	if kw != nil {
		kw.MarkClaimed(answer)
	}
	for _, f := range tx.committed {
		f()
	}
	return nil
}

// CommitUncertain reports whether err is a COMMIT whose outcome is not
// known: the transaction may have committed. What it refers to outside
// the database (a stored blob) must then be kept.
func CommitUncertain(err error) bool {
	var ce *commitError
	return errors.As(err, &ce) && ce.uncertain
}

// commitError is a failed COMMIT. When uncertain, the transaction may or
// may not have committed (a connection lost mid-commit), so its writes must
// not be run again as if it had rolled back.
type commitError struct {
	err       error
	uncertain bool
}

func (e *commitError) Error() string { return "store: commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// isUniqueViolation reports whether err is a unique constraint failure,
// judged by the driver's error code, never its text.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code()
		return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == pgerrcode.UniqueViolation
}

// isRetryable reports a PostgreSQL serialization failure or deadlock, or
// an idempotency key stored beside the transaction (errKeyRace).
func isRetryable(err error) bool {
	if errors.Is(err, errKeyRace) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == pgerrcode.SerializationFailure || pe.Code == pgerrcode.DeadlockDetected)
}

// IsUnavailable reports whether err means the database cannot be reached
// or is too busy to answer now: the request may succeed if tried later
// (503), unlike a bug (500).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff // primary result code
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// Class 08: connection exception; 57P01-03: the server is shutting down
		// or starting up; 53: insufficient resources.
		// 57014: a statement canceled because its context ended (its
		// request's time ran out), as context.DeadlineExceeded above.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "53") ||
			pe.Code == pgerrcode.QueryCanceled
	}
	var ne net.Error
	if errors.As(err, &ne) {
		// syscall.Errno has Timeout and Temporary too: a file's error (a
		// rename across filesystems, a full disk) is no network's
		// (issue #31 item 14).
		_, file := ne.(syscall.Errno)
		return !file
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}

// Redact hides a password in a database URL, for messages and logs.
func Redact(dsn string) string {
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

// Analyze refreshes the planner's statistics of the tables, as autovacuum
// (PostgreSQL) or an operator (SQLite's ANALYZE) does after a bulk load:
// a benchmark that seeds a million rows measures the plans a running
// installation gets, not those of a table the planner has never looked at.
func (db *DB) Analyze(ctx context.Context) error {
	if _, err := db.write.ExecContext(ctx, `ANALYZE`); err != nil {
		return fmt.Errorf("store: analyze: %w", err)
	}
	return nil
}
