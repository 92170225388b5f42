package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
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

// AudienceTexts is how many contact text columns an AudienceRow holds.
const AudienceTexts = 11

// AudienceRow is a user's columns that D14 criteria read. Its byte
// slices are valid only while the callback that receives it runs.
type AudienceRow struct {
	ID      int64
	Deleted bool
	// Text: first_name, last_name, email_address, phone_number,
	// date_of_birth, postal_code, city, county, state, state_code,
	// time_zone; empty for null.
	Text                                     [AudienceTexts][]byte
	Consent                                  sql.NullBool
	DateCreated                              int64 // microseconds
	InboundCount, OutboundCount              int64
	LastInbound, LastOutbound, LastDelivered sql.NullInt64
	CustomData                               []byte // nil for null
}

// Clone returns r with bytes of its own.
func (r *AudienceRow) Clone() AudienceRow {
	c := *r
	n := len(r.CustomData)
	for _, t := range r.Text {
		n += len(t)
	}
	buf := make([]byte, 0, n)
	for i, t := range r.Text {
		buf = append(buf, t...)
		c.Text[i] = buf[len(buf)-len(t) : len(buf) : len(buf)]
	}
	if r.CustomData != nil {
		buf = append(buf, r.CustomData...)
		c.CustomData = buf[len(buf)-len(r.CustomData):]
	}
	return c
}

// A load reads a million rows; the SQLite driver's cost is per column
// (each takes its connection's mutex), and pgx's is a value per column,
// so a row is read as three: its id, its numbers and texts packed in one
// text (sep between values, numbers first, empty for null), and its
// custom data. A text holding sep itself (no server writes one, but an
// API caller may) makes the row's pieces miscount: that row is read
// again column by column.
const sep = 0x1f

func packedColumns(pg bool) string {
	num := func(col string) string { return `COALESCE(CAST(` + col + ` AS TEXT), '')` }
	s, consent, deleted, custom := `char(31)`, num(`messaging_consent`), `CAST(is_deleted AS TEXT)`, `custom_data`
	if pg {
		s = `chr(31)`
		consent = `COALESCE(CAST(CAST(messaging_consent AS INT) AS TEXT), '')`
		deleted = `CAST(CAST(is_deleted AS INT) AS TEXT)`
		custom = `CAST(custom_data AS TEXT)`
	}
	parts := []string{deleted, consent, num(`date_created`), num(`inbound_count`), num(`outbound_count`),
		num(`last_inbound_at`), num(`last_outbound_at`), num(`last_delivered_at`)}
	for _, c := range []string{`first_name`, `last_name`, `email_address`, `phone_number`, `date_of_birth`,
		`postal_code`, `city`, `county`, `state`, `state_code`, `time_zone`} {
		parts = append(parts, `COALESCE(`+c+`, '')`)
	}
	return `id, ` + strings.Join(parts, ` || `+s+` || `) + `, ` + custom
}

const packedNumbers = 8

// unpack fills r from a packed row; false if its pieces miscount.
func unpack(r *AudienceRow, id int64, packed, custom []byte, customNull bool) bool {
	var nums [packedNumbers][]byte
	for i := range nums {
		j := bytes.IndexByte(packed, sep)
		if j < 0 {
			return false
		}
		nums[i], packed = packed[:j], packed[j+1:]
	}
	for i := range r.Text {
		j := bytes.IndexByte(packed, sep)
		if i == len(r.Text)-1 {
			if j >= 0 {
				return false
			}
			j = len(packed)
		} else if j < 0 {
			return false
		}
		r.Text[i], packed = packed[:j], packed[min(j+1, len(packed)):]
	}
	r.ID = id
	r.Deleted = string(nums[0]) == "1" || string(nums[0]) == "true"
	r.Consent = sql.NullBool{Bool: string(nums[1]) == "1" || string(nums[1]) == "true", Valid: len(nums[1]) > 0}
	var ok bool
	if r.DateCreated, ok = atoi(nums[2]); !ok {
		return false
	}
	r.InboundCount, _ = atoi(nums[3])
	r.OutboundCount, _ = atoi(nums[4])
	for i, d := range []*sql.NullInt64{&r.LastInbound, &r.LastOutbound, &r.LastDelivered} {
		d.Int64, d.Valid = atoi(nums[5+i])
	}
	r.CustomData = nil
	if !customNull {
		r.CustomData = custom
	}
	return true
}

