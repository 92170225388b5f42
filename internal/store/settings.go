package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parleyhq/parley"
)

// BrandSettings returns a brand's sending rules (D17), or ErrNotFound.
func (db *DB) BrandSettings(ctx context.Context, brandID int64) (*parley.BrandSettings, error) {
	return scanSettings(db.queryRow(ctx, qBrandSettings, brandID))
}

// BrandSettings is DB.BrandSettings inside tx.
func (tx *Tx) BrandSettings(ctx context.Context, brandID int64) (*parley.BrandSettings, error) {
	return scanSettings(tx.queryRow(ctx, qBrandSettings, brandID))
}

const qBrandSettings = `SELECT sending_window_start, sending_window_end, time_zone, frequency_cap_max,
	frequency_cap_hours, send_rate, extract_when_opted_out,
	stop_reply, start_reply, help_reply FROM brands WHERE id = ?`

func scanSettings(row *sql.Row) (*parley.BrandSettings, error) {
	var s parley.BrandSettings
	var capMax, capHours sql.NullInt64
	var stop, start, help string
	err := row.Scan(&s.SendingWindow.Start, &s.SendingWindow.End, &s.TimeZone, &capMax, &capHours, &s.SendRate, &s.ExtractWhenOptedOut,
		&stop, &start, &help)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("store: brand settings: %w", err)
	}
	s.KeywordReplies = parley.KeywordReplies{Stop: nilIfEmpty(stop), Start: nilIfEmpty(start), Help: nilIfEmpty(help)}
	if capMax.Valid {
		s.FrequencyCap = &parley.FrequencyCap{MaxMessages: int(capMax.Int64), PerHours: int(capHours.Int64)}
	}
	return &s, nil
}

// SaveBrandSettings stores a brand's sending rules whole; ErrNotFound when
// there is no such brand.
func (tx *Tx) SaveBrandSettings(ctx context.Context, brandID int64, s *parley.BrandSettings) error {
	var capMax, capHours sql.NullInt64
	if c := s.FrequencyCap; c != nil {
		capMax = sql.NullInt64{Int64: int64(c.MaxMessages), Valid: true}
		capHours = sql.NullInt64{Int64: int64(c.PerHours), Valid: true}
	}
	res, err := tx.exec(ctx, `UPDATE brands SET sending_window_start = ?, sending_window_end = ?, time_zone = ?,
		frequency_cap_max = ?, frequency_cap_hours = ?, send_rate = ?, extract_when_opted_out = ?,
		stop_reply = ?, start_reply = ?, help_reply = ? WHERE id = ?`,
		s.SendingWindow.Start, s.SendingWindow.End, s.TimeZone, capMax, capHours, s.SendRate, s.ExtractWhenOptedOut,
		deref(s.KeywordReplies.Stop), deref(s.KeywordReplies.Start), deref(s.KeywordReplies.Help), brandID)
	if err != nil {
		return fmt.Errorf("store: save brand settings: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// nilIfEmpty reads a keyword reply column: "" is the built-in text (D22).
func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
