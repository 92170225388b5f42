package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// ErrNotFound is returned when a row does not exist in the brand's scope.
var ErrNotFound = errors.New("store: not found")

// stmtCache prepares each query once per pool; database/sql then keeps one
// prepared statement per connection, so hot queries skip the parse.
type stmtCache struct {
	db     *sql.DB
	rebind func(string) string
	m      sync.Map // query → *sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if s, ok := c.m.Load(query); ok {
		return s.(*sql.Stmt), nil
	}
	s, err := c.db.PrepareContext(ctx, c.rebind(query))
	if err != nil {
		return nil, err
	}
	if prev, loaded := c.m.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sql.Stmt), nil
	}
	return s, nil
}

func (c *stmtCache) close() {
	c.m.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
}

// queryRow runs a prepared single-row query on the reader pool.
func (db *DB) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	s, err := db.readStmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryRowContext(ctx, args...), nil
}

// prepareAll prepares the hot write queries up front: inside a
// transaction the writer's only connection is taken, so a statement cannot
// be prepared lazily there.
func (c *stmtCache) prepareAll(ctx context.Context, queries []string) error {
	for _, q := range queries {
		if _, err := c.get(ctx, q); err != nil {
			return fmt.Errorf("store: prepare: %w", err)
		}
	}
	return nil
}

// lookup returns a statement prepared by prepareAll, nil for any other query.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	if s, ok := c.m.Load(query); ok {
		return s.(*sql.Stmt)
	}
	return nil
}

func (tx *Tx) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	if s := tx.stmts.lookup(query); s != nil {
		return tx.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...), nil
	}
	return tx.tx.QueryRowContext(ctx, tx.db.rebind(query), args...), nil
}

func (tx *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := tx.stmts.lookup(query); s != nil {
		return tx.tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return tx.tx.ExecContext(ctx, tx.db.rebind(query), args...)
}

func (tx *Tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(ctx, tx.db.rebind(query), args...)
}

// query runs a multi-row query on the reader pool.
func (db *DB) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return db.read.QueryContext(ctx, db.rebind(query), args...)
}

func (db *DB) queryRowDirect(ctx context.Context, query string, args ...any) *sql.Row {
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
