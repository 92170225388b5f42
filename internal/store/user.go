package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/parleyhq/parley"
)

const userColumns = `id, brand_id, phone_number, first_name, last_name, email_address, date_of_birth,
	messaging_consent, postal_code, city, county, state, state_code, time_zone, custom_data, channel,
	is_deleted, date_created, date_last_updated`

const (
	// qUserByID names the user by id alone, so the primary key is the only
	// index a plan can take; ofBrand checks the rest. With brand_id and
	// is_deleted in the WHERE, the partial phone index (which implies
	// both) is as good to PostgreSQL's planner for a table it has not
	// analyzed, and a prepared statement keeps the plan it chose while the
	// table was empty: each lookup then read every user of the brand
	// (measured: ~790 index entries per lookup at 1,000 users).
	qUserByID = `SELECT ` + userColumns + ` FROM users WHERE id = ?`
	// qUserByIDForUpdate locks the row until the transaction ends (PostgreSQL).
	qUserByIDForUpdate = qUserByID + ` FOR UPDATE`
	qUserByPhone       = `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND phone_number = ? AND is_deleted = FALSE`
	qInsertUser        = `INSERT INTO users (brand_id, phone_number, first_name, last_name, email_address,
	date_of_birth, messaging_consent, postal_code, city, county, state, state_code, time_zone,
	custom_data, channel, is_deleted, date_created, date_last_updated)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (brand_id, phone_number) WHERE is_deleted = FALSE DO NOTHING`
	// qInsertUserReturning is qInsertUser on PostgreSQL; SQLite's driver
	// reports the id itself (see InsertUser).
	qInsertUserReturning = qInsertUser + ` RETURNING id`
	qUpdateUser          = `UPDATE users SET first_name = ?, last_name = ?, email_address = ?, date_of_birth = ?,
	messaging_consent = ?, postal_code = ?, city = ?, county = ?, state = ?, state_code = ?,
	time_zone = ?, custom_data = ?, is_deleted = ?, date_last_updated = ?
	WHERE brand_id = ? AND id = ?`
)

// FindUserByID returns a user of the brand that is not deleted, or ErrNotFound.
func (db *DB) FindUserByID(ctx context.Context, brandID, id int64) (*parley.User, error) {
	u, err := scanUser(db.queryRow(ctx, qUserByID, id))
	return ofBrand(brandID, u, err)
}

// FindUserByPhone returns the brand's live user with the E.164 number, or ErrNotFound.
func (db *DB) FindUserByPhone(ctx context.Context, brandID int64, phone string) (*parley.User, error) {
	row := db.queryRow(ctx, qUserByPhone, brandID, phone)
	return scanUser(row)
}

// FindUserByID is DB.FindUserByID inside the transaction.
func (tx *Tx) FindUserByID(ctx context.Context, brandID, id int64) (*parley.User, error) {
	u, err := scanUser(tx.queryRow(ctx, qUserByID, id))
	return ofBrand(brandID, u, err)
}

// ofBrand keeps a user found by id only if it is the brand's and live.
func ofBrand(brandID int64, u *parley.User, err error) (*parley.User, error) {
	if err == nil && (u.BrandID != brandID || u.IsDeleted) {
		return nil, ErrNotFound
	}
	return u, err
}

// FindUserForUpdate is FindUserByID that keeps the user's row locked until
// the transaction ends, so that a change computed from what it read is not
// lost to a transaction beside it (PostgreSQL; SQLite's one writer runs
// one transaction at a time).
func (tx *Tx) FindUserForUpdate(ctx context.Context, brandID, id int64) (*parley.User, error) {
	q := qUserByID
	if tx.db.engine == "postgres" {
		q = qUserByIDForUpdate
	}
	u, err := scanUser(tx.queryRow(ctx, q, id))
	return ofBrand(brandID, u, err)
}

// FindUserByPhone is DB.FindUserByPhone inside the transaction.
func (tx *Tx) FindUserByPhone(ctx context.Context, brandID int64, phone string) (*parley.User, error) {
	row := tx.queryRow(ctx, qUserByPhone, brandID, phone)
	return scanUser(row)
}

