package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley"
)

// ImportRecord is an import as stored: the resource and what running it
// needs.
type ImportRecord struct {
	parley.Import
	BlobKey   string
	Delimiter string
	Columns   []string
	// NextOffset and NextLine locate the first row not yet committed.
	NextOffset, NextLine int64
}

const importColumns = `id, brand_id, status, file_name, blob_key, on_duplicate, messaging_consent_default, delimiter,
	columns, total_rows, processed_rows, created, updated, skipped, failed, next_offset, next_line, error,
	date_created, date_completed, default_country, mapping`

func scanImport(scan func(...any) error) (*ImportRecord, error) {
	var (
		r         ImportRecord
		consent   sql.NullBool
		columns   string
		errText   sql.NullString
		created   int64
		completed sql.NullInt64
		mapping   sql.NullString
	)
	err := scan(&r.ID, &r.BrandID, &r.Status, &r.FileName, &r.BlobKey, &r.OnDuplicate, &consent, &r.Delimiter,
		&columns, &r.TotalRows, &r.ProcessedRows, &r.Created, &r.Updated, &r.Skipped, &r.Failed, &r.NextOffset,
		&r.NextLine, &errText, &created, &completed, &r.DefaultCountry, &mapping)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: scan import: %w", err)
	}
	if err := json.Unmarshal([]byte(columns), &r.Columns); err != nil {
		return nil, fmt.Errorf("store: import %d columns: %w", r.ID, err)
	}
	r.Mapping = map[string]string{}
	if mapping.Valid {
		if err := json.Unmarshal([]byte(mapping.String), &r.Mapping); err != nil {
			return nil, fmt.Errorf("store: import %d mapping: %w", r.ID, err)
		}
	}
	r.MessagingConsentDefault = nullBool(consent)
	r.Error = nullString(errText)
	r.DateCreated = parley.Time{Time: fromMicros(created)}
	if completed.Valid {
		t := parley.Time{Time: fromMicros(completed.Int64)}
		r.DateCompleted = &t
	}
	return &r, nil
}

