package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley"
)

const fieldColumns = `id, brand_id, field_name, custom_data_type, description, subtype, available_enum_values,
	include_in_ai_prompt, include_user_answers, is_append, is_auto_collected, extraction_prompt,
	is_emphasize_current, is_emphasize_personal`

// CreateCustomField stores f under its custom_data key and sets its ID. A
// field whose key the brand already has answers EDuplicate.
func (tx *Tx) CreateCustomField(ctx context.Context, f *parley.CustomField, key string) error {
	enum, err := json.Marshal(nonNil(f.AvailableEnumValues))
	if err != nil {
		return err
	}
	row := tx.queryRow(ctx, `INSERT INTO custom_fields (brand_id, field_name, field_key, custom_data_type,
	description, subtype, available_enum_values, include_in_ai_prompt, include_user_answers, is_append,
	is_auto_collected, extraction_prompt, is_emphasize_current, is_emphasize_personal)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		f.BrandID, f.FieldName, key, f.CustomDataType, f.Description, f.Subtype, string(enum),
		f.IncludeInAIPrompt, f.IncludeUserAnswers, f.IsAppend, f.IsAutoCollected, f.ExtractionPrompt,
		f.IsEmphasizeCurrent, f.IsEmphasizePersonal)
	if err := row.Scan(&f.ID); err != nil {
		if isUniqueViolation(err) {
			return parley.Errorf(parley.EDuplicate, "Duplicate entry for '%s'", key)
		}
		return fmt.Errorf("store: insert custom field: %w", err)
	}
	return nil
}

// ListCustomFields returns the brand's custom data fields, ordered by id.
func (db *DB) ListCustomFields(ctx context.Context, brandID int64) ([]*parley.CustomField, error) {
	return listCustomFields(ctx, db, brandID)
}

// ListCustomFields is DB.ListCustomFields inside the transaction.
func (tx *Tx) ListCustomFields(ctx context.Context, brandID int64) ([]*parley.CustomField, error) {
	return listCustomFields(ctx, tx, brandID)
}

func listCustomFields(ctx context.Context, q querier, brandID int64) ([]*parley.CustomField, error) {
	rows, err := q.query(ctx, `SELECT `+fieldColumns+` FROM custom_fields WHERE brand_id = ? ORDER BY id`, brandID)
	if err != nil {
		return nil, fmt.Errorf("store: list custom fields: %w", err)
	}
	defer rows.Close()
	out := []*parley.CustomField{}
	for rows.Next() {
		var f parley.CustomField
		var enum string
		if err := rows.Scan(&f.ID, &f.BrandID, &f.FieldName, &f.CustomDataType, &f.Description, &f.Subtype, &enum,
			&f.IncludeInAIPrompt, &f.IncludeUserAnswers, &f.IsAppend, &f.IsAutoCollected, &f.ExtractionPrompt,
			&f.IsEmphasizeCurrent, &f.IsEmphasizePersonal); err != nil {
			return nil, fmt.Errorf("store: scan custom field: %w", err)
		}
		if err := json.Unmarshal([]byte(enum), &f.AvailableEnumValues); err != nil {
			return nil, fmt.Errorf("store: custom field %d enum: %w", f.ID, err)
		}
		out = append(out, &f)
	}
	return out, rows.Err()
}

// FindCustomField returns a field of the brand, or ErrNotFound.
func (tx *Tx) FindCustomField(ctx context.Context, brandID, id int64) (*parley.CustomField, error) {
	fs, err := listCustomFields(ctx, tx, brandID)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if f.ID == id {
			return f, nil
		}
	}
	return nil, ErrNotFound
}

// UpdateCustomField stores the members of f that may change after its
// creation: everything but its name, type and subtype, which give its
// custom_data key and the form of the values users already hold.
func (tx *Tx) UpdateCustomField(ctx context.Context, f *parley.CustomField) error {
	enum, err := json.Marshal(nonNil(f.AvailableEnumValues))
	if err != nil {
		return err
	}
	res, err := tx.exec(ctx, `UPDATE custom_fields SET description = ?, available_enum_values = ?, include_in_ai_prompt = ?,
	include_user_answers = ?, is_append = ?, is_auto_collected = ?, extraction_prompt = ?, is_emphasize_current = ?,
	is_emphasize_personal = ? WHERE brand_id = ? AND id = ?`,
		f.Description, string(enum), f.IncludeInAIPrompt, f.IncludeUserAnswers, f.IsAppend, f.IsAutoCollected,
		f.ExtractionPrompt, f.IsEmphasizeCurrent, f.IsEmphasizePersonal, f.BrandID, f.ID)
	if err != nil {
		return fmt.Errorf("store: update custom field: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteCustomField removes a field of the brand; ErrNotFound when absent.
func (tx *Tx) DeleteCustomField(ctx context.Context, brandID, id int64) error {
	res, err := tx.exec(ctx, `DELETE FROM custom_fields WHERE brand_id = ? AND id = ?`, brandID, id)
	if err != nil {
		return fmt.Errorf("store: delete custom field: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

const segmentColumns = `id, brand_id, name, source, type, is_active, is_archived, criteria, description,
	is_pinned, color_id, ltv, average_order_value, average_purchase_frequency, date_created, date_last_updated`

// CreateSegment stores s and sets its ID; a name the brand already uses
// answers EDuplicate.
func (tx *Tx) CreateSegment(ctx context.Context, s *parley.Segment) error {
	crit, err := json.Marshal(nonNil(s.Criteria))
	if err != nil {
		return err
	}
	s.DateCreated = parley.Time{Time: tx.now}
	s.DateLastUpdated = s.DateCreated
	row := tx.queryRow(ctx, `INSERT INTO segments (brand_id, name, source, type, is_active, is_archived,
	criteria, description, is_pinned, color_id, ltv, average_order_value, average_purchase_frequency,
	date_created, date_last_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		s.BrandID, s.Name, s.Source, s.Type, s.IsActive, s.IsArchived, string(crit), s.Description,
		s.IsPinned, s.ColorID, s.LTV, s.AverageOrderValue, s.AveragePurchaseFrequency,
		micros(tx.now), micros(tx.now))
	if err := row.Scan(&s.ID); err != nil {
		if isUniqueViolation(err) {
			return parley.Errorf(parley.EDuplicate, "Duplicate entry for '%s'", s.Name)
		}
		return fmt.Errorf("store: insert segment: %w", err)
	}
	return nil
}

// ListSegments returns the brand's segments ordered by id; with visibleOnly,
// only the active, non-archived ones (D10).
func (db *DB) ListSegments(ctx context.Context, brandID int64, visibleOnly bool) ([]*parley.Segment, error) {
	return listSegments(ctx, db, brandID, visibleOnly)
}

// FindSegment returns a segment of the brand, archived or not, or ErrNotFound.
func (db *DB) FindSegment(ctx context.Context, brandID, id int64) (*parley.Segment, error) {
	return findSegment(ctx, db, brandID, id)
}

// ListSegments is DB.ListSegments inside the transaction.
func (tx *Tx) ListSegments(ctx context.Context, brandID int64, visibleOnly bool) ([]*parley.Segment, error) {
	return listSegments(ctx, tx, brandID, visibleOnly)
}

// FindSegment is DB.FindSegment inside the transaction.
func (tx *Tx) FindSegment(ctx context.Context, brandID, id int64) (*parley.Segment, error) {
	return findSegment(ctx, tx, brandID, id)
}

// LockSegments serialises the transactions that change the brand's
// segments, so that two updates checked at once cannot together make a
// cycle of memberships (D14). On PostgreSQL it locks the brand's row FOR NO
// KEY UPDATE, which, unlike LockBrand's FOR UPDATE, does not hold up the
// inserts of rows that reference the brand (their foreign key check takes
// FOR KEY SHARE). On SQLite the one writer serialises them already.
func (tx *Tx) LockSegments(ctx context.Context, brandID int64) error {
	if tx.db.engine != "postgres" {
		return nil
	}
	var id int64
	if err := tx.queryRow(ctx, `SELECT id FROM brands WHERE id = ? FOR NO KEY UPDATE`, brandID).Scan(&id); err != nil {
		return fmt.Errorf("store: lock segments: %w", err)
	}
	return nil
}

// UpdateSegment stores the changeable members of s (name, description,
// type, criteria, color_id, is_pinned) and moves its date_last_updated;
// ErrNotFound when absent, EDuplicate for a name the brand already uses.
func (tx *Tx) UpdateSegment(ctx context.Context, s *parley.Segment) error {
	crit, err := json.Marshal(nonNil(s.Criteria))
	if err != nil {
		return err
	}
	res, err := tx.exec(ctx, `UPDATE segments SET name = ?, description = ?, type = ?, criteria = ?, color_id = ?,
	is_pinned = ?, date_last_updated = ? WHERE brand_id = ? AND id = ?`,
		s.Name, s.Description, s.Type, string(crit), s.ColorID, s.IsPinned, micros(tx.now), s.BrandID, s.ID)
	if err != nil {
		if isUniqueViolation(err) {
			return parley.Errorf(parley.EDuplicate, "Duplicate entry for '%s'", s.Name)
		}
		return fmt.Errorf("store: update segment: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	s.DateLastUpdated = parley.Time{Time: tx.now}
	return nil
}

// ThawSegment forgets the frozen members of the brand's segment, when it
// stops being POINT IN TIME.
func (tx *Tx) ThawSegment(ctx context.Context, brandID, segmentID int64) error {
	if _, err := tx.exec(ctx, `DELETE FROM segment_members WHERE brand_id = ? AND segment_id = ?`, brandID, segmentID); err != nil {
		return fmt.Errorf("store: thaw segment: %w", err)
	}
	return nil
}

func findSegment(ctx context.Context, q querier, brandID, id int64) (*parley.Segment, error) {
	segs, err := scanSegments(q.query(ctx, `SELECT `+segmentColumns+` FROM segments WHERE brand_id = ? AND id = ?`, brandID, id))
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, ErrNotFound
	}
	return segs[0], nil
}

func listSegments(ctx context.Context, q querier, brandID int64, visibleOnly bool) ([]*parley.Segment, error) {
	query := `SELECT ` + segmentColumns + ` FROM segments WHERE brand_id = ?`
	args := []any{brandID}
	if visibleOnly {
		query += ` AND is_active = ? AND is_archived = ?`
		args = append(args, true, false)
	}
	return scanSegments(q.query(ctx, query+` ORDER BY id`, args...))
}

func scanSegments(rows *sql.Rows, err error) ([]*parley.Segment, error) {
	if err != nil {
		return nil, fmt.Errorf("store: list segments: %w", err)
	}
	defer rows.Close()
	out := []*parley.Segment{}
	for rows.Next() {
		var s parley.Segment
		var crit string
		var created, updated int64
		if err := rows.Scan(&s.ID, &s.BrandID, &s.Name, &s.Source, &s.Type, &s.IsActive, &s.IsArchived, &crit,
			&s.Description, &s.IsPinned, &s.ColorID, &s.LTV, &s.AverageOrderValue, &s.AveragePurchaseFrequency,
			&created, &updated); err != nil {
			return nil, fmt.Errorf("store: scan segment: %w", err)
		}
		if err := json.Unmarshal([]byte(crit), &s.Criteria); err != nil {
			return nil, fmt.Errorf("store: segment %d criteria: %w", s.ID, err)
		}
		s.DateCreated = parley.Time{Time: fromMicros(created)}
		s.DateLastUpdated = parley.Time{Time: fromMicros(updated)}
		out = append(out, &s)
	}
	return out, rows.Err()
}

// ArchiveSegment archives a segment of the brand; ErrNotFound when absent.
func (tx *Tx) ArchiveSegment(ctx context.Context, brandID, id int64) error {
	res, err := tx.exec(ctx, `UPDATE segments SET is_archived = ?, date_last_updated = ? WHERE brand_id = ? AND id = ?`,
		true, micros(tx.now), brandID, id)
	if err != nil {
		return fmt.Errorf("store: archive segment: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// nonNil turns a nil slice into an empty one, so it encodes as [] (D10).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
