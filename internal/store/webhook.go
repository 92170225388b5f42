package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/parleyhq/parley"
)

// WebhookRecord is an endpoint as stored: its secrets sealed.
type WebhookRecord struct {
	parley.Webhook
	Secret         []byte // sealed
	OldSecret      []byte // sealed; nil when none
	OldSecretUntil *time.Time
	FailingSince   *time.Time
}

const webhookColumns = `id, brand_id, url, description, event_types, secret, old_secret, old_secret_until,
	disabled, failing_since, date_created, date_last_updated`

func scanWebhook(scan func(...any) error) (*WebhookRecord, error) {
	var w WebhookRecord
	var types string
	var until, failing sql.NullInt64
	var created, updated int64
	if err := scan(&w.ID, &w.BrandID, &w.URL, &w.Description, &types, &w.Secret, &w.OldSecret, &until,
		&w.Disabled, &failing, &created, &updated); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: scan webhook: %w", err)
	}
	if err := json.Unmarshal([]byte(types), &w.EventTypes); err != nil {
		return nil, fmt.Errorf("store: webhook %d event types: %w", w.ID, err)
	}
	if until.Valid {
		t := fromMicros(until.Int64)
		w.OldSecretUntil = &t
	}
	if failing.Valid {
		t := fromMicros(failing.Int64)
		w.FailingSince = &t
	}
	w.DateCreated = parley.Time{Time: fromMicros(created)}
	w.DateLastUpdated = parley.Time{Time: fromMicros(updated)}
	return &w, nil
}

// LockBrand serialises transactions that check a per-brand limit before
// writing. SQLite's transactions already run one at a time (IMMEDIATE);
// PostgreSQL locks the brand's row.
func (tx *Tx) LockBrand(ctx context.Context, brandID int64) error {
	if tx.db.engine != "postgres" {
		return nil
	}
	var id int64
	row := tx.queryRow(ctx, `SELECT id FROM brands WHERE id = ? FOR UPDATE`, brandID)
	if err := row.Scan(&id); err != nil {
		return fmt.Errorf("store: lock brand: %w", err)
	}
	return nil
}

// CountWebhooks returns how many endpoints the brand has.
func (tx *Tx) CountWebhooks(ctx context.Context, brandID int64) (int, error) {
	row := tx.queryRow(ctx, `SELECT count(*) FROM webhook_endpoints WHERE brand_id = ?`, brandID)
	var n int
	err := row.Scan(&n)
	return n, err
}

