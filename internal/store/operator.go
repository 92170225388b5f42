package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley"
)

// Operators of the console (D19) and their tokens: sessions and one-time
// sign-in links, stored as hashes (migration 00015).

// OperatorRecord is an operator as stored, with the password hash.
type OperatorRecord struct {
	parley.Operator
	// PasswordHash is the encoded hash; "" when none is set.
	PasswordHash string
}

const operatorColumns = `id, brand_id, email, role, password_hash, date_created`

func scanOperator(scan func(...any) error) (*OperatorRecord, error) {
	var o OperatorRecord
	var hash sql.NullString
	var role string
	var created int64
	if err := scan(&o.ID, &o.BrandID, &o.Email, &role, &hash, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: scan operator: %w", err)
	}
	o.Role = parley.OperatorRole(role)
	o.PasswordHash = hash.String
	o.HasPassword = hash.Valid && hash.String != ""
	o.DateCreated = parley.Time{Time: fromMicros(created)}
	return &o, nil
}

// CreateOperator stores o (its email already normalised) and sets its ID
// and creation time; an email the brand has already is EDuplicate. Other
// brands' operators play no part (migration 00025).
func (tx *Tx) CreateOperator(ctx context.Context, o *OperatorRecord) error {
	o.DateCreated = parley.Time{Time: tx.now}
	hash := sql.NullString{String: o.PasswordHash, Valid: o.PasswordHash != ""}
	err := tx.queryRow(ctx, `INSERT INTO operators (brand_id, email, role, password_hash, date_created)
		VALUES (?, ?, ?, ?, ?) RETURNING id`, o.BrandID, o.Email, string(o.Role), hash, micros(tx.now)).Scan(&o.ID)
	if isUniqueViolation(err) {
		return parley.Errorf(parley.EDuplicate, "An operator with email %s exists already.", o.Email)
	}
	if err != nil {
		return fmt.Errorf("store: insert operator: %w", err)
	}
	o.HasPassword = hash.Valid
	return nil
}

// FindOperatorsByEmail returns the operators with that (normalised) email
// in every brand, oldest first: the sign-in checks the password against
// each (issue #31 item 10). None is not an error.
func (db *DB) FindOperatorsByEmail(ctx context.Context, email string) ([]*OperatorRecord, error) {
	rows, err := db.query(ctx, `SELECT `+operatorColumns+` FROM operators WHERE email = ? ORDER BY id`, email)
	if err != nil {
		return nil, fmt.Errorf("store: find operators by email: %w", err)
	}
	return collect(rows, scanOperator)
}

