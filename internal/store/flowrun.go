package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// Runs of flows (D21): a contact's way through a flow, one active run per
// flow and contact (flow_runs_one_active), its next step due at next_at.

const runColumns = `id, flow_id, user_id, status, step, entered_at, next_at, ended_at, exit_reason`

func scanRun(scan func(...any) error) (*parley.FlowRun, error) {
	var r parley.FlowRun
	var entered int64
	var next, ended sql.NullInt64
	var reason sql.NullString
	if err := scan(&r.ID, &r.FlowID, &r.UserID, &r.Status, &r.Step, &entered, &next, &ended, &reason); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("store: scan run: %w", err)
	}
	r.EnteredAt = parley.Time{Time: fromMicros(entered)}
	r.NextAt, r.EndedAt = nullTime(next), nullTime(ended)
	r.ExitReason = nullString(reason)
	return &r, nil
}

// RunFilter selects a page of a flow's runs by id.
type RunFilter struct {
	FlowID  int64
	UserID  int64  // 0: every contact
	Status  string // "": every status
	AfterID int64
	Limit   int
}

// ListRuns returns a page of runs by id (GET /flows/{id}/runs).
func (db *DB) ListRuns(ctx context.Context, f RunFilter) ([]*parley.FlowRun, error) {
	q := `SELECT ` + runColumns + ` FROM flow_runs WHERE flow_id = ? AND id > ?`
	args := []any{f.FlowID, f.AfterID}
	if f.UserID != 0 {
		q += ` AND user_id = ?`
		args = append(args, f.UserID)
	}
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, f.Status)
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, f.Limit)
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	return collect(rows, scanRun)
}

// UserRuns returns a contact's runs of the brand's flows, newest first
// (the contact page).
func (db *DB) UserRuns(ctx context.Context, brandID, userID int64, limit int) ([]*parley.FlowRun, error) {
	rows, err := db.query(ctx, `SELECT `+runColumns+` FROM flow_runs WHERE user_id = ? AND brand_id = ?
	ORDER BY entered_at DESC, id DESC LIMIT ?`, userID, brandID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: user runs: %w", err)
	}
	return collect(rows, scanRun)
}

// FlowEntry is what entering a contact into a flow needs of the flow.
type FlowEntry struct {
	BrandID, FlowID, Version int64
	// ReentrySeconds: nil means a contact enters once only.
	ReentrySeconds *int64
}

