package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// What the audience engine (internal/audience, issue #34) reads: the
// users' segment columns, the change log of migration 00049, the frozen
// members of POINT IN TIME segments, and criteria resolved and checked by
// the SQL compiler, so both paths refuse the same criteria with the same
// errors.

// AudienceRow is a user's columns that D14 criteria read.
type AudienceRow struct {
	ID                                             int64
	Deleted                                        bool
	FirstName, LastName, Email, Phone, DateOfBirth string // "" for null
	PostalCode, City, County, State, StateCode     string
	TimeZone                                       string
	Consent                                        sql.NullBool
	DateCreated                                    int64 // microseconds
	InboundCount, OutboundCount                    int64
	LastInbound, LastOutbound, LastDelivered       sql.NullInt64
	CustomData                                     []byte // nil for null
}

const audienceRowColumns = `id, is_deleted, first_name, last_name, email_address, phone_number, date_of_birth,
	postal_code, city, county, state, state_code, time_zone, messaging_consent, date_created,
	inbound_count, outbound_count, last_inbound_at, last_outbound_at, last_delivered_at, custom_data`

func scanAudienceRows(rows *sql.Rows, fn func(*AudienceRow) error) (last int64, n int, err error) {
	defer rows.Close()
	var r AudienceRow
	var text [11]sql.NullString
	var custom sql.NullString
	for rows.Next() {
		if err := rows.Scan(&r.ID, &r.Deleted, &text[0], &text[1], &text[2], &text[3], &text[4], &text[5], &text[6],
			&text[7], &text[8], &text[9], &text[10], &r.Consent, &r.DateCreated, &r.InboundCount, &r.OutboundCount,
			&r.LastInbound, &r.LastOutbound, &r.LastDelivered, &custom); err != nil {
			return 0, n, fmt.Errorf("store: audience rows: %w", err)
		}
		r.FirstName, r.LastName, r.Email, r.Phone, r.DateOfBirth = text[0].String, text[1].String, text[2].String, text[3].String, text[4].String
		r.PostalCode, r.City, r.County, r.State, r.StateCode, r.TimeZone = text[5].String, text[6].String, text[7].String, text[8].String, text[9].String, text[10].String
		r.CustomData = nil
		if custom.Valid {
			r.CustomData = []byte(custom.String)
		}
		if err := fn(&r); err != nil {
			return 0, n, err
		}
		last, n = r.ID, n+1
	}
	if err := rows.Err(); err != nil {
		return 0, n, fmt.Errorf("store: audience rows: %w", err)
	}
	return last, n, nil
}

// EachAudienceRow calls fn with every user of the brand (deleted ones
// too), by id, reading pages of ids so no statement holds a snapshot for
// the whole brand. fn must not keep the row.
func (db *DB) EachAudienceRow(ctx context.Context, brandID int64, fn func(*AudienceRow) error) error {
	const page = 20000
	after := int64(0)
	for {
		rows, err := db.query(ctx, `SELECT `+audienceRowColumns+` FROM users WHERE brand_id = ? AND id > ? ORDER BY id LIMIT ?`,
			brandID, after, page)
		if err != nil {
			return fmt.Errorf("store: audience rows: %w", err)
		}
		last, n, err := scanAudienceRows(rows, fn)
		if err != nil {
			return err
		}
		if n < page {
			return nil
		}
		after = last
	}
}

// AudienceRowsByID calls fn with the brand's users among ids (any order).
func (db *DB) AudienceRowsByID(ctx context.Context, brandID int64, ids []int64, fn func(*AudienceRow) error) error {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 5000)]
		ids = ids[len(chunk):]
		list := make([]string, len(chunk))
		for i, id := range chunk {
			list[i] = strconv.FormatInt(id, 10) // integers only: nothing of a caller's reaches the text
		}
		rows, err := db.query(ctx, `SELECT `+audienceRowColumns+` FROM users WHERE brand_id = ? AND id IN (`+
			strings.Join(list, ",")+`)`, brandID)
		if err != nil {
			return fmt.Errorf("store: audience rows: %w", err)
		}
		if _, _, err := scanAudienceRows(rows, fn); err != nil {
			return err
		}
	}
	return nil
}