// FindBrandOperator returns brandID's operator with that (normalised)
// email, or ErrNotFound.
func (db *DB) FindBrandOperator(ctx context.Context, brandID int64, email string) (*OperatorRecord, error) {
	return scanOperator(db.queryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE brand_id = ? AND email = ?`, brandID, email).Scan)
}

// ListOperators returns the brand's operators, oldest first.
func (db *DB) ListOperators(ctx context.Context, brandID int64) ([]*OperatorRecord, error) {
	rows, err := db.query(ctx, `SELECT `+operatorColumns+` FROM operators WHERE brand_id = ? ORDER BY id`, brandID)
	if err != nil {
		return nil, fmt.Errorf("store: list operators: %w", err)
	}
	return collect(rows, scanOperator)
}

// SetOperatorPassword replaces the operator's password hash.
func (tx *Tx) SetOperatorPassword(ctx context.Context, id int64, hash string) error {
	res, err := tx.exec(ctx, `UPDATE operators SET password_hash = ? WHERE id = ?`, hash, id)
	if err != nil {
		return fmt.Errorf("store: set operator password: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// Token kinds.
const (
	TokenSession = "session"
	TokenLink    = "link"
	// TokenChoice lets a sign-in whose password matched operators of
	// several brands open a session for one of them (issue #31 item 10).
	TokenChoice = "choice"
)

// CreateOperatorToken stores a token's hash for the operator until
// expires. viaLink marks a session opened by a one-time sign-in link: it
// may set the password without the current one (OperatorSession).
func (tx *Tx) CreateOperatorToken(ctx context.Context, hash []byte, operatorID int64, kind string, expires time.Time, viaLink bool) error {
	_, err := tx.exec(ctx, `INSERT INTO operator_tokens (token_hash, operator_id, kind, created_at, expires_at, via_link)
		VALUES (?, ?, ?, ?, ?, ?)`, hash, operatorID, kind, micros(tx.now), micros(expires), viaLink)
	if err != nil {
		return fmt.Errorf("store: insert operator token: %w", err)
	}
	return nil
}

// OperatorSession returns the operator of the unexpired session with this
// hash, or ErrNotFound, and whether a one-time sign-in link opened the
// session and it has not set a password since.
func (db *DB) OperatorSession(ctx context.Context, hash []byte, now time.Time) (*OperatorRecord, bool, error) {
	var via bool
	row := db.queryRow(ctx, `SELECT o.id, o.brand_id, o.email, o.role, o.password_hash, o.date_created, t.via_link
		FROM operator_tokens t JOIN operators o ON o.id = t.operator_id
		WHERE t.token_hash = ? AND t.kind = 'session' AND t.expires_at > ?`, hash, micros(now))
	rec, err := scanOperator(func(dest ...any) error { return row.Scan(append(dest, &via)...) })
	return rec, via, err
}

// ClearSessionLink takes the link's mark off a session: it has set its
// password, and the next change asks for it.
func (tx *Tx) ClearSessionLink(ctx context.Context, hash []byte) error {
	if _, err := tx.exec(ctx, `UPDATE operator_tokens SET via_link = FALSE WHERE token_hash = ?`, hash); err != nil {
		return fmt.Errorf("store: clear operator session link: %w", err)
	}
	return nil
}

// OperatorByToken returns the operator whose unexpired token of kind has
// this hash, or ErrNotFound.
func (db *DB) OperatorByToken(ctx context.Context, hash []byte, kind string, now time.Time) (*OperatorRecord, error) {
	return scanOperator(db.queryRow(ctx, `SELECT o.id, o.brand_id, o.email, o.role, o.password_hash, o.date_created
		FROM operator_tokens t JOIN operators o ON o.id = t.operator_id
		WHERE t.token_hash = ? AND t.kind = ? AND t.expires_at > ?`, hash, kind, micros(now)).Scan)
}

// TakeOperatorToken deletes an unexpired token of kind and returns its
// operator: a one-time link works once, even with two requests at once.
func (tx *Tx) TakeOperatorToken(ctx context.Context, hash []byte, kind string) (int64, error) {
	var id int64
	err := tx.queryRow(ctx, `DELETE FROM operator_tokens WHERE token_hash = ? AND kind = ? AND expires_at > ?
		RETURNING operator_id`, hash, kind, micros(tx.now)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("store: take operator token: %w", err)
	}
	return id, nil
}

// DeleteOperatorToken removes a token (sign-out); no such token is fine.
func (tx *Tx) DeleteOperatorToken(ctx context.Context, hash []byte) error {
	if _, err := tx.exec(ctx, `DELETE FROM operator_tokens WHERE token_hash = ?`, hash); err != nil {
		return fmt.Errorf("store: delete operator token: %w", err)
	}
	return nil
}

// DeleteOperatorTokens deletes the operator's unused tokens of kind: a
// password set or used revokes the one-time sign-in links (issue #31 item 4).
func (tx *Tx) DeleteOperatorTokens(ctx context.Context, operatorID int64, kind string) error {
	if _, err := tx.exec(ctx, `DELETE FROM operator_tokens WHERE operator_id = ? AND kind = ?`, operatorID, kind); err != nil {
		return fmt.Errorf("store: delete operator tokens: %w", err)
	}
	return nil
}

// OperatorTokenExpiry returns when the unexpired token of kind with this
// hash expires, without using it, or ErrNotFound.
func (db *DB) OperatorTokenExpiry(ctx context.Context, hash []byte, kind string, now time.Time) (time.Time, error) {
	var exp int64
	err := db.queryRow(ctx, `SELECT expires_at FROM operator_tokens WHERE token_hash = ? AND kind = ? AND expires_at > ?`,
		hash, kind, micros(now)).Scan(&exp)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, ErrNotFound
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("store: operator token expiry: %w", err)
	}
	return fromMicros(exp), nil
}

// FindOperator returns the operator with id, or ErrNotFound.
func (tx *Tx) FindOperator(ctx context.Context, id int64) (*OperatorRecord, error) {
	return scanOperator(tx.queryRow(ctx, `SELECT `+operatorColumns+` FROM operators WHERE id = ?`, id).Scan)
}

// PurgeOperatorTokens deletes tokens that expired before now, so the
// table holds only live sessions and links.
func (tx *Tx) PurgeOperatorTokens(ctx context.Context) error {
	if _, err := tx.exec(ctx, `DELETE FROM operator_tokens WHERE expires_at <= ?`, micros(tx.now)); err != nil {
		return fmt.Errorf("store: purge operator tokens: %w", err)
	}
	return nil
}

// DeleteOperatorSessions ends the operator's sessions but the one whose
// hash is keep (nil: every one): a changed password signs out the others.
func (tx *Tx) DeleteOperatorSessions(ctx context.Context, operatorID int64, keep []byte) error {
	if keep == nil {
		keep = []byte{}
	}
	_, err := tx.exec(ctx, `DELETE FROM operator_tokens WHERE operator_id = ? AND kind = 'session' AND token_hash <> ?`,
		operatorID, keep)
	if err != nil {
		return fmt.Errorf("store: delete operator sessions: %w", err)
	}
	return nil
}