// InsertImport stores a new import and sets its ID and date.
func (tx *Tx) InsertImport(ctx context.Context, r *ImportRecord) error {
	cols, err := json.Marshal(r.Columns)
	if err != nil {
		return err
	}
	var mapping sql.NullString
	if len(r.Mapping) > 0 {
		m, err := json.Marshal(r.Mapping)
		if err != nil {
			return err
		}
		mapping = sql.NullString{String: string(m), Valid: true}
	}
	r.DateCreated = parley.Time{Time: tx.now}
	row := tx.queryRow(ctx, `INSERT INTO imports (brand_id, status, file_name, blob_key, on_duplicate,
	messaging_consent_default, delimiter, columns, total_rows, next_offset, next_line, date_created,
	default_country, mapping)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		r.BrandID, r.Status, r.FileName, r.BlobKey, r.OnDuplicate, toNullBool(r.MessagingConsentDefault), r.Delimiter,
		string(cols), r.TotalRows, r.NextOffset, r.NextLine, micros(tx.now), r.DefaultCountry, mapping)
	if err := row.Scan(&r.ID); err != nil {
		return fmt.Errorf("store: insert import: %w", err)
	}
	return nil
}

// FindImport returns an import of the brand, or ErrNotFound.
func (db *DB) FindImport(ctx context.Context, brandID, id int64) (*ImportRecord, error) {
	return scanImport(db.queryRow(ctx, `SELECT `+importColumns+` FROM imports WHERE brand_id = ? AND id = ?`, brandID, id).Scan)
}

// ListImports returns up to limit imports of the brand with id below
// beforeID (0: no bound), newest first.
func (db *DB) ListImports(ctx context.Context, brandID, beforeID int64, limit int) ([]*ImportRecord, error) {
	q := `SELECT ` + importColumns + ` FROM imports WHERE brand_id = ?`
	args := []any{brandID}
	if beforeID != 0 {
		q += ` AND id < ?`
		args = append(args, beforeID)
	}
	rows, err := db.query(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: list imports: %w", err)
	}
	defer rows.Close()
	out := []*ImportRecord{}
	for rows.Next() {
		r, err := scanImport(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ClaimImportBatch takes an unfinished import for one batch that starts at
// offset, and reports false when its next row is no longer there: another
// run of the same import (a job taken over while its first run still
// works) has committed past it. It locks the import's row on PostgreSQL,
// so two runs cannot both commit the same rows.
func (tx *Tx) ClaimImportBatch(ctx context.Context, brandID, id, offset int64) (bool, error) {
	res, err := tx.exec(ctx, `UPDATE imports SET status = ? WHERE brand_id = ? AND id = ? AND next_offset = ?
	AND status IN (?, ?)`, parley.ImportRunning, brandID, id, offset, parley.ImportQueued, parley.ImportRunning)
	if err != nil {
		return false, fmt.Errorf("store: claim import: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// SaveImportProgress writes an import's status, counters, position, error
// and completion date.
func (tx *Tx) SaveImportProgress(ctx context.Context, r *ImportRecord) error {
	var completed sql.NullInt64
	if r.DateCompleted != nil {
		completed = sql.NullInt64{Int64: micros(r.DateCompleted.Time), Valid: true}
	}
	_, err := tx.exec(ctx, `UPDATE imports SET status = ?, processed_rows = ?, created = ?, updated = ?, skipped = ?,
	failed = ?, next_offset = ?, next_line = ?, error = ?, date_completed = ? WHERE brand_id = ? AND id = ?`,
		r.Status, r.ProcessedRows, r.Created, r.Updated, r.Skipped, r.Failed, r.NextOffset, r.NextLine,
		toNullString(r.Error), completed, r.BrandID, r.ID)
	if err != nil {
		return fmt.Errorf("store: save import: %w", err)
	}
	return nil
}

// FailImport marks an unfinished import failed with the reason; it reports
// false when the import had already ended.
func (tx *Tx) FailImport(ctx context.Context, brandID, id int64, reason string) (bool, error) {
	res, err := tx.exec(ctx, `UPDATE imports SET status = ?, error = ?, date_completed = ? WHERE brand_id = ? AND id = ?
	AND status IN (?, ?)`, parley.ImportFailed, reason, micros(tx.now), brandID, id, parley.ImportQueued, parley.ImportRunning)
	if err != nil {
		return false, fmt.Errorf("store: fail import: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ClaimImportPhones gives each number to the row on the matching line,
// unless an earlier row of the import has it: for those numbers it returns
// that row's line. The numbers must be distinct.
func (tx *Tx) ClaimImportPhones(ctx context.Context, brandID, importID int64, phones []string, lines []int64) (map[string]int64, error) {
	taken := map[string]int64{}
	for start := 0; start < len(phones); start += insertChunk {
		end := min(start+insertChunk, len(phones))
		var q strings.Builder
		q.WriteString(`INSERT INTO import_phones (import_id, brand_id, phone_number, line) VALUES `)
		args := make([]any, 0, 4*(end-start))
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, importID, brandID, phones[i], lines[i])
		}
		q.WriteString(` ON CONFLICT (import_id, phone_number) DO NOTHING RETURNING phone_number`)
		claimed, err := tx.queryStrings(ctx, q.String(), args...)
		if err != nil {
			return nil, fmt.Errorf("store: claim import phones: %w", err)
		}
		if len(claimed) == end-start {
			continue
		}
		got := make(map[string]bool, len(claimed))
		for _, p := range claimed {
			got[p] = true
		}
		var lost []any
		for _, p := range phones[start:end] {
			if !got[p] {
				lost = append(lost, p)
			}
		}
		rows, err := tx.query(ctx, `SELECT phone_number, line FROM import_phones WHERE import_id = ? AND phone_number IN (`+
			placeholders(len(lost))+`)`, append([]any{importID}, lost...)...)
		if err != nil {
			return nil, fmt.Errorf("store: import phones: %w", err)
		}
		for rows.Next() {
			var p string
			var line int64
			if err := rows.Scan(&p, &line); err != nil {
				rows.Close()
				return nil, err
			}
			taken[p] = line
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return taken, nil
}

// insertChunk bounds the rows of one multi-row statement, well inside both
// engines' limits on bound parameters.
const insertChunk = 500

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func (tx *Tx) queryStrings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := tx.query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteImportPhones forgets the numbers an import claimed, once it ends.
func (tx *Tx) DeleteImportPhones(ctx context.Context, brandID, importID int64) error {
	if _, err := tx.exec(ctx, `DELETE FROM import_phones WHERE brand_id = ? AND import_id = ?`, brandID, importID); err != nil {
		return fmt.Errorf("store: delete import phones: %w", err)
	}
	return nil
}

// FindUsersByPhones returns the brand's live users with these E.164
// numbers, by number.
func (tx *Tx) FindUsersByPhones(ctx context.Context, brandID int64, phones []string) (map[string]*parley.User, error) {
	out := make(map[string]*parley.User, len(phones))
	for start := 0; start < len(phones); start += insertChunk {
		end := min(start+insertChunk, len(phones))
		args := make([]any, 0, 1+end-start)
		args = append(args, brandID)
		for _, p := range phones[start:end] {
			args = append(args, p)
		}
		rows, err := tx.query(ctx, `SELECT `+userColumns+` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND phone_number IN (`+placeholders(end-start)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("store: find users by phone: %w", err)
		}
		for rows.Next() {
			u, err := scanUserFrom(rows.Scan)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out[u.PhoneNumber] = u
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// InsertUsers stores new users in as few statements as it can and sets
// their IDs. A user whose number a live user of the brand took meanwhile is
// not stored and keeps ID 0. It records no history: InsertUsersWithHistory
// does.
func (tx *Tx) InsertUsers(ctx context.Context, users []*parley.User) error {
	return tx.insertUsers(ctx, users, false)
}

// InsertUsersWithHistory is InsertUsers that also records each stored
// user's creation in its history (D18), as InsertHistory would the
// entries of a new contact: its consent when set, then each custom data
// value by key, old_value null, at the transaction's time with its
// Origin; and adds the consents to the hourly counts. The entries are
// read from the rows just stored, in SQL: on PostgreSQL by the users'
// INSERT itself (a data-modifying WITH), on SQLite by one INSERT … SELECT
// after it, so an import's batch binds no parameter per entry (issue #35).
func (tx *Tx) InsertUsersWithHistory(ctx context.Context, users []*parley.User) error {
	if err := tx.insertUsers(ctx, users, true); err != nil {
		return err
	}
	type counts struct{ ins, outs int64 }
	byBrand := map[int64]*counts{}
	for _, u := range users {
		if u.ID == 0 || u.MessagingConsent == nil {
			continue
		}
		c := byBrand[u.BrandID]
		if c == nil {
			c = &counts{}
			byBrand[u.BrandID] = c
		}
		if *u.MessagingConsent {
			c.ins++
		} else {
			c.outs++
		}
	}
	for brandID, c := range byBrand {
		if err := tx.addConsentHourly(ctx, brandID, c.ins, c.outs); err != nil {
			return err
		}
	}
	return nil
}

// createdHistory writes the creation entries of the users in the CTE
// created: consent first, then custom_data's keys in byte order, as
// service.changes orders them. A value's text is the stored JSON's
// (json_each keeps it on PostgreSQL's json type, -> on SQLite), which is
// already compact: the value changes would have given InsertHistory. Its
// parameters are the entries' source, detail, message and time.
const createdHistory = `INSERT INTO user_history (brand_id, user_id, field, old_value, new_value, source, detail,
	message_id, occurred_at)
	SELECT brand_id, id, field, NULL, value, ?, ?, ?, ? FROM (
		SELECT brand_id, id, 0 AS k, 'messaging_consent' AS field,
			CASE WHEN messaging_consent THEN 'true' ELSE 'false' END AS value
		FROM created WHERE messaging_consent IS NOT NULL
		UNION ALL
		SELECT created.brand_id, created.id, 1, 'custom_data.' || j.key, %s FROM created, json_each(created.custom_data) j
		WHERE %s
	) x ORDER BY id, k, field %s`

var (
	// After the CTE created, which SQLite's statement makes of the ids.
	createdHistorySQLite   = fmt.Sprintf(createdHistory, `created.custom_data -> j.fullkey`, `j.type <> 'null'`, ``)
	createdHistoryPostgres = fmt.Sprintf(createdHistory, `j.value::text`, `json_typeof(j.value) <> 'null'`, `COLLATE "C"`)
)

func (tx *Tx) insertUsers(ctx context.Context, users []*parley.User, history bool) error {
	const cols = 18
	o := tx.historyOrigin()
	var msg sql.NullInt64
	if o.MessageID != 0 {
		msg = sql.NullInt64{Int64: o.MessageID, Valid: true}
	}
	pg := tx.db.engine == "postgres"
	for start := 0; start < len(users); start += insertChunk {
		batch := users[start:min(start+insertChunk, len(users))]
		var q strings.Builder
		if history && pg {
			q.WriteString(`WITH created AS (`)
		}
		q.WriteString(`INSERT INTO users (brand_id, phone_number, first_name, last_name, email_address, date_of_birth,
	messaging_consent, postal_code, city, county, state, state_code, time_zone, custom_data, channel, is_deleted,
	date_created, date_last_updated) VALUES `)
		args := make([]any, 0, cols*len(batch)+4)
		byPhone := make(map[string]*parley.User, len(batch))
		for i, u := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			loc := u.Location
			if loc == nil {
				loc = &parley.Location{}
			}
			args = append(args, u.BrandID, u.PhoneNumber,
				toNullString(u.FirstName), toNullString(u.LastName), toNullString(u.EmailAddress),
				toNullString(u.DateOfBirth), toNullBool(u.MessagingConsent),
				toNullString(loc.PostalCode), toNullString(loc.City), toNullString(loc.County),
				toNullString(loc.State), toNullString(loc.StateCode), toNullString(loc.TimeZone), nullJSON(u.CustomData),
				toNullString(u.Channel), u.IsDeleted, micros(u.DateCreated.Time), micros(u.DateLastUpdated.Time))
			byPhone[u.PhoneNumber] = u
		}
		// The conflict is the live-number index (D5): a user created through
		// the API while this batch ran.
		q.WriteString(` ON CONFLICT DO NOTHING RETURNING id, phone_number`)
		if history && pg {
			// The history is the same statement's: its rows are those the
			// insert returns.
			q.WriteString(`, brand_id, messaging_consent, custom_data), history AS (` + createdHistoryPostgres +
				`) SELECT id, phone_number FROM created`)
			args = append(args, o.Source, o.Detail, msg, micros(tx.now))
		}
		rows, err := tx.query(ctx, q.String(), args...)
		if err != nil {
			return fmt.Errorf("store: insert users: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			var phone string
			if err := rows.Scan(&id, &phone); err != nil {
				rows.Close()
				return fmt.Errorf("store: insert users: %w", err)
			}
			if u := byPhone[phone]; u != nil {
				u.ID = id
			}
			if history && !pg {
				ids = append(ids, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: insert users: %w", err)
		}
		if history && !pg && len(ids) > 0 {
			list, arg := tx.db.idList(ids)
			if _, err := tx.exec(ctx, `WITH created AS (SELECT brand_id, id, messaging_consent, custom_data FROM users
	WHERE id IN (`+list+`)) `+createdHistorySQLite, arg, o.Source, o.Detail, msg,
				micros(tx.now)); err != nil {
				return fmt.Errorf("store: history of created users: %w", err)
			}
		}
	}
	return nil
}

// InsertEvents appends events to the outbox, payloads[i] being events[i]
// as delivered, in one statement per chunk.
func (tx *Tx) InsertEvents(ctx context.Context, brandID int64, events []*parley.Event, payloads [][]byte) error {
	for start := 0; start < len(events); start += insertChunk {
		end := min(start+insertChunk, len(events))
		var q strings.Builder
		q.WriteString(`INSERT INTO events (id, brand_id, type, payload, date_created) VALUES `)
		args := make([]any, 0, 5*(end-start))
		for i := start; i < end; i++ {
			if i > start {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?)")
			e := events[i]
			args = append(args, e.ID, brandID, e.Type, string(payloads[i]), micros(e.CreatedAt.Time))
		}
		if _, err := tx.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("store: insert events: %w", err)
		}
	}
	return nil
}

// InsertImportErrors records rejected rows of an import.
func (tx *Tx) InsertImportErrors(ctx context.Context, brandID, importID int64, errs []parley.ImportError) error {
	for start := 0; start < len(errs); start += insertChunk {
		batch := errs[start:min(start+insertChunk, len(errs))]
		var q strings.Builder
		q.WriteString(`INSERT INTO import_errors (brand_id, import_id, line, field, type, msg, cells) VALUES `)
		args := make([]any, 0, 7*len(batch))
		for i, e := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			var cells sql.NullString
			if e.Cells != nil {
				b, err := json.Marshal(e.Cells)
				if err != nil {
					return err
				}
				cells = sql.NullString{String: string(b), Valid: true}
			}
			args = append(args, brandID, importID, e.Line, e.Field, e.Type, e.Msg, cells)
		}
		if _, err := tx.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("store: import errors: %w", err)
		}
	}
	return nil
}

// EachImportError calls fn with every rejected row of an import, in the
// order of the file.
func (db *DB) EachImportError(ctx context.Context, brandID, importID int64, fn func(*parley.ImportError) error) error {
	rows, err := db.query(ctx, `SELECT line, field, type, msg, cells FROM import_errors WHERE brand_id = ? AND import_id = ?
	ORDER BY id`, brandID, importID)
	if err != nil {
		return fmt.Errorf("store: import errors: %w", err)
	}
	defer rows.Close()
	var e parley.ImportError
	var cells sql.NullString
	for rows.Next() {
		if err := rows.Scan(&e.Line, &e.Field, &e.Type, &e.Msg, &cells); err != nil {
			return fmt.Errorf("store: scan import error: %w", err)
		}
		e.Cells = nil
		if cells.Valid {
			if err := json.Unmarshal([]byte(cells.String), &e.Cells); err != nil {
				return fmt.Errorf("store: import error cells: %w", err)
			}
		}
		if err := fn(&e); err != nil {
			return err
		}
	}
	return rows.Err()
}

// EachUser calls fn with every live user of the brand, by id, reading a
// page at a time so no read stays open for the whole brand.
func (db *DB) EachUser(ctx context.Context, brandID int64, fn func(*parley.User) error) error {
	const page = 1000
	var after int64
	for {
		rows, err := db.query(ctx, `SELECT `+userColumns+` FROM users WHERE brand_id = ? AND is_deleted = FALSE
		AND id > ? ORDER BY id LIMIT ?`, brandID, after, page)
		if err != nil {
			return fmt.Errorf("store: list users: %w", err)
		}
		var users []*parley.User
		for rows.Next() {
			u, err := scanUserFrom(rows.Scan)
			if err != nil {
				rows.Close()
				return err
			}
			users = append(users, u)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: list users: %w", err)
		}
		for _, u := range users {
			if err := fn(u); err != nil {
				return err
			}
		}
		if len(users) < page {
			return nil
		}
		after = users[len(users)-1].ID
	}
}