// UsersByID returns the brand's users among ids, by id.
func (db *DB) UsersByID(ctx context.Context, brandID int64, ids []int64) ([]*parley.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	rows, err := db.query(ctx, `SELECT `+userColumns+` FROM users WHERE brand_id = ? AND id IN (`+
		strings.Join(list, ",")+`) ORDER BY id`, brandID)
	if err != nil {
		return nil, fmt.Errorf("store: users by id: %w", err)
	}
	return collect(rows, scanUserFrom)
}

// AudiencePosition is where an engine that reads the brand now starts
// catching up from (AudienceChanges): SQLite, the last change's seq;
// PostgreSQL, the xmin of the current snapshot, so a transaction still
// open now is read again later whatever its commit order.
func (db *DB) AudiencePosition(ctx context.Context) (int64, error) {
	q := `SELECT COALESCE(max(seq), 0) FROM user_changes`
	if db.engine == "postgres" {
		q = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
	}
	var pos int64
	if err := db.queryRow(ctx, q).Scan(&pos); err != nil {
		return 0, fmt.Errorf("store: audience position: %w", err)
	}
	return pos, nil
}

// AudienceChanges returns the brand's users changed since pos (each
// once) and the position to read from next. More than limit changes
// return more than limit ids: the caller reads the brand again instead.
func (db *DB) AudienceChanges(ctx context.Context, brandID, pos int64, limit int) ([]int64, int64, error) {
	next := pos
	var rows *sql.Rows
	var err error
	if db.engine == "postgres" {
		// The position first: every transaction below it has ended, so the
		// read below, whose snapshot is later, sees what it wrote.
		if next, err = db.AudiencePosition(ctx); err != nil {
			return nil, 0, err
		}
		rows, err = db.query(ctx, `SELECT user_id, 0 FROM user_changes WHERE brand_id = ? AND xid >= ?::text::xid8 LIMIT ?`,
			brandID, strconv.FormatInt(pos, 10), limit+1)
	} else {
		rows, err = db.query(ctx, `SELECT user_id, seq FROM user_changes WHERE brand_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
			brandID, pos, limit+1)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("store: audience changes: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id, seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, 0, fmt.Errorf("store: audience changes: %w", err)
		}
		ids = append(ids, id)
		next = max(next, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("store: audience changes: %w", err)
	}
	slices.Sort(ids)
	return slices.Compact(ids), next, nil
}

// userChangesKept is how long the change log keeps a change; an engine
// that has not caught up for longer reads the brand again.
const userChangesKept = time.Hour

// purgeUserChanges deletes changes older than userChangesKept, by the
// database's clock (the triggers stamp them with it). SQLite's seq grows
// with time: the rows before the first kept one go, found by the rowid.
func (tx *Tx) purgeUserChanges(ctx context.Context) (int64, error) {
	q := `DELETE FROM user_changes WHERE seq < COALESCE((SELECT seq FROM user_changes
		WHERE at >= CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) - ? ORDER BY seq LIMIT 1),
		(SELECT max(seq) + 1 FROM user_changes))`
	if tx.db.engine == "postgres" {
		q = `DELETE FROM user_changes WHERE at < (extract(epoch FROM clock_timestamp()) * 1000000)::bigint - ?`
	}
	res, err := tx.exec(ctx, q, userChangesKept.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("store: purge user changes: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// SegmentMemberIDs returns the frozen members of a POINT IN TIME segment.
func (db *DB) SegmentMemberIDs(ctx context.Context, segmentID int64) ([]int64, error) {
	rows, err := db.query(ctx, `SELECT user_id FROM segment_members WHERE segment_id = ?`, segmentID)
	if err != nil {
		return nil, fmt.Errorf("store: segment members: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: segment members: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ResolvedAudience is an audience checked by the SQL compiler, with what
// an evaluator needs besides the users.
type ResolvedAudience struct {
	// PointInTime is the frozen segment whose members are the audience,
	// else 0 and Criteria are.
	PointInTime int64
	Criteria    []parley.SegmentCriterion
	// Segments are the brand's segments the criteria may name.
	Segments map[int64]*parley.Segment
	// Today is midnight UTC of the clock's day.
	Today time.Time
}

// ResolveAudience checks a as CountAudience would (the same errors) and
// resolves it.
func (db *DB) ResolveAudience(ctx context.Context, brandID int64, a Audience) (*ResolvedAudience, error) {
	_, _, r, err := db.compileAudience(ctx, db, brandID, a, db.Now())
	return r, err
}

// IsPostgres reports whether the database is PostgreSQL.
func (db *DB) IsPostgres() bool { return db.engine == "postgres" }
