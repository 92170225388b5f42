package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/parleyhq/parley"
)

// Flows (D21). A flow row holds the trigger and the current version; the
// steps of each version are in flow_versions (migration 00042).

const flowColumns = `f.id, f.brand_id, f.name, f.trigger_json, f.version, f.active, f.reentry_seconds,
	f.date_created, f.date_updated, v.steps, k.entered, k.active, k.completed, k.exited, k.canceled, k.sent`

const flowsFrom = `flows f JOIN flow_versions v ON v.flow_id = f.id AND v.version = f.version
	JOIN flow_counts k ON k.flow_id = f.id`

// triggerKey is what a trigger matches on (flows.trigger_key).
func triggerKey(t parley.FlowTrigger) string {
	switch t.Type {
	case parley.TriggerKeyword:
		return t.Keyword
	case parley.TriggerEvent:
		return t.Name
	case parley.TriggerSegmentEntered:
		return strconv.FormatInt(t.SegmentID, 10)
	case parley.TriggerDate:
		return t.FieldName
	}
	return ""
}

// InsertFlow stores f, its first version and zero stats, and sets its ID,
// Version and dates.
func (tx *Tx) InsertFlow(ctx context.Context, f *parley.Flow) error {
	trig, err := json.Marshal(f.Trigger)
	if err != nil {
		return err
	}
	now := micros(tx.now)
	f.Version = 1
	f.DateCreated, f.DateUpdated = parley.NewTime(tx.now), parley.NewTime(tx.now)
	var activated sql.NullInt64
	if f.Active {
		activated = sql.NullInt64{Int64: now, Valid: true}
	}
	err = tx.queryRow(ctx, `INSERT INTO flows (brand_id, name, trigger_type, trigger_key, trigger_json, version,
	active, reentry_seconds, activated_at, date_created, date_updated) VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?) RETURNING id`,
		f.BrandID, f.Name, f.Trigger.Type, triggerKey(f.Trigger), string(trig), f.Active, f.ReentrySeconds,
		activated, now, now).Scan(&f.ID)
	if err != nil {
		return fmt.Errorf("store: insert flow: %w", err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO flow_counts (flow_id) VALUES (?)`, f.ID); err != nil {
		return fmt.Errorf("store: insert flow: %w", err)
	}
	if err := tx.insertFlowVersion(ctx, f); err != nil {
		return err
	}
	f.StepsStats = make([]parley.FlowStepStats, len(f.Steps))
	return nil
}

// insertFlowVersion stores f's steps as f.Version and makes sure every
// step index has its counts row.
func (tx *Tx) insertFlowVersion(ctx context.Context, f *parley.Flow) error {
	steps, err := json.Marshal(f.Steps)
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, `INSERT INTO flow_versions (flow_id, version, steps) VALUES (?, ?, ?)`,
		f.ID, f.Version, string(steps)); err != nil {
		return fmt.Errorf("store: insert flow version: %w", err)
	}
	for i := range f.Steps {
		if _, err := tx.exec(ctx, `INSERT INTO flow_step_counts (flow_id, step) VALUES (?, ?) ON CONFLICT DO NOTHING`,
			f.ID, i); err != nil {
			return fmt.Errorf("store: insert flow step counts: %w", err)
		}
	}
	return nil
}

// FindFlow returns a flow of the brand that is not deleted, with its
// stats, or ErrNotFound.
func (db *DB) FindFlow(ctx context.Context, brandID, id int64) (*parley.Flow, error) {
	f, err := scanFlow(db.queryRow(ctx, `SELECT `+flowColumns+` FROM `+flowsFrom+`
	WHERE f.brand_id = ? AND f.id = ? AND f.deleted_at IS NULL`, brandID, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	f.StepsStats, err = flowStepStats(ctx, db.query, f)
	return f, err
}

// FindFlow is DB.FindFlow in the transaction, without the step stats.
func (tx *Tx) FindFlow(ctx context.Context, brandID, id int64) (*parley.Flow, error) {
	f, err := scanFlow(tx.queryRow(ctx, `SELECT `+flowColumns+` FROM `+flowsFrom+`
	WHERE f.brand_id = ? AND f.id = ? AND f.deleted_at IS NULL`, brandID, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	// The step counts too, in tx: an answer rendered in the transaction
	// (an Idempotency-Key's, D13) is a whole Flow (D1).
	f.StepsStats, err = flowStepStats(ctx, tx.query, f)
	return f, err
}

// ListFlows returns up to limit flows of the brand with id below beforeID
// (0: no bound), newest first, with their stats.
func (db *DB) ListFlows(ctx context.Context, brandID, beforeID int64, limit int) ([]*parley.Flow, error) {
	q := `SELECT ` + flowColumns + ` FROM ` + flowsFrom + ` WHERE f.brand_id = ? AND f.deleted_at IS NULL`
	args := []any{brandID}
	if beforeID != 0 {
		q += ` AND f.id < ?`
		args = append(args, beforeID)
	}
	q += ` ORDER BY f.id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list flows: %w", err)
	}
	flows, err := collect(rows, scanFlow)
	if err != nil {
		return nil, err
	}
	for _, f := range flows {
		if f.StepsStats, err = flowStepStats(ctx, db.query, f); err != nil {
			return nil, err
		}
	}
	return flows, nil
}

// flowStepStats reads the counts of each of f's current steps with query
// (the reader pool's or a transaction's).
func flowStepStats(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error),
	f *parley.Flow) ([]parley.FlowStepStats, error) {
	out := make([]parley.FlowStepStats, len(f.Steps))
	rows, err := query(ctx, `SELECT step, reached, sent, skipped FROM flow_step_counts WHERE flow_id = ? AND step < ?`,
		f.ID, len(f.Steps))
	if err != nil {
		return nil, fmt.Errorf("store: flow step stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int
		var s parley.FlowStepStats
		if err := rows.Scan(&i, &s.Reached, &s.Sent, &s.Skipped); err != nil {
			return nil, fmt.Errorf("store: flow step stats: %w", err)
		}
		out[i] = s
	}
	return out, rows.Err()
}

func scanFlow(scan func(...any) error) (*parley.Flow, error) {
	var f parley.Flow
	var trig, steps string
	var reentry sql.NullInt64
	var created, updated int64
	if err := scan(&f.ID, &f.BrandID, &f.Name, &trig, &f.Version, &f.Active, &reentry, &created, &updated, &steps,
		&f.Stats.Entered, &f.Stats.Active, &f.Stats.Completed, &f.Stats.Exited, &f.Stats.Canceled, &f.Stats.Sent); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("store: scan flow: %w", err)
	}
	if err := json.Unmarshal([]byte(trig), &f.Trigger); err != nil {
		return nil, fmt.Errorf("store: flow %d trigger: %w", f.ID, err)
	}
	var err error
	if f.Steps, err = decodeStoredSteps(steps); err != nil {
		return nil, fmt.Errorf("store: flow %d steps: %w", f.ID, err)
	}
	if reentry.Valid {
		f.ReentrySeconds = &reentry.Int64
	}
	f.DateCreated, f.DateUpdated = parley.Time{Time: fromMicros(created)}, parley.Time{Time: fromMicros(updated)}
	return &f, nil
}

