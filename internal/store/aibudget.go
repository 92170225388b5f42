package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// AIBudget is the openai extractor's per-brand daily budget of calls (D20,
// issue #19), kept in the database so that every node counts against the
// same allowance. Days are UTC days of the DB's clock.
type AIBudget struct {
	DB *DB
	// PerDay is how many calls a brand may make in a UTC day; at least 1.
	PerDay int
}

// Take spends one of the brand's calls for today and reports whether one
// was left.
func (b AIBudget) Take(ctx context.Context, brandID int64) (bool, error) {
	return b.DB.TakeAICall(ctx, brandID, b.PerDay)
}

// TakeAICall counts one extractor call for the brand today, unless the
// brand has made perDay calls already: then it counts nothing and reports
// false. One statement, so two nodes can never both take the last call: the
// upsert's row lock (PostgreSQL) or the single writer (SQLite) orders them.
func (db *DB) TakeAICall(ctx context.Context, brandID int64, perDay int) (bool, error) {
	if perDay < 1 {
		return false, nil
	}
	day := db.Now().UTC().Format("2006-01-02")
	var calls int64
	err := db.WithTx(ctx, func(tx *Tx) error {
		return tx.queryRow(ctx, `INSERT INTO ai_calls (brand_id, day, calls) VALUES (?, ?, 1)
			ON CONFLICT (brand_id, day) DO UPDATE SET calls = ai_calls.calls + 1 WHERE ai_calls.calls < ?
			RETURNING calls`, brandID, day, perDay).Scan(&calls)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // the update's WHERE kept the row as it was: none left
	}
	if err != nil {
		return false, fmt.Errorf("store: take an AI call: %w", err)
	}
	return true, nil
}

// AICalls returns how many extractor calls the brand made on day (UTC,
// YYYY-MM-DD).
func (db *DB) AICalls(ctx context.Context, brandID int64, day string) (int, error) {
	var n int
	err := db.queryRow(ctx, `SELECT calls FROM ai_calls WHERE brand_id = ? AND day = ?`, brandID, day).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: AI calls: %w", err)
	}
	return n, nil
}
