package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley"
)

// CreateBrand stores b and sets its ID.
func (tx *Tx) CreateBrand(ctx context.Context, b *parley.Brand) error {
	b.DateCreated = parley.Time{Time: tx.now}
	row := tx.queryRow(ctx, `INSERT INTO brands (name, phone_number, date_created) VALUES (?, ?, ?) RETURNING id`,
		b.Name, b.PhoneNumber, micros(tx.now))
	if err := row.Scan(&b.ID); err != nil {
		return fmt.Errorf("store: insert brand: %w", err)
	}
	return nil
}

// FindBrand returns the brand with id, or ErrNotFound.
func (db *DB) FindBrand(ctx context.Context, id int64) (*parley.Brand, error) {
	row := db.queryRow(ctx, `SELECT id, name, phone_number, date_created FROM brands WHERE id = ?`, id)
	var b parley.Brand
	var created int64
	if err := row.Scan(&b.ID, &b.Name, &b.PhoneNumber, &created); errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("store: find brand: %w", err)
	}
	b.DateCreated = parley.Time{Time: fromMicros(created)}
	return &b, nil
}

// ListBrands returns every brand, ordered by id.
func (db *DB) ListBrands(ctx context.Context) ([]*parley.Brand, error) {
	rows, err := db.query(ctx, `SELECT id, name, phone_number, date_created FROM brands ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: list brands: %w", err)
	}
	defer rows.Close()
	var out []*parley.Brand
	for rows.Next() {
		var b parley.Brand
		var created int64
		if err := rows.Scan(&b.ID, &b.Name, &b.PhoneNumber, &created); err != nil {
			return nil, fmt.Errorf("store: list brands: %w", err)
		}
		b.DateCreated = parley.Time{Time: fromMicros(created)}
		out = append(out, &b)
	}
	return out, rows.Err()
}

// CountBrands returns how many brands exist.
func (db *DB) CountBrands(ctx context.Context) (int, error) {
	var n int
	err := db.queryRow(ctx, `SELECT count(*) FROM brands`).Scan(&n)
	return n, err
}

// CredentialRecord is a credential as stored: the secret sealed.
type CredentialRecord struct {
	Username     string
	BrandID      int64
	SealedSecret []byte
	CreatedAt    parley.Time
	RevokedAt    *parley.Time
	LastUsedAt   *parley.Time
}

// CreateCredential stores c.
func (tx *Tx) CreateCredential(ctx context.Context, c *CredentialRecord) error {
	c.CreatedAt = parley.Time{Time: tx.now}
	_, err := tx.exec(ctx, `INSERT INTO credentials (brand_id, username, secret, created_at) VALUES (?, ?, ?, ?)`,
		c.BrandID, c.Username, c.SealedSecret, micros(tx.now))
	if isUniqueViolation(err) {
		return parley.Errorf(parley.EDuplicate, "Duplicate entry for '%s'", c.Username)
	}
	if err != nil {
		return fmt.Errorf("store: insert credential: %w", err)
	}
	return nil
}

const credentialColumns = `username, brand_id, secret, created_at, revoked_at, last_used_at`

// FindCredential returns the credential named username, revoked or not, or ErrNotFound.
func (db *DB) FindCredential(ctx context.Context, username string) (*CredentialRecord, error) {
	row := db.queryRow(ctx, `SELECT `+credentialColumns+` FROM credentials WHERE username = ?`, username)
	c, err := scanCredential(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return c, err
}

// ListCredentials returns the brand's credentials, oldest first.
func (db *DB) ListCredentials(ctx context.Context, brandID int64) ([]*CredentialRecord, error) {
	rows, err := db.query(ctx, `SELECT `+credentialColumns+` FROM credentials WHERE brand_id = ? ORDER BY id`, brandID)
	if err != nil {
		return nil, fmt.Errorf("store: list credentials: %w", err)
	}
	defer rows.Close()
	var out []*CredentialRecord
	for rows.Next() {
		c, err := scanCredential(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func scanCredential(scan func(...any) error) (*CredentialRecord, error) {
	var c CredentialRecord
	var created int64
	var revoked, used sql.NullInt64
	if err := scan(&c.Username, &c.BrandID, &c.SealedSecret, &created, &revoked, &used); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("store: scan credential: %w", err)
	}
	c.CreatedAt = parley.Time{Time: fromMicros(created)}
	c.RevokedAt = nullTime(revoked)
	c.LastUsedAt = nullTime(used)
	return &c, nil
}

func nullTime(n sql.NullInt64) *parley.Time {
	if !n.Valid {
		return nil
	}
	return &parley.Time{Time: fromMicros(n.Int64)}
}

func toNullTime(t *parley.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: micros(t.Time), Valid: true}
}

// RevokeCredentialAt makes a live credential stop working at t: now for a
// revocation, later for the grace period of a rotation. A credential that
// already stops sooner keeps its earlier time. ErrNotFound when there is no
// such live credential.
func (tx *Tx) RevokeCredentialAt(ctx context.Context, username string, t time.Time) error {
	res, err := tx.exec(ctx, `UPDATE credentials SET revoked_at = ?
		WHERE username = ? AND (revoked_at IS NULL OR revoked_at > ?)`, micros(t), username, micros(t))
	if err != nil {
		return fmt.Errorf("store: revoke credential: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// TouchCredential records that the credential signed a request at t.
func (db *DB) TouchCredential(ctx context.Context, username string, t time.Time) error {
	return db.WithTx(ctx, func(tx *Tx) error {
		_, err := tx.exec(ctx, `UPDATE credentials SET last_used_at = ?
			WHERE username = ? AND (last_used_at IS NULL OR last_used_at < ?)`, micros(t), username, micros(t))
		if err != nil {
			return fmt.Errorf("store: touch credential: %w", err)
		}
		return nil
	})
}