// atoi reads a decimal integer; false for none (null).
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			v, err := strconv.ParseInt(string(b), 10, 64)
			return v, err == nil
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// scanAudienceRows reads packed rows, calling fn with each; rows whose
// pieces miscount are returned by id, for a read column by column.
func scanAudienceRows(rows *sql.Rows, fn func(*AudienceRow) error) (last int64, n int, odd []int64, err error) {
	defer rows.Close()
	var r AudienceRow
	var packed, custom sql.RawBytes
	var id int64
	for rows.Next() {
		if err := rows.Scan(&id, &packed, &custom); err != nil {
			return 0, n, nil, fmt.Errorf("store: audience rows: %w", err)
		}
		last, n = id, n+1
		if !unpack(&r, id, packed, custom, custom == nil) {
			odd = append(odd, id)
			continue
		}
		if err := fn(&r); err != nil {
			return 0, n, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return 0, n, nil, fmt.Errorf("store: audience rows: %w", err)
	}
	return last, n, odd, nil
}

const audienceRowColumns = `id, is_deleted, first_name, last_name, email_address, phone_number, date_of_birth,
	postal_code, city, county, state, state_code, time_zone, messaging_consent, date_created,
	inbound_count, outbound_count, last_inbound_at, last_outbound_at, last_delivered_at, custom_data`

// oddAudienceRows reads rows column by column (texts holding sep).
func (db *DB) oddAudienceRows(ctx context.Context, brandID int64, ids []int64, fn func(*AudienceRow) error) error {
	if len(ids) == 0 {
		return nil
	}
	list, arg := db.idList(ids)
	rows, err := db.query(ctx, `SELECT `+audienceRowColumns+` FROM users WHERE brand_id = ? AND id IN (`+list+`)`, brandID, arg)
	if err != nil {
		return fmt.Errorf("store: audience rows: %w", err)
	}
	defer rows.Close()
	var r AudienceRow
	var text [AudienceTexts]sql.RawBytes
	var custom sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&r.ID, &r.Deleted, &text[0], &text[1], &text[2], &text[3], &text[4], &text[5], &text[6],
			&text[7], &text[8], &text[9], &text[10], &r.Consent, &r.DateCreated, &r.InboundCount, &r.OutboundCount,
			&r.LastInbound, &r.LastOutbound, &r.LastDelivered, &custom); err != nil {
			return fmt.Errorf("store: audience rows: %w", err)
		}
		for i := range text {
			r.Text[i] = text[i]
		}
		r.CustomData = nil
		if custom != nil {
			r.CustomData = custom
		}
		if err := fn(&r); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: audience rows: %w", err)
	}
	return nil
}

// audiencePage is how many users a load reads per statement: each
// statement's snapshot is short (SQLite's WAL is not held for the whole
// load), and its bytes are copied into a page of its own.
const audiencePage = 50_000

// EachAudienceRow calls fn with every user of the brand (deleted ones
// too), by id except for rows read column by column (after their page),
// reading pages of ids so no statement holds a snapshot for the whole
// brand. fn must not keep the row.
func (db *DB) EachAudienceRow(ctx context.Context, brandID int64, fn func(*AudienceRow) error) error {
	after := int64(0)
	for {
		rows, err := db.query(ctx, `SELECT `+packedColumns(db.engine == "postgres")+` FROM users
			WHERE brand_id = ? AND id > ? ORDER BY id LIMIT ?`, brandID, after, audiencePage)
		if err != nil {
			return fmt.Errorf("store: audience rows: %w", err)
		}
		last, n, odd, err := scanAudienceRows(rows, fn)
		if err != nil {
			return err
		}
		if err := db.oddAudienceRows(ctx, brandID, odd, fn); err != nil {
			return err
		}
		if n < audiencePage {
			return nil
		}
		after = last
	}
}

// AudienceRowsByID returns the brand's users among ids (any order).
func (db *DB) AudienceRowsByID(ctx context.Context, brandID int64, ids []int64) ([]AudienceRow, error) {
	var out []AudienceRow
	keep := func(r *AudienceRow) error { out = append(out, r.Clone()); return nil }
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 5000)]
		ids = ids[len(chunk):]
		list, arg := db.idList(chunk)
		rows, err := db.query(ctx, `SELECT `+packedColumns(db.engine == "postgres")+` FROM users
			WHERE brand_id = ? AND id IN (`+list+`)`, brandID, arg)
		if err != nil {
			return nil, fmt.Errorf("store: audience rows: %w", err)
		}
		_, _, odd, err := scanAudienceRows(rows, keep)
		if err != nil {
			return nil, err
		}
		if err := db.oddAudienceRows(ctx, brandID, odd, keep); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// UsersByID returns the brand's users among ids, by id.
func (db *DB) UsersByID(ctx context.Context, brandID int64, ids []int64) ([]*parley.User, error) {
	return db.usersByID(ctx, brandID, ids, "")
}

