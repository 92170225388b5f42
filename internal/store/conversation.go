package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/parleyhq/parley"
)

// Conversation states (issue #32).
const (
	ConversationOpen     = "open"
	ConversationResolved = "resolved"
)

// TouchConversation records an inbound text of the contact at at: the
// conversation is created, or its latest text moves to at. A text an
// operator must read (autoAnswered false) reopens a resolved conversation;
// a keyword Parley answered itself (D12) does not, and leaves the
// conversation not waiting.
func (tx *Tx) TouchConversation(ctx context.Context, brandID, userID int64, at time.Time, autoAnswered bool) error {
	_, err := tx.exec(ctx, `INSERT INTO conversations (user_id, brand_id, status, last_inbound_at, auto_answered)
		VALUES (?, ?, 'open', ?, ?)
		ON CONFLICT (user_id) DO UPDATE SET
			status = CASE WHEN excluded.auto_answered THEN conversations.status ELSE 'open' END,
			last_inbound_at = CASE WHEN excluded.last_inbound_at > conversations.last_inbound_at
				THEN excluded.last_inbound_at ELSE conversations.last_inbound_at END,
			auto_answered = excluded.auto_answered`,
		userID, brandID, micros(at), autoAnswered)
	if err != nil {
		return fmt.Errorf("store: touch conversation: %w", err)
	}
	return nil
}

// MarkAutoReply marks an outbound message as the automatic answer to a
// keyword (kind stop, start or help).
func (tx *Tx) MarkAutoReply(ctx context.Context, messageID int64, kind string) error {
	_, err := tx.exec(ctx, `UPDATE messages SET auto_reply = ? WHERE id = ?`, kind, messageID)
	return err
}

// ConversationFilter chooses a page of the inbox.
type ConversationFilter struct {
	Status string // ConversationOpen or ConversationResolved
	// Assignee: 0 for every conversation, -1 for the unassigned ones, an
	// operator id for theirs.
	Assignee int64
	// After is the previous page's last entry (zero for the first page).
	AfterAt     time.Time
	AfterUserID int64
	Limit       int
}

// Conversation is one row of the inbox.
type Conversation struct {
	User          *parley.User
	Status        string
	AssigneeID    int64 // 0 when unassigned
	AssigneeEmail string
	LastInbound   time.Time
	// Waiting: the latest text came after the latest reply sent and is not
	// a keyword Parley answered itself.
	Waiting bool
	// Unread: a text came in since an operator last opened it.
	Unread bool
	// AutoAnswered: the latest text was a keyword Parley answered.
	AutoAnswered bool
	// Preview is the latest message of the conversation, either way.
	Preview          string
	PreviewDirection string
}

const conversationColumns = `c.status, COALESCE(c.assignee_id, 0), COALESCE(o.email, ''), c.last_inbound_at,
	c.auto_answered, COALESCE(c.read_at, 0), COALESCE(u.last_outbound_at, 0),
	COALESCE((SELECT m.body FROM messages m WHERE m.brand_id = c.brand_id AND m.user_id = c.user_id ORDER BY m.id DESC LIMIT 1), ''),
	COALESCE((SELECT m.direction FROM messages m WHERE m.brand_id = c.brand_id AND m.user_id = c.user_id ORDER BY m.id DESC LIMIT 1), '')`

// qConversations is a page of a view, newest text first: a range of
// conversations_brand_view (all) or conversations_brand_assignee (mine,
// unassigned); each preview is one probe of messages_brand_user_id.
func qConversations(assignee int64, after bool) string {
	q := `SELECT ` + prefixed("u.", userColumns) + `, ` + conversationColumns + `
		FROM conversations c JOIN users u ON u.id = c.user_id LEFT JOIN operators o ON o.id = c.assignee_id
		WHERE c.brand_id = ? AND c.status = ? AND u.is_deleted = FALSE`
	switch {
	case assignee < 0:
		q += ` AND c.assignee_id IS NULL`
	case assignee > 0:
		q += ` AND c.assignee_id = ?`
	}
	if after {
		// A row value: one range of the index, however deep the page.
		q += ` AND (c.last_inbound_at, c.user_id) < (?, ?)`
	}
	return q + ` ORDER BY c.last_inbound_at DESC, c.user_id DESC LIMIT ?`
}

// Conversations returns a page of the brand's inbox.
func (db *DB) Conversations(ctx context.Context, brandID int64, f ConversationFilter) ([]Conversation, error) {
	args := []any{brandID, f.Status}
	if f.Assignee > 0 {
		args = append(args, f.Assignee)
	}
	after := !f.AfterAt.IsZero()
	if after {
		args = append(args, micros(f.AfterAt), f.AfterUserID)
	}
	rows, err := db.query(ctx, qConversations(f.Assignee, after), append(args, f.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: conversations: %w", err)
	}
	return collect(rows, scanConversation)
}

func scanConversation(scan func(...any) error) (Conversation, error) {
	var c Conversation
	var last, read, outbound int64
	u, err := scanUserFrom(func(dest ...any) error {
		return scan(append(dest, &c.Status, &c.AssigneeID, &c.AssigneeEmail, &last, &c.AutoAnswered, &read, &outbound,
			&c.Preview, &c.PreviewDirection)...)
	})
	if err != nil {
		return Conversation{}, err
	}
	c.User, c.LastInbound = u, fromMicros(last)
	c.Unread = last > read
	c.Waiting = last > outbound && !c.AutoAnswered
	return c, nil
}

// FindConversation returns the contact's conversation, or ErrNotFound when
// they have never texted.
func (db *DB) FindConversation(ctx context.Context, brandID, userID int64) (*Conversation, error) {
	row := db.queryRow(ctx, `SELECT `+prefixed("u.", userColumns)+`, `+conversationColumns+`
		FROM conversations c JOIN users u ON u.id = c.user_id LEFT JOIN operators o ON o.id = c.assignee_id
		WHERE c.brand_id = ? AND c.user_id = ? AND u.is_deleted = FALSE`, brandID, userID)
	c, err := scanConversation(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// SetConversationStatus resolves or reopens a conversation; ErrNotFound
// when the contact has none.
func (tx *Tx) SetConversationStatus(ctx context.Context, brandID, userID int64, status string) error {
	return tx.updateConversation(ctx, `status = ?`, status, brandID, userID)
}

// AssignConversation assigns a conversation to an operator of the brand
// (0: to no one); ErrNotFound when the contact has no conversation or the
// operator is not the brand's.
func (tx *Tx) AssignConversation(ctx context.Context, brandID, userID, operatorID int64) error {
	if operatorID == 0 {
		return tx.updateConversation(ctx, `assignee_id = NULL`, nil, brandID, userID)
	}
	var n int
	if err := tx.queryRow(ctx, `SELECT count(*) FROM operators WHERE id = ? AND brand_id = ?`, operatorID, brandID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return tx.updateConversation(ctx, `assignee_id = ?`, operatorID, brandID, userID)
}

// MarkConversationRead records that an operator opened the conversation
// at at. A contact without one has nothing to read.
func (tx *Tx) MarkConversationRead(ctx context.Context, brandID, userID int64, at time.Time) error {
	err := tx.updateConversation(ctx, `read_at = ?`, micros(at), brandID, userID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

func (tx *Tx) updateConversation(ctx context.Context, set string, v any, brandID, userID int64) error {
	args := []any{brandID, userID}
	if v != nil {
		args = append([]any{v}, args...)
	}
	res, err := tx.exec(ctx, `UPDATE conversations SET `+set+` WHERE brand_id = ? AND user_id = ?`, args...)
	if err != nil {
		return fmt.Errorf("store: update conversation: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