// InsertUser stores u and sets its ID. A live user of the brand with the
// same number fails the write with EDuplicate, as Unchanged: the insert
// takes the number only if it is free, so the other writes of a group
// commit are not undone with it (D5).
//
// In a PostgreSQL group commit the user is held for one INSERT with the
// group's others (writebehind.go): it gets its id at once, and a number
// taken fails the group, which then runs again without holding.
func (tx *Tx) InsertUser(ctx context.Context, u *parley.User) error {
	if tx.behind != nil {
		return tx.holdUser(ctx, u)
	}
	loc := u.Location
	if loc == nil {
		loc = &parley.Location{}
	}
	args := []any{u.BrandID, u.PhoneNumber,
		toNullString(u.FirstName), toNullString(u.LastName), toNullString(u.EmailAddress),
		toNullString(u.DateOfBirth), toNullBool(u.MessagingConsent),
		toNullString(loc.PostalCode), toNullString(loc.City), toNullString(loc.County),
		toNullString(loc.State), toNullString(loc.StateCode), toNullString(loc.TimeZone), nullJSON(u.CustomData),
		toNullString(u.Channel), u.IsDeleted, micros(u.DateCreated.Time), micros(u.DateLastUpdated.Time)}
	duplicate := func() error {
		return Unchanged(parley.Errorf(parley.EDuplicate, "Duplicate entry for '%s'", u.PhoneNumber))
	}
	if tx.db.engine == "sqlite" {
		// Without RETURNING, which SQLite runs as a trigger: a statement
		// with one opens a statement journal, a copy of every page the
		// insert touches (issue #15: ~10 % of the server's CPU under
		// create-users, most of it writing the copies to a temporary file).
		res, err := tx.exec(ctx, qInsertUser, args...)
		if err != nil {
			return fmt.Errorf("store: insert user: %w", err)
		}
		switch n, err := res.RowsAffected(); {
		case err != nil:
			return fmt.Errorf("store: insert user: %w", err)
		case n == 0:
			return duplicate()
		}
		u.ID, err = res.LastInsertId()
		return err
	}
	switch err := tx.queryRow(ctx, qInsertUserReturning, args...).Scan(&u.ID); {
	case errors.Is(err, sql.ErrNoRows):
		return duplicate()
	case err != nil:
		return fmt.Errorf("store: insert user: %w", err)
	}
	return nil
}

// UpdateUser writes every mutable member of u.
func (tx *Tx) UpdateUser(ctx context.Context, u *parley.User) error {
	loc := u.Location
	if loc == nil {
		loc = &parley.Location{}
	}
	res, err := tx.exec(ctx, qUpdateUser,
		toNullString(u.FirstName), toNullString(u.LastName), toNullString(u.EmailAddress),
		toNullString(u.DateOfBirth), toNullBool(u.MessagingConsent),
		toNullString(loc.PostalCode), toNullString(loc.City), toNullString(loc.County),
		toNullString(loc.State), toNullString(loc.StateCode), toNullString(loc.TimeZone), nullJSON(u.CustomData),
		u.IsDeleted, micros(u.DateLastUpdated.Time), u.BrandID, u.ID)
	if err != nil {
		return fmt.Errorf("store: update user: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

func scanUser(row *sql.Row) (*parley.User, error) {
	u, err := scanUserFrom(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return u, err
}

// scanUserFrom scans a user from any row source: a *sql.Row or *sql.Rows.
func scanUserFrom(scan func(...any) error) (*parley.User, error) {
	var (
		u                                   parley.User
		first, last, email, dob, channel    sql.NullString
		postal, city, county, state, stCode sql.NullString
		timeZone                            sql.NullString
		customData                          sql.NullString
		consent                             sql.NullBool
		created, updated                    int64
	)
	err := scan(&u.ID, &u.BrandID, &u.PhoneNumber, &first, &last, &email, &dob,
		&consent, &postal, &city, &county, &state, &stCode, &timeZone, &customData, &channel,
		&u.IsDeleted, &created, &updated)
	if err != nil {
		return nil, fmt.Errorf("store: scan user: %w", err)
	}
	u.FirstName, u.LastName, u.EmailAddress = nullString(first), nullString(last), nullString(email)
	u.DateOfBirth, u.Channel = nullString(dob), nullString(channel)
	u.MessagingConsent = nullBool(consent)
	if postal.Valid {
		u.Location = &parley.Location{
			PostalCode: nullString(postal), City: nullString(city), County: nullString(county),
			State: nullString(state), StateCode: nullString(stCode), TimeZone: nullString(timeZone),
		}
	}
	if customData.Valid {
		u.CustomData = []byte(customData.String)
	}
	u.DateCreated = parley.Time{Time: fromMicros(created)}
	u.DateLastUpdated = parley.Time{Time: fromMicros(updated)}
	return &u, nil
}

// nullJSON stores a JSON document, SQL NULL for none (or JSON null).
func nullJSON(b []byte) sql.NullString {
	if b == nil || string(b) == "null" {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}

// FindUsersByIDs returns the live users among ids, by id, whatever their
// brand (the caller checks it): one statement per insertChunk ids where
// FindUserByID takes one each.
func (tx *Tx) FindUsersByIDs(ctx context.Context, ids []int64) (map[int64]*parley.User, error) {
	out := make(map[int64]*parley.User, len(ids))
	for chunk := range slices.Chunk(ids, insertChunk) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := tx.query(ctx, `SELECT `+userColumns+` FROM users WHERE id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("store: find users by id: %w", err)
		}
		us, err := collect(rows, scanUserFrom)
		if err != nil {
			return nil, fmt.Errorf("store: find users by id: %w", err)
		}
		for _, u := range us {
			if !u.IsDeleted {
				out[u.ID] = u
			}
		}
	}
	return out, nil
}
