package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/parleyhq/parley"
)

// The console's reads (D19): contact search, the inbox and the dashboard's
// figures. Each is answered from an index of migration 00015 (or an older
// one), so none reads every contact of a brand.

// nameExpr is the indexed form of a name column: PostgreSQL compares it in
// the "C" collation, where a prefix is a range of bytes, as SQLite does.
func (db *DB) nameExpr(col string) string {
	if db.engine == "postgres" {
		return `(lower(` + col + `) COLLATE "C")`
	}
	return `lower(` + col + `)`
}

func (db *DB) users(ctx context.Context, query string, args ...any) ([]*parley.User, error) {
	rows, err := db.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search users: %w", err)
	}
	return collect(rows, scanUserFrom)
}

// The console's queries; console_plan_test.go checks the index each takes.
const (
	qRecentUsers = `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		ORDER BY id DESC LIMIT ?`
	qUsersFromPhone = `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND phone_number >= ? ORDER BY phone_number LIMIT ?`
	qUsersPhoneRange = `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND phone_number >= ? AND phone_number < ? ORDER BY phone_number LIMIT ?`
	// No ORDER BY: with one, PostgreSQL's generic plan for the prepared
	// statement walked the brand's ids looking for the email (1.2 s at a
	// million contacts) instead of looking it up; UsersByEmail sorts.
	qUsersByEmail = `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND lower(email_address) = ? LIMIT ?`
	// PostgreSQL's: users_brand_email_c is its only index of the email
	// (migration 00052), and equal texts are equal in "C" too.
	qUsersByEmailPG = `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND (lower(email_address) COLLATE "C") = ? LIMIT ?`
	qCountContacts = `SELECT messaging_consent, count(*) FROM users
		WHERE brand_id = ? AND is_deleted = FALSE GROUP BY messaging_consent`
)

// qUsersNameRange is the name search on col; withFirst adds the first
// name's equality.
func (db *DB) qUsersNameRange(col string, withFirst bool) string {
	expr := db.nameExpr(col)
	q := `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND ` + expr + ` >= ? AND ` + expr + ` < ?`
	if withFirst {
		q += ` AND lower(first_name) = ?`
	}
	return q + ` ORDER BY ` + expr + ` LIMIT ?`
}

// RecentUsers returns the brand's newest contacts.
func (db *DB) RecentUsers(ctx context.Context, brandID int64, limit int) ([]*parley.User, error) {
	return db.users(ctx, qRecentUsers, brandID, limit)
}

// UsersByPhoneRange returns contacts whose number is in [lo, hi) (hi ""
// for no end), in number order: a prefix search on users_brand_phone_live.
func (db *DB) UsersByPhoneRange(ctx context.Context, brandID int64, lo, hi string, limit int) ([]*parley.User, error) {
	if hi == "" {
		return db.users(ctx, qUsersFromPhone, brandID, lo, limit)
	}
	return db.users(ctx, qUsersPhoneRange, brandID, lo, hi, limit)
}

// UsersByEmail returns contacts whose email, lower-cased, is email
// (users_brand_email; on PostgreSQL users_brand_email_c).
func (db *DB) UsersByEmail(ctx context.Context, brandID int64, email string, limit int) ([]*parley.User, error) {
	q := qUsersByEmail
	if db.engine == "postgres" {
		q = qUsersByEmailPG
	}
	us, err := db.users(ctx, q, brandID, email, limit)
	slices.SortFunc(us, func(a, b *parley.User) int { return cmp.Compare(a.ID, b.ID) })
	return us, err
}

// UsersByEmailRange returns contacts whose lower-cased email is in
// [lo, hi), in email order: the search by an email's beginning
// (users_brand_email; on PostgreSQL users_brand_email_c, in bytes).
func (db *DB) UsersByEmailRange(ctx context.Context, brandID int64, lo, hi string, limit int) ([]*parley.User, error) {
	expr := "lower(email_address)"
	if db.engine == "postgres" {
		expr = `(lower(email_address) COLLATE "C")`
	}
	q := `SELECT ` + userColumns + ` FROM users WHERE brand_id = ? AND is_deleted = FALSE AND ` + expr + ` >= ?`
	args := []any{brandID, lo}
	if hi != "" {
		q += ` AND ` + expr + ` < ?`
		args = append(args, hi)
	}
	return db.users(ctx, q+` ORDER BY `+expr+` LIMIT ?`, append(args, limit)...)
}

// UsersByNameRange returns contacts whose lower-cased first or last name
// (col "first_name" or "last_name") is in [lo, hi), in name order; first,
// when not "", must also be the lower-cased first name.
func (db *DB) UsersByNameRange(ctx context.Context, brandID int64, col, lo, hi, first string, limit int) ([]*parley.User, error) {
	if col != "first_name" && col != "last_name" {
		return nil, fmt.Errorf("store: search by %q", col)
	}
	args := []any{brandID, lo, hi}
	if first != "" {
		args = append(args, first)
	}
	return db.users(ctx, db.qUsersNameRange(col, first != ""), append(args, limit)...)
}

// ContactCounts are a brand's live contacts by consent.
type ContactCounts struct {
	Total, OptedIn, OptedOut int64
}

