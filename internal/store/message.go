package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/smsparts"
)

// InsertFile records an uploaded file.
func (tx *Tx) InsertFile(ctx context.Context, f *parley.File, blobKey string) error {
	_, err := tx.exec(ctx, `INSERT INTO files (id, brand_id, file_name, mime_type, size, blob_key, uploaded_at)
	VALUES (?, ?, ?, ?, ?, ?, ?)`, f.ID, f.BrandID, f.FileName, f.MimeType, f.Size, blobKey, micros(f.UploadedAt.Time))
	if err != nil {
		return fmt.Errorf("store: insert file: %w", err)
	}
	return nil
}

// FindFile returns a file of the brand and its blob key, or ErrNotFound.
func (db *DB) FindFile(ctx context.Context, brandID int64, id string) (*parley.File, string, error) {
	row := db.queryRow(ctx, `SELECT id, brand_id, file_name, mime_type, size, blob_key, uploaded_at
	FROM files WHERE brand_id = ? AND id = ?`, brandID, id)
	var f parley.File
	var key string
	var at int64
	if err := row.Scan(&f.ID, &f.BrandID, &f.FileName, &f.MimeType, &f.Size, &key, &at); errors.Is(err, sql.ErrNoRows) {
		return nil, "", ErrNotFound
	} else if err != nil {
		return nil, "", fmt.Errorf("store: find file: %w", err)
	}
	f.UploadedAt = parley.Time{Time: fromMicros(at)}
	return &f, key, nil
}

// ExistingFiles returns which of ids are files of the brand.
func (tx *Tx) ExistingFiles(ctx context.Context, brandID int64, ids []string) (map[string]bool, error) {
	found := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	q := `SELECT id FROM files WHERE brand_id = ? AND id IN (?` + strings.Repeat(", ?", len(ids)-1) + `)`
	args := make([]any, 0, len(ids)+1)
	args = append(args, brandID)
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := tx.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: find files: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: find files: %w", err)
		}
		found[id] = true
	}
	return found, rows.Err()
}

const messageColumns = `id, brand_id, user_id, direction, status, body, media_item_uuids, type,
	error_code, error_message, date_created, date_sent, date_delivered, campaign_id, scheduled_at, body_truncated, auto_reply, flow_id`

const qInsertMessage = `INSERT INTO messages (brand_id, user_id, direction, status, body,
	media_item_uuids, type, error_code, error_message, date_created, date_sent, date_delivered)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`

// qInsertMessageToUser is qInsertMessage only if the message's user is the
// brand's and live (its two last arguments: user id, brand id): one
// statement instead of a lookup and an insert. The user is found by id
// alone in a subquery that LIMIT keeps whole, for the reason given at
// qUserByID.
const qInsertMessageToUser = `INSERT INTO messages (brand_id, user_id, direction, status, body,
	media_item_uuids, type, error_code, error_message, date_created, date_sent, date_delivered)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
	FROM (SELECT brand_id, is_deleted FROM users WHERE id = ? LIMIT 1) u
	WHERE brand_id = ? AND is_deleted = FALSE
	RETURNING id`

// InsertMessage stores m and sets its ID.
func (tx *Tx) InsertMessage(ctx context.Context, m *parley.Message) error {
	return tx.insertMessage(ctx, qInsertMessage, m)
}

// InsertMessageToUser is InsertMessage for a message to one of the
// brand's live users; it stores nothing and returns ErrNotFound when
// m.UserID is not one.
func (tx *Tx) InsertMessageToUser(ctx context.Context, m *parley.Message) error {
	return tx.insertMessage(ctx, qInsertMessageToUser, m, m.UserID, m.BrandID)
}

// insertMessage runs query, qInsertMessage or qInsertMessageToUser, for m
// with the extra arguments after m's columns.
func (tx *Tx) insertMessage(ctx context.Context, query string, m *parley.Message, extra ...any) error {
	media, err := json.Marshal(nonNil(m.MediaItemUUIDs))
	if err != nil {
		return err
	}
	args := append([]any{m.BrandID, m.UserID, m.Direction, m.Status, m.Body, string(media), m.Type,
		toNullString(m.ErrorCode), toNullString(m.ErrorMessage), micros(m.DateCreated.Time),
		toNullTime(m.DateSent), toNullTime(m.DateDelivered)}, extra...)
	switch err := tx.queryRow(ctx, query, args...).Scan(&m.ID); {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return fmt.Errorf("store: insert message: %w", err)
	}
	setParts(m)
	return nil
}

// setParts fills in how m's body goes on the air (D16). It is derived from
// the body and the media, so it is computed where a message is read or
// written rather than stored.
func setParts(m *parley.Message) {
	p := smsparts.Count(m.Body, len(m.MediaItemUUIDs))
	m.Encoding, m.NumSegments = string(p.Encoding), p.Segments
}