// usersByID returns the brand's users among ids for which the condition
// and (on the alias u, its parameters args; "" for none) holds, by id.
func (db *DB) usersByID(ctx context.Context, brandID int64, ids []int64, and string, args ...any) ([]*parley.User, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, arg := db.idList(ids)
	rows, err := db.query(ctx, `SELECT `+prefixed("u.", userColumns)+` FROM users u
		WHERE u.brand_id = ? AND u.id IN (`+list+`)`+and+` ORDER BY u.id`, append([]any{brandID, arg}, args...)...)
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

// AudienceChanges returns up to limit of the brand's users changed since
// pos (each once, by id) and the position to read from next: every change
// before it has been returned, now or before. more says changes are left
// past next (read again from there); more with no ids is a single
// transaction of more than limit changes, which no batch can split: the
// caller reads the brand again instead.
func (db *DB) AudienceChanges(ctx context.Context, brandID, pos int64, limit int) (ids []int64, next int64, more bool, err error) {
	next = pos
	var rows *sql.Rows
	pg := db.engine == "postgres"
	if pg {
		// The position first: every transaction below it has ended, so the
		// read below, whose snapshot is later, sees what it wrote.
		if next, err = db.AudiencePosition(ctx); err != nil {
			return nil, 0, false, err
		}
		rows, err = db.query(ctx, `SELECT user_id, xid::text::bigint FROM user_changes WHERE brand_id = ? AND xid >= ?::text::xid8
			ORDER BY xid LIMIT ?`, brandID, strconv.FormatInt(pos, 10), limit+1)
	} else {
		rows, err = db.query(ctx, `SELECT user_id, seq FROM user_changes WHERE brand_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
			brandID, pos, limit+1)
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("store: audience changes: %w", err)
	}
	defer rows.Close()
	var seqs []int64
	for rows.Next() {
		var id, seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, 0, false, fmt.Errorf("store: audience changes: %w", err)
		}
		ids, seqs = append(ids, id), append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("store: audience changes: %w", err)
	}
	switch {
	case len(ids) > limit && pg:
		// Cut before the first transaction not read whole; the next read
		// starts at it (xid >= next), unless the snapshot's xmin is lower.
		cut := slices.Index(seqs, seqs[limit])
		ids, next, more = ids[:cut], min(next, seqs[limit]), true
	case len(ids) > limit:
		ids, next, more = ids[:limit], seqs[limit-1], true
	case !pg && len(seqs) > 0:
		next = seqs[len(seqs)-1]
	}
	slices.Sort(ids)
	return slices.Compact(ids), next, more, nil
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
	ids, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("store: segment members: %w", err)
	}
	return ids, nil
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

// SegmentedBrands returns up to limit brands that have segments not
// archived, the most recently changed first: the brands whose questions
// a node's audience engine loads when it starts. Campaigns and flows name
// segments, so their brands are among these.
func (db *DB) SegmentedBrands(ctx context.Context, limit int) ([]int64, error) {
	rows, err := db.query(ctx, `SELECT brand_id FROM segments WHERE is_archived = FALSE
		GROUP BY brand_id ORDER BY max(date_last_updated) DESC, brand_id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: segmented brands: %w", err)
	}
	ids, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("store: segmented brands: %w", err)
	}
	return ids, nil
}

// AudienceSize is about how many users the brand has, deleted ones too:
// a load sizes its columns once instead of growing them (growing copied
// each several times and doubled the load's garbage). SQLite counts them
// (an index's entries); PostgreSQL takes the planner's estimate, which
// the import's ANALYZE keeps fresh, because a count after a bulk import
// reads the whole table (1.1 s at 1,000,000 rows).
func (db *DB) AudienceSize(ctx context.Context, brandID int64) (int, error) {
	if db.engine != "postgres" {
		var n int
		if err := db.queryRow(ctx, `SELECT count(*) FROM users WHERE brand_id = ?`, brandID).Scan(&n); err != nil {
			return 0, fmt.Errorf("store: audience size: %w", err)
		}
		return n, nil
	}
	var plan string
	// The brand's id is an integer: nothing of a caller's reaches the text.
	if err := db.queryRow(ctx, `EXPLAIN (FORMAT JSON) SELECT id FROM users WHERE brand_id = `+
		strconv.FormatInt(brandID, 10)).Scan(&plan); err != nil {
		return 0, fmt.Errorf("store: audience size: %w", err)
	}
	var p []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal([]byte(plan), &p); err != nil || len(p) == 0 {
		return 0, nil
	}
	return int(min(p[0].Plan.Rows, 1e9)), nil
}
