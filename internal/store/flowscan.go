package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parleyhq/parley"
)

// The scans of the triggers that no write of the contact causes (D21):
// segment_entered (a contact starts matching) and date (a day of the
// year). Each active flow of these is scanned by one node at a time: a
// scan claims the flow by moving scanned_at (ClaimFlowScan), and enters
// its contacts in the claim's transaction.

// ScanFlow is an active flow whose trigger is scanned.
type ScanFlow struct {
	FlowEntry
	Trigger parley.FlowTrigger
	// ActivatedAt is when the flow last became active; ScannedAt how far
	// its scans got (nil: not since then).
	ActivatedAt time.Time
	ScannedAt   *time.Time
}

// FlowsToScan returns the active flows whose trigger is of type typ and
// whose last scan is at or before due (or that were never scanned).
func (db *DB) FlowsToScan(ctx context.Context, typ string, due time.Time) ([]ScanFlow, error) {
	rows, err := db.query(ctx, `SELECT id, brand_id, version, reentry_seconds, trigger_json, COALESCE(activated_at, date_created), scanned_at
	FROM flows WHERE trigger_type = ? AND active AND deleted_at IS NULL AND (scanned_at IS NULL OR scanned_at <= ?) ORDER BY id`,
		typ, micros(due))
	if err != nil {
		return nil, fmt.Errorf("store: flows to scan: %w", err)
	}
	defer rows.Close()
	var out []ScanFlow
	for rows.Next() {
		var f ScanFlow
		var reentry, scanned sql.NullInt64
		var trig string
		var activated int64
		if err := rows.Scan(&f.FlowID, &f.BrandID, &f.Version, &reentry, &trig, &activated, &scanned); err != nil {
			return nil, fmt.Errorf("store: flows to scan: %w", err)
		}
		if reentry.Valid {
			f.ReentrySeconds = &reentry.Int64
		}
		if err := json.Unmarshal([]byte(trig), &f.Trigger); err != nil {
			return nil, fmt.Errorf("store: flow %d trigger: %w", f.FlowID, err)
		}
		f.ActivatedAt = fromMicros(activated)
		if scanned.Valid {
			t := fromMicros(scanned.Int64)
			f.ScannedAt = &t
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// ClaimFlowScan moves the flow's scanned_at from what f read to the
// transaction's now, if the flow is still active with the same version of
// its trigger; false when another node took this scan, or the flow
// changed.
func (tx *Tx) ClaimFlowScan(ctx context.Context, f ScanFlow) (bool, error) {
	q := `UPDATE flows SET scanned_at = ? WHERE id = ? AND active AND deleted_at IS NULL AND `
	args := []any{micros(tx.now), f.FlowID}
	if f.ScannedAt == nil {
		q += `scanned_at IS NULL`
	} else {
		q += `scanned_at = ?`
		args = append(args, micros(*f.ScannedAt))
	}
	res, err := tx.exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("store: claim flow scan: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SegmentEntrants records the members of the flow's segment now and
// returns those it had not seen (flow_segment_members); contacts that
// left are forgotten, so they enter again when they match again.
func (tx *Tx) SegmentEntrants(ctx context.Context, f ScanFlow) ([]int64, error) {
	where, args, err := tx.AudienceFilter(ctx, f.BrandID, Audience{SegmentID: f.Trigger.SegmentID})
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `INSERT INTO flow_segment_members (flow_id, user_id)
	SELECT ?, u.id FROM users u WHERE `+where+` ON CONFLICT DO NOTHING RETURNING user_id`,
		append([]any{f.FlowID}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("store: segment entrants: %w", err)
	}
	ids, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("store: segment entrants: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM flow_segment_members WHERE flow_id = ? AND user_id NOT IN (SELECT u.id FROM users u WHERE `+where+`)`,
		append([]any{f.FlowID}, args...)...); err != nil {
		return nil, fmt.Errorf("store: segment leavers: %w", err)
	}
	return ids, nil
}

// SegmentEntrantsByID is SegmentEntrants with the segment's members
// given: ids, from the audience engine's evaluation (another snapshot
// than tx's). Each is checked again here, so no id the engine got wrong
// enters: only the brand's live users are recorded, and the recorded
// members not among ids are forgotten. A member the engine saw join or
// leave just before this transaction counts as the engine saw it; the
// next scan sees the rest.
func (tx *Tx) SegmentEntrantsByID(ctx context.Context, f ScanFlow, ids []int64) ([]int64, error) {
	list, arg := tx.db.idList(ids)
	rows, err := tx.query(ctx, `INSERT INTO flow_segment_members (flow_id, user_id)
	SELECT ?, u.id FROM users u WHERE u.brand_id = ? AND u.is_deleted = FALSE AND u.id IN (`+list+`)
	ON CONFLICT DO NOTHING RETURNING user_id`, f.FlowID, f.BrandID, arg)
	if err != nil {
		return nil, fmt.Errorf("store: segment entrants: %w", err)
	}
	entered, err := collectIDs(rows)
	if err != nil {
		return nil, fmt.Errorf("store: segment entrants: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM flow_segment_members WHERE flow_id = ? AND user_id NOT IN (`+list+`)`,
		f.FlowID, arg); err != nil {
		return nil, fmt.Errorf("store: segment leavers: %w", err)
	}
	// A member deleted since the engine's evaluation left, as in
	// SegmentEntrants (its query reads live users only).
	if _, err := tx.exec(ctx, `DELETE FROM flow_segment_members WHERE flow_id = ? AND user_id IN (SELECT u.id FROM users u
	WHERE u.brand_id = ? AND u.is_deleted = TRUE AND u.id IN (`+list+`))`, f.FlowID, f.BrandID, arg); err != nil {
		return nil, fmt.Errorf("store: segment leavers: %w", err)
	}
	return entered, nil
}

// DateCandidates returns the brand's live contacts whose DATE field's day
// and month fall within the three days from `from` (UTC calendar days, the
// year ignored): those for whom a date trigger may come due within a day
// of now, wherever they live.
func (tx *Tx) DateCandidates(ctx context.Context, brandID int64, field string, from time.Time) ([]*parley.User, error) {
	dim, typ := int64(parley.DimensionContact), int64(parley.CustomDate)
	if _, ok := parley.ContactFieldTypes[field]; !ok {
		dim = parley.DimensionCustomData
	}
	n := int64(2)
	cr := []parley.SegmentCriterion{{Attribute: parley.SegmentAttribute{DimensionType: dim, FieldName: field, FieldType: typ},
		OperatorType: parley.OpAnniversaryWithinDays, IntFieldValue: &n, AndGroupNum: 1}}
	where, args, err := tx.db.audienceFilter(ctx, tx, brandID, Audience{Criteria: cr}, from)
	if err != nil {
		return nil, err
	}
	rows, err := tx.query(ctx, `SELECT `+prefixed("u.", userColumns)+` FROM users u WHERE `+where+` ORDER BY u.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: date candidates: %w", err)
	}
	return collect(rows, scanUserFrom)
}