// FindMessage returns a message of the brand, or ErrNotFound.
func (db *DB) FindMessage(ctx context.Context, brandID, id int64) (*parley.Message, error) {
	return db.findMessage(ctx, `brand_id = ? AND id = ?`, brandID, id)
}

// FindMessage is DB.FindMessage inside the transaction.
func (tx *Tx) FindMessage(ctx context.Context, brandID, id int64) (*parley.Message, error) {
	row := tx.queryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE brand_id = ? AND id = ?`, brandID, id)
	m, err := scanMessage(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return m, err
}

// findMessage returns the one message matching where, or ErrNotFound.
func (db *DB) findMessage(ctx context.Context, where string, args ...any) (*parley.Message, error) {
	row := db.queryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE `+where, args...)
	m, err := scanMessage(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return m, err
}

// ListMessages returns up to limit messages of the brand with id below
// beforeID (0: no bound), newest first, optionally only one user's.
func (db *DB) ListMessages(ctx context.Context, brandID, userID, beforeID int64, limit int) ([]*parley.Message, error) {
	return db.FindMessages(ctx, brandID, MessageQuery{UserID: userID, BeforeID: beforeID, Limit: limit})
}

// MessageQuery selects a page of a brand's messages, newest first. A zero
// member does not filter.
type MessageQuery struct {
	UserID     int64
	CampaignID int64 // read through messages_brand_campaign (D16)
	BeforeID   int64 // the page holds ids below it
	Limit      int
}

// FindMessages returns up to q.Limit messages of the brand that q selects.
func (db *DB) FindMessages(ctx context.Context, brandID int64, q MessageQuery) ([]*parley.Message, error) {
	stmt := `SELECT ` + messageColumns + ` FROM messages WHERE brand_id = ?`
	args := []any{brandID}
	if q.UserID != 0 {
		stmt += ` AND user_id = ?`
		args = append(args, q.UserID)
	}
	if q.CampaignID != 0 {
		stmt += ` AND campaign_id = ?`
		args = append(args, q.CampaignID)
	}
	if q.BeforeID != 0 {
		stmt += ` AND id < ?`
		args = append(args, q.BeforeID)
	}
	stmt += ` ORDER BY id DESC LIMIT ?`
	args = append(args, q.Limit)
	rows, err := db.query(ctx, stmt, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list messages: %w", err)
	}
	return collect(rows, scanMessage)
}

func scanMessage(scan func(...any) error) (*parley.Message, error) {
	var m parley.Message
	var media string
	var errCode, errMsg sql.NullString
	var created int64
	var sent, delivered, campaign, scheduled, flow sql.NullInt64
	var autoReply sql.NullString
	if err := scan(&m.ID, &m.BrandID, &m.UserID, &m.Direction, &m.Status, &m.Body, &media, &m.Type,
		&errCode, &errMsg, &created, &sent, &delivered, &campaign, &scheduled, &m.BodyTruncated, &autoReply, &flow); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("store: scan message: %w", err)
	}
	m.AutoReply = autoReply.String
	if err := json.Unmarshal([]byte(media), &m.MediaItemUUIDs); err != nil {
		return nil, fmt.Errorf("store: message %d media: %w", m.ID, err)
	}
	m.ErrorCode, m.ErrorMessage = nullString(errCode), nullString(errMsg)
	m.DateCreated = parley.Time{Time: fromMicros(created)}
	m.DateSent, m.DateDelivered = nullTime(sent), nullTime(delivered)
	if campaign.Valid {
		m.CampaignID = &campaign.Int64
	}
	if flow.Valid {
		m.FlowID = &flow.Int64
	}
	m.ScheduledAt = nullTime(scheduled)
	setParts(&m)
	return &m, nil
}

// InsertMessages stores messages in one statement per chunk, without
// setting their IDs: bulk seeding (`parley bench --scenario segments`),
// where one statement per message would take minutes on PostgreSQL. The
// activity triggers run as for InsertMessage.
func (tx *Tx) InsertMessages(ctx context.Context, msgs []*parley.Message) error {
	const row = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	for start := 0; start < len(msgs); start += insertChunk {
		batch := msgs[start:min(start+insertChunk, len(msgs))]
		var q strings.Builder
		q.WriteString(`INSERT INTO messages (brand_id, user_id, direction, status, body,
	media_item_uuids, type, error_code, error_message, date_created, date_sent, date_delivered) VALUES `)
		args := make([]any, 0, 12*len(batch))
		for i, m := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(row)
			media, err := json.Marshal(nonNil(m.MediaItemUUIDs))
			if err != nil {
				return err
			}
			args = append(args, m.BrandID, m.UserID, m.Direction, m.Status, m.Body, string(media), m.Type,
				toNullString(m.ErrorCode), toNullString(m.ErrorMessage), micros(m.DateCreated.Time),
				toNullTime(m.DateSent), toNullTime(m.DateDelivered))
		}
		if _, err := tx.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("store: insert messages: %w", err)
		}
	}
	return nil
}
