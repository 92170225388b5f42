package store

import (
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// stmtsPerConn bounds the statements a SQLite connection keeps prepared.
// Parley's and River's statements are a fixed set; the bound is for the
// generated ones (IN lists and multi-row INSERTs of every length).
const stmtsPerConn = 256

// openSQLiteDB opens a pool whose connections keep every statement they run
// prepared. River's SQLite driver sends its SQL as text on every call, and
// SQLite then parses it every time: measured, the parser was over a quarter
// of the server's CPU while it delivered messages, most of it inside the
// single writer's transactions.
func openSQLiteDB(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(cachingConnector{Connector: c, max: stmtsPerConn}), nil
}

type cachingConnector struct {
	driver.Connector
	max int // statements kept per connection
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn, c.max), nil
}

// sqliteConn is what the SQLite driver's connections implement.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.SessionResetter
	driver.Validator
	driver.Pinger
}

// cachingConn keeps the statements run through ExecContext and QueryContext
// prepared, least recently used first out. database/sql uses a connection
// from one goroutine at a time, so it needs no lock.
type cachingConn struct {
	sqliteConn
	max   int
	stmts map[string]*list.Element // of *cachedStmt
	lru   list.List                // front: most recently used
	// prepares counts statements prepared for the cache (tests read it).
	prepares int
}

type cachedStmt struct {
	query string
	stmt  driver.Stmt
	// busy: rows of the statement are open, so it cannot run again until
	// they close; meanwhile the same query runs unprepared.
	busy bool
	// evicted while busy: its rows close it.
	evicted bool
}

func newCachingConn(conn driver.Conn, n int) driver.Conn {
	c, ok := conn.(sqliteConn)
	if !ok {
		return conn // not the driver this was written for: no cache
	}
	return &cachingConn{sqliteConn: c, max: n, stmts: make(map[string]*list.Element)}
}

// cached returns the statement of query, preparing it on first use, or nil
// when it is busy.
func (c *cachingConn) cached(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.stmts[query]; ok {
		c.lru.MoveToFront(e)
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		return cs, nil
	}
	s, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.prepares++
	cs := &cachedStmt{query: query, stmt: s}
	c.stmts[query] = c.lru.PushFront(cs)
	for c.lru.Len() > c.max {
		c.evict(c.lru.Back())
	}
	return cs, nil
}

func (c *cachingConn) evict(e *list.Element) error {
	cs := c.lru.Remove(e).(*cachedStmt)
	delete(c.stmts, cs.query)
	if cs.busy {
		cs.evicted = true
		return nil
	}
	return cs.stmt.Close()
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.cached(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.cached(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	r, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return &cachedRows{rowsWithTypes: r.(rowsWithTypes), cs: cs}, nil
}

func (c *cachingConn) Close() error {
	var errs []error
	for c.lru.Len() > 0 {
		errs = append(errs, c.evict(c.lru.Front()))
	}
	return errors.Join(append(errs, c.sqliteConn.Close())...)
}

// rowsWithTypes is what the SQLite driver's rows implement; the wrapper
// keeps the column type methods database/sql looks for.
type rowsWithTypes interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// cachedRows frees its statement for the next run when closed.
type cachedRows struct {
	rowsWithTypes
	cs *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.rowsWithTypes.Close()
	r.cs.busy = false
	if r.cs.evicted {
		err = errors.Join(err, r.cs.stmt.Close())
	}
	return err
}