// InsertWebhook stores w and sets its ID and dates.
func (tx *Tx) InsertWebhook(ctx context.Context, w *WebhookRecord) error {
	types, err := json.Marshal(w.EventTypes)
	if err != nil {
		return err
	}
	tx.hooks = nil
	w.DateCreated = parley.Time{Time: tx.now}
	w.DateLastUpdated = w.DateCreated
	row := tx.queryRow(ctx, `INSERT INTO webhook_endpoints (brand_id, url, description, event_types, secret,
	disabled, date_created, date_last_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		w.BrandID, w.URL, w.Description, string(types), w.Secret, w.Disabled, micros(tx.now), micros(tx.now))
	if err := row.Scan(&w.ID); err != nil {
		return fmt.Errorf("store: insert webhook: %w", err)
	}
	return nil
}

// UpdateWebhook writes every mutable member of w.
func (tx *Tx) UpdateWebhook(ctx context.Context, w *WebhookRecord) error {
	types, err := json.Marshal(w.EventTypes)
	if err != nil {
		return err
	}
	var until, failing sql.NullInt64
	if w.OldSecretUntil != nil {
		until = sql.NullInt64{Int64: micros(*w.OldSecretUntil), Valid: true}
	}
	if w.FailingSince != nil {
		failing = sql.NullInt64{Int64: micros(*w.FailingSince), Valid: true}
	}
	tx.hooks = nil
	w.DateLastUpdated = parley.Time{Time: tx.now}
	res, err := tx.exec(ctx, `UPDATE webhook_endpoints SET url = ?, description = ?, event_types = ?, secret = ?,
	old_secret = ?, old_secret_until = ?, disabled = ?, failing_since = ?, date_last_updated = ?
	WHERE brand_id = ? AND id = ?`, w.URL, w.Description, string(types), w.Secret, w.OldSecret, until,
		w.Disabled, failing, micros(tx.now), w.BrandID, w.ID)
	if err != nil {
		return fmt.Errorf("store: update webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// FindWebhook returns an endpoint of the brand inside the transaction.
func (tx *Tx) FindWebhook(ctx context.Context, brandID, id int64) (*WebhookRecord, error) {
	row := tx.queryRow(ctx, `SELECT `+webhookColumns+` FROM webhook_endpoints WHERE brand_id = ? AND id = ?`, brandID, id)
	return scanWebhook(row.Scan)
}

// FindWebhook returns an endpoint of the brand, or ErrNotFound.
func (db *DB) FindWebhook(ctx context.Context, brandID, id int64) (*WebhookRecord, error) {
	row := db.queryRow(ctx, `SELECT `+webhookColumns+` FROM webhook_endpoints WHERE brand_id = ? AND id = ?`, brandID, id)
	return scanWebhook(row.Scan)
}

// ListWebhooks returns the brand's endpoints ordered by id; with
// enabledOnly, only those not disabled (inside tx when tx is not nil).
func (db *DB) ListWebhooks(ctx context.Context, tx *Tx, brandID int64, enabledOnly bool) ([]*WebhookRecord, error) {
	if tx != nil && enabledOnly {
		if hooks, ok := tx.hooks[brandID]; ok {
			return slices.Clone(hooks), nil
		}
	}
	hooks, err := db.listWebhooks(ctx, tx, brandID, enabledOnly)
	if err == nil && tx != nil && enabledOnly {
		if tx.hooks == nil {
			tx.hooks = map[int64][]*WebhookRecord{}
		}
		tx.hooks[brandID] = slices.Clone(hooks)
	}
	return hooks, err
}

func (db *DB) listWebhooks(ctx context.Context, tx *Tx, brandID int64, enabledOnly bool) ([]*WebhookRecord, error) {
	q := `SELECT ` + webhookColumns + ` FROM webhook_endpoints WHERE brand_id = ?`
	if enabledOnly {
		q += ` AND disabled = FALSE`
	}
	q += ` ORDER BY id`
	var rows *sql.Rows
	var err error
	if tx != nil {
		rows, err = tx.query(ctx, q, brandID)
	} else {
		rows, err = db.query(ctx, q, brandID)
	}
	if err != nil {
		return nil, fmt.Errorf("store: list webhooks: %w", err)
	}
	defer rows.Close()
	var out []*WebhookRecord
	for rows.Next() {
		w, err := scanWebhook(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// DeleteWebhook removes an endpoint and its delivery log, and cancels the
// deliveries queued to it that are not running (River's deliver_webhook
// jobs): they would only find it gone, up to 28 hours later. One running
// now finds it gone when it logs its attempt.
func (tx *Tx) DeleteWebhook(ctx context.Context, brandID, id int64) error {
	tx.hooks = nil
	if _, err := tx.exec(ctx, qCancelWebhookJobs[tx.db.engine], brandID, id); err != nil {
		return fmt.Errorf("store: cancel webhook deliveries: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM webhook_deliveries WHERE brand_id = ? AND endpoint_id = ?`, brandID, id); err != nil {
		return fmt.Errorf("store: delete webhook deliveries: %w", err)
	}
	res, err := tx.exec(ctx, `DELETE FROM webhook_endpoints WHERE brand_id = ? AND id = ?`, brandID, id)
	if err != nil {
		return fmt.Errorf("store: delete webhook: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// qCancelWebhookJobs cancels an endpoint's queued deliveries as River's
// JobCancel does a job that is not running: cancelled, finalized now.
var qCancelWebhookJobs = map[string]string{
	"sqlite": `UPDATE river_job SET state = 'cancelled', finalized_at = datetime('now', 'subsec')
	WHERE kind = 'deliver_webhook' AND state IN ('available', 'pending', 'retryable', 'scheduled')
	AND json_extract(args, '$.brand_id') = ? AND json_extract(args, '$.endpoint_id') = ?`,
	"postgres": `UPDATE river_job SET state = 'cancelled', finalized_at = now()
	WHERE kind = 'deliver_webhook' AND state IN ('available', 'pending', 'retryable', 'scheduled')
	AND (args->>'brand_id')::bigint = ? AND (args->>'endpoint_id')::bigint = ?`,
}

// InsertEvent appends an event to the outbox.
func (tx *Tx) InsertEvent(ctx context.Context, brandID int64, e *parley.Event, payload []byte) error {
	_, err := tx.exec(ctx, `INSERT INTO events (id, brand_id, type, payload, date_created) VALUES (?, ?, ?, ?, ?)`,
		e.ID, brandID, e.Type, string(payload), micros(e.CreatedAt.Time))
	if err != nil {
		return fmt.Errorf("store: insert event: %w", err)
	}
	return nil
}

// FindEvent returns an event's type and its payload as delivered.
func (db *DB) FindEvent(ctx context.Context, brandID int64, id string) (string, []byte, time.Time, error) {
	var typ, payload string
	var created int64
	err := db.queryRow(ctx, `SELECT type, payload, date_created FROM events WHERE brand_id = ? AND id = ?`, brandID, id).Scan(&typ, &payload, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, time.Time{}, ErrNotFound
	}
	if err != nil {
		return "", nil, time.Time{}, fmt.Errorf("store: find event: %w", err)
	}
	return typ, []byte(payload), fromMicros(created), nil
}

// InsertWebhookDelivery records one attempt.
func (tx *Tx) InsertWebhookDelivery(ctx context.Context, brandID int64, d *parley.WebhookDelivery) error {
	var status sql.NullInt64
	if d.Status != nil {
		status = sql.NullInt64{Int64: int64(*d.Status), Valid: true}
	}
	d.DateCreated = parley.Time{Time: tx.now}
	err := tx.queryRow(ctx, `INSERT INTO webhook_deliveries (brand_id, endpoint_id, event_id, event_type,
	attempt, status, latency_ms, response, error, outcome, date_created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		brandID, d.WebhookID, d.EventID, d.EventType, d.Attempt, status, d.LatencyMS, d.Response, d.Error, d.Outcome, micros(tx.now)).Scan(&d.ID)
	if err != nil {
		return fmt.Errorf("store: insert webhook delivery: %w", err)
	}
	return nil
}

const deliveryColumns = `id, endpoint_id, event_id, event_type, attempt, status, latency_ms, response, error, outcome, date_created`

func scanDelivery(scan func(...any) error) (*parley.WebhookDelivery, error) {
	var d parley.WebhookDelivery
	var status sql.NullInt64
	var created int64
	if err := scan(&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.Attempt, &status, &d.LatencyMS, &d.Response,
		&d.Error, &d.Outcome, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("store: scan webhook delivery: %w", err)
	}
	if status.Valid {
		s := int(status.Int64)
		d.Status = &s
	}
	d.DateCreated = parley.Time{Time: fromMicros(created)}
	return &d, nil
}

// ListWebhookDeliveries returns up to limit attempts of an endpoint with id
// below beforeID (0: no bound), newest first.
func (db *DB) ListWebhookDeliveries(ctx context.Context, brandID, endpointID, beforeID int64, limit int) ([]*parley.WebhookDelivery, error) {
	q := `SELECT ` + deliveryColumns + ` FROM webhook_deliveries WHERE brand_id = ? AND endpoint_id = ?`
	args := []any{brandID, endpointID}
	if beforeID != 0 {
		q += ` AND id < ?`
		args = append(args, beforeID)
	}
	rows, err := db.query(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: list webhook deliveries: %w", err)
	}
	defer rows.Close()
	out := []*parley.WebhookDelivery{}
	for rows.Next() {
		d, err := scanDelivery(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// FindWebhookDelivery returns one attempt of an endpoint of the brand.
func (db *DB) FindWebhookDelivery(ctx context.Context, brandID, endpointID, id int64) (*parley.WebhookDelivery, error) {
	row := db.queryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE brand_id = ? AND endpoint_id = ? AND id = ?`,
		brandID, endpointID, id)
	return scanDelivery(row.Scan)
}