// CountContacts counts the brand's live contacts by consent, from
// users_brand_consent alone (on PostgreSQL users_brand_consent_id).
func (db *DB) CountContacts(ctx context.Context, brandID int64) (ContactCounts, error) {
	var c ContactCounts
	rows, err := db.query(ctx, qCountContacts, brandID)
	if err != nil {
		return c, fmt.Errorf("store: count contacts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var consent sql.NullBool
		var n int64
		if err := rows.Scan(&consent, &n); err != nil {
			return c, fmt.Errorf("store: count contacts: %w", err)
		}
		c.Total += n
		switch {
		case consent.Valid && consent.Bool:
			c.OptedIn += n
		case consent.Valid:
			c.OptedOut += n
		}
	}
	return c, rows.Err()
}

// FirstMessageIDSince returns an id from which the brand's messages
// created at or after t start, by a binary search over messages_brand_id:
// ids grow with creation time, so a few point reads replace an index on
// date_created that every send would have to maintain. Past the last id
// when none is.
func (db *DB) FirstMessageIDSince(ctx context.Context, brandID int64, t time.Time) (int64, error) {
	var lo, hi sql.NullInt64
	if err := db.queryRow(ctx, `SELECT min(id), max(id) FROM messages WHERE brand_id = ?`, brandID).Scan(&lo, &hi); err != nil {
		return 0, fmt.Errorf("store: message ids: %w", err)
	}
	if !lo.Valid {
		return 0, nil
	}
	since := micros(t)
	// Invariant: the answer is in [l, h]; h+1 means "none".
	l, h := lo.Int64, hi.Int64+1
	for l < h {
		mid := l + (h-l)/2
		var id, created int64
		err := db.queryRow(ctx, `SELECT id, date_created FROM messages WHERE brand_id = ? AND id >= ?
			ORDER BY id LIMIT 1`, brandID, mid).Scan(&id, &created)
		if err != nil {
			return 0, fmt.Errorf("store: message ids: %w", err)
		}
		if created >= since {
			h = mid
		} else {
			l = id + 1
		}
	}
	return l, nil
}

// MessageStatusCounts counts the brand's messages with id ≥ fromID created
// at or after since: the outbound ones by status, with the canceled ones
// (failed, error_code canceled) as "canceled" apart from "failed"
// (issue #32), and the inbound ones as "received".
func (db *DB) MessageStatusCounts(ctx context.Context, brandID, fromID int64, since time.Time) (map[string]int64, error) {
	rows, err := db.query(ctx, `SELECT CASE WHEN direction = 'inbound' THEN 'received'
		WHEN status = 'failed' AND error_code = 'canceled' THEN 'canceled' ELSE status END, count(*) FROM messages
		WHERE brand_id = ? AND id >= ? AND date_created >= ? GROUP BY 1`, brandID, fromID, micros(since))
	if err != nil {
		return nil, fmt.Errorf("store: message counts: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, fmt.Errorf("store: message counts: %w", err)
		}
		out[s] = n
	}
	return out, rows.Err()
}

// HourlySentDelivered counts the brand's outbound messages (id ≥ fromID)
// sent and delivered in each hour from since: index i is [since+i h,
// since+(i+1) h); hours is how many.
func (db *DB) HourlySentDelivered(ctx context.Context, brandID, fromID int64, since time.Time, hours int) (sent, delivered []int64, err error) {
	sent, delivered = make([]int64, hours), make([]int64, hours)
	start := micros(since)
	for _, col := range []struct {
		name string
		dst  []int64
	}{{"date_sent", sent}, {"date_delivered", delivered}} {
		rows, err := db.query(ctx, `SELECT (`+col.name+` - ?) / 3600000000, count(*) FROM messages
			WHERE brand_id = ? AND id >= ? AND direction = 'outbound' AND `+col.name+` >= ?
			GROUP BY 1`, start, brandID, fromID, start)
		if err != nil {
			return nil, nil, fmt.Errorf("store: hourly counts: %w", err)
		}
		for rows.Next() {
			var h, n int64
			if err := rows.Scan(&h, &n); err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("store: hourly counts: %w", err)
			}
			if h >= 0 && h < int64(hours) {
				col.dst[h] = n
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	return sent, delivered, nil
}

// HourlyConsent returns, for each of hours hours from since (a whole UTC
// hour), how many of the brand's contacts opted in and out (consent_hourly,
// migration 00043: one primary-key range).
func (db *DB) HourlyConsent(ctx context.Context, brandID int64, since time.Time, hours int) (ins, outs []int64, err error) {
	ins, outs = make([]int64, hours), make([]int64, hours)
	first := since.Unix() / 3600
	rows, err := db.query(ctx, `SELECT hour, opt_ins, opt_outs FROM consent_hourly WHERE brand_id = ? AND hour >= ? AND hour < ?`,
		brandID, first, first+int64(hours))
	if err != nil {
		return nil, nil, fmt.Errorf("store: hourly consent: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var h, in, out int64
		if err := rows.Scan(&h, &in, &out); err != nil {
			return nil, nil, fmt.Errorf("store: hourly consent: %w", err)
		}
		ins[h-first], outs[h-first] = in, out
	}
	return ins, outs, rows.Err()
}