// ActiveFlows returns the brand's active flows whose trigger is of type
// typ and matches key (flows.trigger_key), as entries.
func (tx *Tx) ActiveFlows(ctx context.Context, brandID int64, typ, key string) ([]FlowEntry, error) {
	rows, err := tx.query(ctx, `SELECT id, version, reentry_seconds FROM flows
	WHERE brand_id = ? AND trigger_type = ? AND trigger_key = ? AND active AND deleted_at IS NULL ORDER BY id`,
		brandID, typ, key)
	if err != nil {
		return nil, fmt.Errorf("store: active flows: %w", err)
	}
	defer rows.Close()
	var out []FlowEntry
	for rows.Next() {
		e := FlowEntry{BrandID: brandID}
		var reentry sql.NullInt64
		if err := rows.Scan(&e.FlowID, &e.Version, &reentry); err != nil {
			return nil, fmt.Errorf("store: active flows: %w", err)
		}
		if reentry.Valid {
			e.ReentrySeconds = &reentry.Int64
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// enterChunk bounds the contacts of one entering statement: two
// parameters each, well under both engines' limits.
const enterChunk = 500

// EnterFlow starts a run of e, due now, for each of the contacts that has
// no active run of the flow and did not enter it too recently (D21: again
// only reentry_seconds after its last entry; never again when null).
// event is the triggering event's properties (JSON), or nil. It returns
// the runs started, in no particular order.
//
// A chunk of contacts costs one INSERT … SELECT and one count update,
// whatever its size: an import's batch enters its contacts at once.
func (tx *Tx) EnterFlow(ctx context.Context, e FlowEntry, userIDs []int64, event json.RawMessage) ([]*parley.FlowRun, error) {
	now := micros(tx.now)
	never := e.ReentrySeconds == nil
	var since int64 // entries after this block a new one
	if !never {
		since = micros(tx.now.Add(-time.Duration(*e.ReentrySeconds) * time.Second))
	}
	var ev sql.NullString
	if event != nil {
		ev = sql.NullString{String: string(event), Valid: true}
	}
	var out []*parley.FlowRun
	for ids := range slices.Chunk(uniqueIDs(userIDs), enterChunk) {
		args := []any{e.BrandID, e.FlowID, e.Version, parley.RunActive, now, now, ev}
		var values strings.Builder
		for i, id := range ids {
			if i > 0 {
				values.WriteByte(',')
			}
			// PostgreSQL types a VALUES list from its first row.
			values.WriteString("(CAST(? AS BIGINT))")
			args = append(args, id)
		}
		args = append(args, e.FlowID, parley.RunActive, never, since)
		rows, err := tx.query(ctx, `INSERT INTO flow_runs (brand_id, flow_id, version, user_id, status, step,
		entered_at, next_at, event)
		SELECT ?, ?, ?, v.column1, ?, 0, ?, ?, ? FROM (VALUES `+values.String()+`) AS v
		WHERE NOT EXISTS (SELECT 1 FROM flow_runs r WHERE r.flow_id = ? AND r.user_id = v.column1
			AND (r.status = ? OR ? OR r.entered_at > ?))
		ON CONFLICT DO NOTHING RETURNING `+runColumns, args...)
		if err != nil {
			return nil, fmt.Errorf("store: enter flow: %w", err)
		}
		runs, err := collect(rows, scanRun)
		if err != nil {
			return nil, fmt.Errorf("store: enter flow: %w", err)
		}
		if len(runs) == 0 {
			continue
		}
		if _, err := tx.exec(ctx, `UPDATE flow_counts SET entered = entered + ?, active = active + ? WHERE flow_id = ?`,
			len(runs), len(runs), e.FlowID); err != nil {
			return nil, fmt.Errorf("store: enter flow: %w", err)
		}
		out = append(out, runs...)
	}
	return out, nil
}

// uniqueIDs returns ids without repeats, in their first order.
func uniqueIDs(ids []int64) []int64 {
	seen := make(map[int64]struct{}, len(ids))
	return slices.DeleteFunc(slices.Clone(ids), func(id int64) bool {
		if _, ok := seen[id]; ok {
			return true
		}
		seen[id] = struct{}{}
		return false
	})
}

// EndUserRuns ends every active run of the contact with status and reason
// (D21: STOP and deletion end runs exited) and returns the runs ended.
func (tx *Tx) EndUserRuns(ctx context.Context, userID int64, status, reason string) ([]*parley.FlowRun, error) {
	rows, err := tx.query(ctx, `UPDATE flow_runs SET status = ?, next_at = NULL, ended_at = ?, exit_reason = ?
	WHERE user_id = ? AND status = ? RETURNING `+runColumns,
		status, micros(tx.now), reason, userID, parley.RunActive)
	if err != nil {
		return nil, fmt.Errorf("store: end runs: %w", err)
	}
	runs, err := collect(rows, scanRun)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if err := tx.countRunEnd(ctx, r.FlowID, status, 1); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// countRunEnd moves n runs of the flow from active to status.
func (tx *Tx) countRunEnd(ctx context.Context, flowID int64, status string, n int64) error {
	col := map[string]string{parley.RunCompleted: "completed", parley.RunExited: "exited", parley.RunCanceled: "canceled"}[status]
	if col == "" {
		return fmt.Errorf("store: a run cannot end %q", status)
	}
	_, err := tx.exec(ctx, `UPDATE flow_counts SET active = active - ?, `+col+` = `+col+` + ? WHERE flow_id = ?`,
		n, n, flowID)
	if err != nil {
		return fmt.Errorf("store: count run end: %w", err)
	}
	return nil
}

// DueRun is a run whose next step is due, with what running it needs.
type DueRun struct {
	parley.FlowRun
	BrandID, Version int64
	// Steps are the steps of the run's version, as stored (JSON): runs of
	// one version share them, so the runner decodes each once.
	Steps string
	// Event is the triggering event's properties, or nil.
	Event json.RawMessage
	// Failures counts the times its step failed (PutOffRun).
	Failures int
}

// The statements on due runs spell status 'active' out: a partial index
// (flow_runs_due) serves a query only when its condition is in the text.

const qDueRuns = `SELECT r.id, r.flow_id, r.user_id, r.status, r.step, r.entered_at, r.next_at, r.ended_at, r.exit_reason,
	r.brand_id, r.version, v.steps, r.event, r.failures
	FROM flow_runs r JOIN flow_versions v ON v.flow_id = r.flow_id AND v.version = r.version
	WHERE r.status = 'active' AND r.next_at <= ? ORDER BY r.next_at LIMIT ?`

const qNextDue = `SELECT MIN(next_at) FROM flow_runs WHERE status = 'active'`

// DueRuns takes up to limit active runs whose next_at has come, earliest
// first, for the caller's transaction: on PostgreSQL they are locked and
// other nodes skip them (FOR UPDATE SKIP LOCKED), so a run's step is done
// by one transaction only, and again only if that one rolls back. SQLite
// has one writer.
func (tx *Tx) DueRuns(ctx context.Context, limit int) ([]*DueRun, error) {
	q := qDueRuns
	if tx.db.engine == "postgres" {
		q += ` FOR UPDATE OF r SKIP LOCKED`
	}
	rows, err := tx.query(ctx, q, micros(tx.now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due runs: %w", err)
	}
	defer rows.Close()
	var out []*DueRun
	for rows.Next() {
		var d DueRun
		var entered int64
		var next, ended sql.NullInt64
		var reason, event sql.NullString
		if err := rows.Scan(&d.ID, &d.FlowID, &d.UserID, &d.Status, &d.Step, &entered, &next, &ended, &reason,
			&d.BrandID, &d.Version, &d.Steps, &event, &d.Failures); err != nil {
			return nil, fmt.Errorf("store: due runs: %w", err)
		}
		d.EnteredAt = parley.Time{Time: fromMicros(entered)}
		d.NextAt, d.EndedAt, d.ExitReason = nullTime(next), nullTime(ended), nullString(reason)
		if event.Valid {
			d.Event = json.RawMessage(event.String)
		}
		out = append(out, &d)
	}
	return out, rows.Err()
}

// NextDue returns when the earliest active run is due, or false when none
// is waiting (flow_runs_due: one index probe).
func (db *DB) NextDue(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	if err := db.queryRow(ctx, qNextDue).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("store: next due run: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return fromMicros(at.Int64), true, nil
}

// RunMove moves a run to Step, due at Next.
type RunMove struct {
	RunID int64
	Step  int
	Next  time.Time
}

// MoveRuns moves a batch's runs that wait (their next step and when it is
// due), a statement per chunk.
func (tx *Tx) MoveRuns(ctx context.Context, moves []RunMove) error {
	for chunk := range slices.Chunk(moves, enterChunk) {
		args := make([]any, 0, 3*len(chunk))
		for _, m := range chunk {
			args = append(args, m.RunID, m.Step, micros(m.Next))
		}
		// PostgreSQL types a VALUES list from its first row.
		values := "(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))" +
			strings.Repeat(", (?, ?, ?)", len(chunk)-1)
		if _, err := tx.exec(ctx, `UPDATE flow_runs SET step = v.column2, next_at = v.column3
		FROM (VALUES `+values+`) AS v WHERE flow_runs.id = v.column1`, args...); err != nil {
			return fmt.Errorf("store: move runs: %w", err)
		}
	}
	return nil
}

// PutOffRun counts a failure of the run's step and makes it due again at
// next, at the same step.
func (tx *Tx) PutOffRun(ctx context.Context, runID int64, next time.Time) error {
	if _, err := tx.exec(ctx, `UPDATE flow_runs SET failures = failures + 1, next_at = ? WHERE id = ? AND status = ?`,
		micros(next), runID, parley.RunActive); err != nil {
		return fmt.Errorf("store: put off run: %w", err)
	}
	return nil
}

// EndRun ends an active run with status (completed or exited) and
// reason; false when it had ended already (STOP, the flow deleted).
func (tx *Tx) EndRun(ctx context.Context, r *DueRun, status string, reason *string) (bool, error) {
	res, err := tx.exec(ctx, `UPDATE flow_runs SET status = ?, step = ?, next_at = NULL, ended_at = ?, exit_reason = ?
	WHERE id = ? AND status = ?`, status, r.Step, micros(tx.now), reason, r.ID, parley.RunActive)
	if err != nil {
		return false, fmt.Errorf("store: end run: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return false, nil
	}
	return true, tx.countRunEnd(ctx, r.FlowID, status, 1)
}

// RunEnd ends Run with Status (completed or exited) and Reason, at its
// step; EndRuns sets Ended when it did (false: STOP or the flow's deletion
// ended it first).
type RunEnd struct {
	Run    *DueRun
	Status string
	Reason *string
	Ended  bool
}

// EndRuns ends a batch's runs that ended, a statement per chunk, and moves
// them from active in their flows' stats.
func (tx *Tx) EndRuns(ctx context.Context, ends []*RunEnd) error {
	byID := make(map[int64]*RunEnd, len(ends))
	counts := map[[2]any]int64{} // (flow, status) → runs ended
	for chunk := range slices.Chunk(ends, enterChunk) {
		args := []any{micros(tx.now)}
		for _, e := range chunk {
			args = append(args, e.Run.ID, e.Status, e.Run.Step, e.Reason)
			byID[e.Run.ID] = e
		}
		// PostgreSQL types a VALUES list from its first row.
		values := "(CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT))" +
			strings.Repeat(", (?, ?, ?, ?)", len(chunk)-1)
		rows, err := tx.query(ctx, `UPDATE flow_runs SET status = v.column2, step = v.column3, next_at = NULL,
		ended_at = ?, exit_reason = v.column4
		FROM (VALUES `+values+`) AS v WHERE flow_runs.id = v.column1 AND flow_runs.status = 'active'
		RETURNING flow_runs.id`, args...)
		if err != nil {
			return fmt.Errorf("store: end runs: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("store: end runs: %w", err)
			}
			if e := byID[id]; e != nil && !e.Ended {
				e.Ended = true
				counts[[2]any{e.Run.FlowID, e.Status}]++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: end runs: %w", err)
		}
	}
	for k, n := range counts {
		if err := tx.countRunEnd(ctx, k[0].(int64), k[1].(string), n); err != nil {
			return err
		}
	}
	return nil
}

// StepCounts are what a batch of runs did at one step of a flow.
type StepCounts struct {
	Reached, Sent, Skipped int64
}

// CountSteps adds a batch's step counts (by flow, then step) and the
// messages sent to the flows' stats.
func (tx *Tx) CountSteps(ctx context.Context, counts map[int64]map[int]StepCounts) error {
	for flowID, steps := range counts {
		var sent int64
		for step, c := range steps {
			if _, err := tx.exec(ctx, `UPDATE flow_step_counts SET reached = reached + ?, sent = sent + ?, skipped = skipped + ?
			WHERE flow_id = ? AND step = ?`, c.Reached, c.Sent, c.Skipped, flowID, step); err != nil {
				return fmt.Errorf("store: count steps: %w", err)
			}
			sent += c.Sent
		}
		if sent > 0 {
			if _, err := tx.exec(ctx, `UPDATE flow_counts SET sent = sent + ? WHERE flow_id = ?`, sent, flowID); err != nil {
				return fmt.Errorf("store: count steps: %w", err)
			}
		}
	}
	return nil
}

// RepliedSince reports whether the contact sent an inbound text at or
// after since (the branch "replied", D21).
func (tx *Tx) RepliedSince(ctx context.Context, brandID, userID int64, since time.Time) (bool, error) {
	var one int
	err := tx.queryRow(ctx, `SELECT 1 FROM messages WHERE brand_id = ? AND user_id = ? AND direction = ? AND date_created >= ?
	LIMIT 1`, brandID, userID, parley.DirectionInbound, micros(since)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// EventSince reports whether the contact had the named event at or after
// since (the branch "event", D21).
func (tx *Tx) EventSince(ctx context.Context, userID int64, name string, since time.Time) (bool, error) {
	var one int
	err := tx.queryRow(ctx, `SELECT 1 FROM user_events WHERE user_id = ? AND name = ? AND occurred_at >= ? LIMIT 1`,
		userID, name, micros(since)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// InsertUserEvent stores an event of the contact (POST /events, D21) and
// returns its id.
func (tx *Tx) InsertUserEvent(ctx context.Context, brandID, userID int64, name string, props json.RawMessage) (int64, error) {
	var id int64
	err := tx.queryRow(ctx, `INSERT INTO user_events (brand_id, user_id, name, properties, occurred_at) VALUES (?, ?, ?, ?, ?)
	RETURNING id`, brandID, userID, name, string(props), micros(tx.now)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: insert event: %w", err)
	}
	return id, nil
}

// FlowMessage is a send step's message to write: m, queued, of step Step
// of run RunID. InsertFlowMessages sets Written, and m's ID when written.
type FlowMessage struct {
	M       *parley.Message
	RunID   int64
	Step    int
	Written bool
}

// flowMessageChunk bounds one statement's messages: 11 parameters each.
const flowMessageChunk = 250

// InsertFlowMessages stores the messages of a batch of send steps, a
// statement per chunk. A message whose step already wrote one (the step
// replayed: messages_flow_run_step) is not written. The caller read the
// recipients live in the transaction; one deleted after that is the
// hand-over's to skip (recipient_not_found), as for any queued message.
func (tx *Tx) InsertFlowMessages(ctx context.Context, ms []*FlowMessage) error {
	for chunk := range slices.Chunk(ms, flowMessageChunk) {
		args := make([]any, 0, 11*len(chunk))
		byStep := make(map[[2]int64]*FlowMessage, len(chunk))
		for _, fm := range chunk {
			m := fm.M
			media, err := json.Marshal(nonNil(m.MediaItemUUIDs))
			if err != nil {
				return err
			}
			args = append(args, m.BrandID, m.UserID, m.Direction, m.Status, m.Body, string(media), m.Type,
				micros(m.DateCreated.Time), m.FlowID, fm.RunID, fm.Step)
			byStep[[2]int64{fm.RunID, int64(fm.Step)}] = fm
		}
		rows, err := tx.query(ctx, `INSERT INTO messages (brand_id, user_id, direction, status, body, media_item_uuids, type,
		date_created, flow_id, flow_run_id, flow_step)
		VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", len(chunk)), ", ")+`
		ON CONFLICT DO NOTHING RETURNING id, flow_run_id, flow_step`, args...)
		if err != nil {
			return fmt.Errorf("store: insert flow messages: %w", err)
		}
		for rows.Next() {
			var id, run, step int64
			if err := rows.Scan(&id, &run, &step); err != nil {
				rows.Close()
				return fmt.Errorf("store: insert flow messages: %w", err)
			}
			if fm := byStep[[2]int64{run, step}]; fm != nil {
				fm.M.ID, fm.Written = id, true
				setParts(fm.M)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: insert flow messages: %w", err)
		}
	}
	return nil
}

// MarketingSentSince counts the contact's MARKETING messages sent since
// since or in flight: what the frequency cap counts (D17, as
// HandOverMessages does).
func (tx *Tx) MarketingSentSince(ctx context.Context, brandID, userID int64, since time.Time) (int, error) {
	var n int
	err := tx.queryRow(ctx, `SELECT count(*) FROM messages WHERE brand_id = ? AND user_id = ? AND direction = 'outbound'
	AND type = 'MARKETING' AND (status IN ('sent', 'delivered', 'undelivered') AND date_sent >= ?
	OR status = 'queued' AND handed_at IS NOT NULL)`, brandID, userID, micros(since)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: marketing sent since: %w", err)
	}
	return n, nil
}

// UserMatches reports whether the brand's live contact userID matches the
// D14 criteria now (a flow's branch, D21): the segment query with the
// contact's id, one index probe.
func (tx *Tx) UserMatches(ctx context.Context, brandID, userID int64, criteria []parley.SegmentCriterion) (bool, error) {
	where, args, err := tx.AudienceFilter(ctx, brandID, Audience{Criteria: criteria})
	if err != nil {
		return false, err
	}
	var one int
	err = tx.queryRow(ctx, `SELECT 1 FROM users u WHERE u.id = ? AND `+where, append([]any{userID}, args...)...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// DecodeSteps decodes steps as flow_versions holds them.
func DecodeSteps(s string) ([]parley.FlowStep, error) { return decodeStoredSteps(s) }
