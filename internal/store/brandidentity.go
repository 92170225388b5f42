package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parleyhq/parley"
)

// BrandIdentity returns a brand's name, number and default country (D22),
// or ErrNotFound.
func (db *DB) BrandIdentity(ctx context.Context, brandID int64) (parley.BrandIdentity, error) {
	return scanIdentity(db.queryRow(ctx, qBrandIdentity, brandID))
}

// BrandIdentity is DB.BrandIdentity inside tx.
func (tx *Tx) BrandIdentity(ctx context.Context, brandID int64) (parley.BrandIdentity, error) {
	return scanIdentity(tx.queryRow(ctx, qBrandIdentity, brandID))
}

const qBrandIdentity = `SELECT name, phone_number, default_country FROM brands WHERE id = ?`

func scanIdentity(row *sql.Row) (parley.BrandIdentity, error) {
	var b parley.BrandIdentity
	err := row.Scan(&b.Name, &b.PhoneNumber, &b.DefaultCountry)
	if errors.Is(err, sql.ErrNoRows) {
		return b, ErrNotFound
	} else if err != nil {
		return b, fmt.Errorf("store: brand identity: %w", err)
	}
	return b, nil
}

// SaveBrandIdentity stores a brand's name, number and default country;
// ErrNotFound when there is no such brand.
func (tx *Tx) SaveBrandIdentity(ctx context.Context, brandID int64, b parley.BrandIdentity) error {
	res, err := tx.exec(ctx, `UPDATE brands SET name = ?, phone_number = ?, default_country = ? WHERE id = ?`,
		b.Name, b.PhoneNumber, b.DefaultCountry, brandID)
	if err != nil {
		return fmt.Errorf("store: save brand identity: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// BrandWithPhone returns the id of another brand than brandID that has the
// number, or 0.
func (tx *Tx) BrandWithPhone(ctx context.Context, brandID int64, phone string) (int64, error) {
	var id int64
	err := tx.queryRow(ctx, `SELECT id FROM brands WHERE phone_number = ? AND id <> ? ORDER BY id LIMIT 1`, phone, brandID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: brand with phone: %w", err)
	}
	return id, nil
}
