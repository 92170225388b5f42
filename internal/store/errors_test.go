package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestErrorClassification(t *testing.T) {
	unavailable := []error{
		driver.ErrBadConn,
		context.DeadlineExceeded,
		fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "08006"}),
		&pgconn.PgError{Code: "57P01"},
		&pgconn.PgError{Code: "53300"},
	}
	for _, err := range unavailable {
		if !IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = false, want 503", err)
		}
	}
	for _, err := range []error{nil, errors.New("bug"), &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "42P01"}} {
		if IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = true, want a 500", err)
		}
	}
	if !isRetryable(&pgconn.PgError{Code: "40001"}) || !isRetryable(&pgconn.PgError{Code: "40P01"}) || isRetryable(errors.New("x")) {
		t.Error("isRetryable misclassifies")
	}
	if !isUniqueViolation(&pgconn.PgError{Code: "23505"}) || isUniqueViolation(&pgconn.PgError{Code: "23503"}) {
		t.Error("isUniqueViolation misclassifies PostgreSQL codes")
	}
}

func TestRebind(t *testing.T) {
	pg := &DB{engine: "postgres"}
	if got := pg.rebind("a = ? AND b IN (?, ?)"); got != "a = $1 AND b IN ($2, $3)" {
		t.Errorf("rebind = %q", got)
	}
	sq := &DB{engine: "sqlite"}
	if got := sq.rebind("a = ?"); got != "a = ?" {
		t.Errorf("sqlite rebind = %q", got)
	}
}
