package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrNotFound is returned when a row does not exist in the brand's scope.
var ErrNotFound = errors.New("store: not found")

// Statements are prepared once per connection below database/sql: by the
// SQLite connector (sqliteconn.go) and by pgx's statement cache.

// Each statement of a transaction first sends the users it holds
// (writebehind.go), so that it sees them.

func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if err := tx.flushFor(ctx, query); err != nil {
		return tx.tx.QueryRowContext(canceled, "SELECT 1")
	}
	return tx.tx.QueryRowContext(ctx, tx.db.rebind(query), args...)
}

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := tx.flushFor(ctx, query); err != nil {
		return nil, err
	}
	return tx.tx.ExecContext(ctx, tx.db.rebind(query), args...)
}

func (tx *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := tx.flushFor(ctx, query); err != nil {
		return nil, err
	}
	return tx.tx.QueryContext(ctx, tx.db.rebind(query), args...)
}

// query runs a multi-row query on the reader pool.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.read.QueryContext(ctx, db.rebind(query), args...)
}

// customPlan marks a statement whose best plan depends on its arguments'
// values, for PostgreSQL to plan each time it runs. pgx's statement cache
// otherwise prepares it, and after five runs PostgreSQL may keep one
// generic plan for every value: for a filter such as a state, planned for
// the average value's many rows, a state with no contact then reads all
// of the brand's (measured at 1,000,000 contacts: 130 – 360 ms instead of
// 0.03 ms; issue #32).
func (db *DB) customPlan(args []any) []any {
	if db.engine != "postgres" {
		return args
	}
	return append([]any{pgx.QueryExecModeExec}, args...)
}

// queryRow runs a single-row query on the reader pool.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return db.read.QueryRowContext(ctx, db.rebind(query), args...)
}

// rebind rewrites the ? placeholders every query is written with into the
// engine's form: $1, $2, … on PostgreSQL.
func (db *DB) rebind(query string) string {
	if db.engine != "postgres" {
		return query
	}
	if q, ok := db.rebound.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	q := b.String()
	db.rebound.Store(query, q)
	return q
}

// nullString maps a nullable column to a nullable field.
func nullString(ns sql.NullString) *string {
	if !ns.Valid {
		return nil
	}
	s := ns.String
	return &s
}

func toNullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func nullBool(nb sql.NullBool) *bool {
	if !nb.Valid {
		return nil
	}
	b := nb.Bool
	return &b
}

func toNullBool(b *bool) sql.NullBool {
	if b == nil {
		return sql.NullBool{}
	}
	return sql.NullBool{Bool: *b, Valid: true}
}

// collect scans every row with scan and closes rows; the result is never
// nil, so a list answers [] rather than null.
func collect[T any](rows *sql.Rows, scan func(func(...any) error) (T, error)) ([]T, error) {
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