// storedStep is a step as flow_versions holds it (FlowStep's JSON).
type storedStep struct {
	Type           string                `json:"type"`
	Body           string                `json:"body"`
	MediaItemUUIDs []string              `json:"media_item_uuids"`
	MessageType    string                `json:"message_type"`
	Seconds        int64                 `json:"seconds"`
	Time           string                `json:"time"`
	If             *parley.FlowCondition `json:"if"`
	ElseStep       *int                  `json:"else_step"`
}

func decodeStoredSteps(s string) ([]parley.FlowStep, error) {
	var in []storedStep
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, err
	}
	out := make([]parley.FlowStep, len(in))
	for i, st := range in {
		out[i] = parley.FlowStep{Type: st.Type, Body: st.Body, MediaItemUUIDs: st.MediaItemUUIDs,
			MessageType: st.MessageType, Seconds: st.Seconds, Time: st.Time, If: st.If, ElseStep: st.ElseStep}
	}
	return out, nil
}

// UpdateFlow writes f's name, trigger, active and reentry_seconds; with
// newSteps, f.Steps become a new version (runs keep theirs, D21).
// Activating a flow sets activated_at (segment members then do not enter).
func (tx *Tx) UpdateFlow(ctx context.Context, f *parley.Flow, newSteps, activated bool) error {
	trig, err := json.Marshal(f.Trigger)
	if err != nil {
		return err
	}
	if newSteps {
		f.Version++
		if err := tx.insertFlowVersion(ctx, f); err != nil {
			return err
		}
	}
	f.DateUpdated = parley.NewTime(tx.now)
	q := `UPDATE flows SET name = ?, trigger_type = ?, trigger_key = ?, trigger_json = ?, version = ?, active = ?,
	reentry_seconds = ?, date_updated = ?`
	args := []any{f.Name, f.Trigger.Type, triggerKey(f.Trigger), string(trig), f.Version, f.Active, f.ReentrySeconds,
		micros(tx.now)}
	if activated {
		// The scans of segment and date triggers start again from now.
		q += `, activated_at = ?, scanned_at = NULL`
		args = append(args, micros(tx.now))
		if _, err := tx.exec(ctx, `DELETE FROM flow_segment_members WHERE flow_id = ?`, f.ID); err != nil {
			return fmt.Errorf("store: update flow: %w", err)
		}
	}
	q += ` WHERE brand_id = ? AND id = ? AND deleted_at IS NULL`
	args = append(args, f.BrandID, f.ID)
	res, err := tx.exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("store: update flow: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteFlow deletes a flow of the brand and ends its active runs
// canceled (D21); it returns how many runs it canceled, or ErrNotFound.
func (tx *Tx) DeleteFlow(ctx context.Context, brandID, id int64) (int64, error) {
	res, err := tx.exec(ctx, `UPDATE flows SET deleted_at = ?, active = ? WHERE brand_id = ? AND id = ? AND deleted_at IS NULL`,
		micros(tx.now), false, brandID, id)
	if err != nil {
		return 0, fmt.Errorf("store: delete flow: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, ErrNotFound
	}
	res, err = tx.exec(ctx, `UPDATE flow_runs SET status = ?, next_at = NULL, ended_at = ?, exit_reason = ?
	WHERE flow_id = ? AND status = ?`, parley.RunCanceled, micros(tx.now), "flow_deleted", id, parley.RunActive)
	if err != nil {
		return 0, fmt.Errorf("store: delete flow: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := tx.exec(ctx, `UPDATE flow_counts SET active = active - ?, canceled = canceled + ? WHERE flow_id = ?`,
		n, n, id); err != nil {
		return 0, fmt.Errorf("store: delete flow: %w", err)
	}
	return n, nil
}
