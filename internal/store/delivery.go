package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// Delivery is what a delivery attempt needs to know about a message.
type Delivery struct {
	Message          *parley.Message
	To               string // the recipient's number
	RecipientDeleted bool
	Consent          *bool
	From             string // the brand's number
	SendingAt        *time.Time
	Provider         string
	ProviderID       string
	// ZipZone (location.time_zone) and StateCode are the recipient's, ""
	// when unknown: where the sending window is measured (D17).
	ZipZone, StateCode string
}

var qFindDelivery = `SELECT ` + prefixed("m.", messageColumns) + `,
	u.phone_number, u.is_deleted, u.messaging_consent, b.phone_number, m.sending_at, m.provider, m.provider_id,
	COALESCE(u.time_zone, ''), COALESCE(u.state_code, '')
	FROM messages m JOIN users u ON u.id = m.user_id JOIN brands b ON b.id = m.brand_id
	WHERE m.brand_id = ? AND m.id = ?`

// FindDelivery loads a message with its recipient and brand, or ErrNotFound.
func (db *DB) FindDelivery(ctx context.Context, brandID, messageID int64) (*Delivery, error) {
	row := db.queryRow(ctx, qFindDelivery, brandID, messageID)
	var d Delivery
	var consent sql.NullBool
	var sending sql.NullInt64
	var provider, providerID sql.NullString
	m, err := scanMessage(func(dest ...any) error {
		return row.Scan(append(dest, &d.To, &d.RecipientDeleted, &consent, &d.From, &sending, &provider, &providerID,
			&d.ZipZone, &d.StateCode)...)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	d.Message, d.Consent = m, nullBool(consent)
	if sending.Valid {
		t := fromMicros(sending.Int64)
		d.SendingAt = &t
	}
	d.Provider, d.ProviderID = provider.String, providerID.String
	return &d, nil
}

// HoldMessage records when a queued message held outside its recipient's
// sending window will go (D17); false when it is no longer queued.
func (tx *Tx) HoldMessage(ctx context.Context, brandID, messageID int64, until time.Time) (bool, error) {
	res, err := tx.exec(ctx, `UPDATE messages SET scheduled_at = ? WHERE brand_id = ? AND id = ? AND status = 'queued'`,
		micros(until), brandID, messageID)
	if err != nil {
		return false, fmt.Errorf("store: hold message: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

const qMarkSending = `UPDATE messages SET sending_at = ?, attempts = attempts + 1, provider = ?
	WHERE brand_id = ? AND id = ? AND status = 'queued'`

// MarkSending records that a provider call is about to happen for a queued
// message; false when the message is no longer queued.
func (tx *Tx) MarkSending(ctx context.Context, brandID, messageID int64, provider string) (bool, error) {
	res, err := tx.exec(ctx, qMarkSending, micros(tx.now), provider, brandID, messageID)
	if err != nil {
		return false, fmt.Errorf("store: mark sending: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Transition is a status change of a message.
type Transition struct {
	Status       string
	At           time.Time // date_sent or date_delivered, when the status sets one
	ErrorCode    *string
	ErrorMessage *string
	ProviderID   string // recorded when not empty
	Provider     string // recorded when not empty (a send that skipped MarkSending)
}

// TransitionMessage moves a message to t.Status if it is in a status that
// may move there (parley.StatusFrom); false when it is not, which makes
// repeated and late updates harmless.
func (tx *Tx) TransitionMessage(ctx context.Context, brandID, messageID int64, t Transition) (bool, error) {
	from := parley.StatusFrom(t.Status)
	if len(from) == 0 {
		return false, fmt.Errorf("store: no transition to %q", t.Status)
	}
	args := []any{t.Status, toNullString(t.ErrorCode), toNullString(t.ErrorMessage)}
	at := micros(t.At)
	switch t.Status {
	case parley.StatusSent:
		args = append(args, at)
	case parley.StatusDelivered:
		args = append(args, at, at)
	}
	if t.ProviderID != "" {
		args = append(args, t.ProviderID)
	}
	if t.Provider != "" {
		args = append(args, t.Provider)
	}
	args = append(args, brandID, messageID)
	for _, f := range from {
		args = append(args, f)
	}
	q := transitionQuery(t.Status, t.ProviderID != "", t.Provider != "")
	res, err := tx.exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("store: transition message: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// transitionQuery is the UPDATE of TransitionMessage, in a few variants.
func transitionQuery(status string, withProviderID, withProvider bool) string {
	set := `status = ?, error_code = ?, error_message = ?`
	switch status {
	case parley.StatusSent:
		set += `, date_sent = ?`
	case parley.StatusDelivered:
		set += `, date_sent = COALESCE(date_sent, ?), date_delivered = ?`
	}
	if withProviderID {
		set += `, provider_id = ?`
	}
	if withProvider {
		set += `, provider = ?`
	}
	n := len(parley.StatusFrom(status))
	return `UPDATE messages SET ` + set + ` WHERE brand_id = ? AND id = ? AND status IN (?` + strings.Repeat(", ?", n-1) + `)`
}

// SetProviderID records the provider's id for a message.
func (tx *Tx) SetProviderID(ctx context.Context, brandID, messageID int64, providerID string) error {
	_, err := tx.exec(ctx, `UPDATE messages SET provider_id = ? WHERE brand_id = ? AND id = ?`, providerID, brandID, messageID)
	if err != nil {
		return fmt.Errorf("store: set provider id: %w", err)
	}
	return nil
}

// FindMessageByProviderID finds the message a provider's update is about.
func (db *DB) FindMessageByProviderID(ctx context.Context, provider, providerID string) (*parley.Message, error) {
	return db.findMessage(ctx, `provider = ? AND provider_id = ?`, provider, providerID)
}

// FindOutbound returns an outbound message by Parley's id, and the
// provider it was handed to ("" while none), or ErrNotFound.
func (db *DB) FindOutbound(ctx context.Context, messageID int64) (*parley.Message, string, error) {
	row := db.queryRow(ctx, `SELECT `+messageColumns+`, COALESCE(provider, '') FROM messages
	WHERE id = ? AND direction = 'outbound'`, messageID)
	var provider string
	m, err := scanMessage(func(dest ...any) error { return row.Scan(append(dest, &provider)...) })
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", ErrNotFound
	}
	return m, provider, err
}

// InsertInbound stores an inbound message once per provider id; a repeated
// one returns the stored message and false.
func (tx *Tx) InsertInbound(ctx context.Context, m *parley.Message, provider, providerID string) (bool, error) {
	if providerID != "" {
		row := tx.queryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE provider = ? AND provider_id = ?`, provider, providerID)
		if prev, err := scanMessage(row.Scan); err == nil {
			*m = *prev
			return false, nil
		} else if !errors.Is(err, sql.ErrNoRows) {
			return false, err
		}
	}
	if err := tx.InsertMessage(ctx, m); err != nil {
		return false, err
	}
	// Only an inbound text can be truncated (#31): its flag is set here
	// rather than in every insert.
	_, err := tx.exec(ctx, `UPDATE messages SET provider = ?, provider_id = ?, body_truncated = ? WHERE id = ?`,
		provider, nullIfEmpty(providerID), m.BodyTruncated, m.ID)
	return true, err
}

func nullIfEmpty(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// BrandReplies are a brand's answers to keywords (D12).
type BrandReplies struct {
	Help, Stop, Start string
}

// FindBrandByPhone returns the brand that owns a number, with its replies.
func (db *DB) FindBrandByPhone(ctx context.Context, phone string) (*parley.Brand, BrandReplies, error) {
	return scanBrandReplies(db.queryRow(ctx, `SELECT id, name, phone_number, date_created, help_reply, stop_reply, start_reply
	FROM brands WHERE phone_number = ? ORDER BY id LIMIT 1`, phone))
}

// FindBrandWithReplies returns a brand with its replies.
func (db *DB) FindBrandWithReplies(ctx context.Context, brandID int64) (*parley.Brand, BrandReplies, error) {
	return scanBrandReplies(db.queryRow(ctx, `SELECT id, name, phone_number, date_created, help_reply, stop_reply, start_reply
	FROM brands WHERE id = ?`, brandID))
}

func scanBrandReplies(row *sql.Row) (*parley.Brand, BrandReplies, error) {
	var b parley.Brand
	var r BrandReplies
	var created int64
	if err := row.Scan(&b.ID, &b.Name, &b.PhoneNumber, &created, &r.Help, &r.Stop, &r.Start); errors.Is(err, sql.ErrNoRows) {
		return nil, r, ErrNotFound
	} else if err != nil {
		return nil, r, fmt.Errorf("store: brand by phone: %w", err)
	}
	b.DateCreated = parley.Time{Time: fromMicros(created)}
	return &b, r, nil
}

// BrandUpdate changes the members that are not nil.
type BrandUpdate = parley.BrandUpdate

// UpdateBrand applies u; ErrNotFound when the brand does not exist.
func (tx *Tx) UpdateBrand(ctx context.Context, id int64, u BrandUpdate) error {
	var sets []string
	var args []any
	for _, f := range []struct {
		col string
		v   *string
	}{{"name", u.Name}, {"phone_number", u.PhoneNumber}, {"help_reply", u.HelpReply}, {"stop_reply", u.StopReply}, {"start_reply", u.StartReply}} {
		if f.v != nil {
			sets = append(sets, f.col+" = ?")
			args = append(args, *f.v)
		}
	}
	if len(sets) == 0 {
		return nil
	}
	res, err := tx.exec(ctx, `UPDATE brands SET `+strings.Join(sets, ", ")+` WHERE id = ?`, append(args, id)...)
	if err != nil {
		return fmt.Errorf("store: update brand: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// FindBrandReplies returns a brand's keyword replies.
func (db *DB) FindBrandReplies(ctx context.Context, id int64) (BrandReplies, error) {
	var r BrandReplies
	err := db.queryRow(ctx, `SELECT help_reply, stop_reply, start_reply FROM brands WHERE id = ?`, id).Scan(&r.Help, &r.Stop, &r.Start)
	if errors.Is(err, sql.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// ClearSending records that a provider call ended without the provider
// taking the message, so a retry may call it again; it is no longer in
// flight (handed_at).
func (tx *Tx) ClearSending(ctx context.Context, brandID, messageID int64) error {
	_, err := tx.exec(ctx, `UPDATE messages SET sending_at = NULL, handed_at = NULL WHERE brand_id = ? AND id = ?`, brandID, messageID)
	return err
}

// QueueStats returns how many jobs wait in the queue and when the oldest
// was created, for metrics. The extraction sweep's job is always there,
// waiting or running: it is no backlog.
func (db *DB) QueueStats(ctx context.Context) (int64, time.Time, error) {
	var n int64
	if err := db.queryRow(ctx, `SELECT count(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable') AND kind <> 'extraction_sweep'`).Scan(&n); err != nil {
		return 0, time.Time{}, fmt.Errorf("store: queue stats: %w", err)
	}
	if n == 0 {
		return 0, time.Time{}, nil
	}
	var oldest time.Time
	err := db.queryRow(ctx, `SELECT created_at FROM river_job WHERE state IN ('available', 'scheduled', 'retryable') AND kind <> 'extraction_sweep' ORDER BY id LIMIT 1`).Scan(&oldest)
	if errors.Is(err, sql.ErrNoRows) {
		return n, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: queue stats: %w", err)
	}
	return n, oldest, nil
}

// PendingWebhookDeliveries counts webhook jobs not yet finished.
func (db *DB) PendingWebhookDeliveries(ctx context.Context) (int64, error) {
	var n int64
	err := db.queryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'deliver_webhook'
	AND state IN ('available', 'scheduled', 'retryable', 'running')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: pending webhooks: %w", err)
	}
	return n, nil
}
