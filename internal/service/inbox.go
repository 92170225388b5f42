package service

import (
	"context"
	"errors"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// The inbox (issue #32): a conversation per contact who has texted, open
// or resolved, assigned to an operator of the brand or to no one, unread
// when a text came in since an operator last opened it, and waiting when
// its latest text has no reply and is not a keyword Parley answered
// itself (autoreply.go).

// InboxPageSize is how many conversations a page of the inbox shows.
const InboxPageSize = 50

// Conversation is one conversation of the inbox.
type Conversation = store.Conversation

// InboxView chooses a page of the inbox.
type InboxView struct {
	Resolved bool // the resolved conversations instead of the open ones
	// Assignee: 0 for all, -1 for the unassigned, else an operator's id.
	Assignee int64
	// After the previous page's last conversation (zero: the first page).
	AfterAt     time.Time
	AfterUserID int64
}

// Inbox returns a page of the brand's conversations, newest text first,
// and whether there are more.
func (s *Service) Inbox(ctx context.Context, brandID int64, v InboxView) ([]Conversation, bool, error) {
	f := store.ConversationFilter{Status: store.ConversationOpen, Assignee: v.Assignee,
		AfterAt: v.AfterAt, AfterUserID: v.AfterUserID, Limit: InboxPageSize + 1}
	if v.Resolved {
		f.Status = store.ConversationResolved
	}
	cs, err := s.db.Conversations(ctx, brandID, f)
	if err != nil {
		return nil, false, err
	}
	if len(cs) > InboxPageSize {
		return cs[:InboxPageSize], true, nil
	}
	return cs, false, nil
}

// FindConversation returns the contact's conversation; ENotFound when the
// contact has never texted the brand.
func (s *Service) FindConversation(ctx context.Context, brandID, userID int64) (*Conversation, error) {
	c, err := s.db.FindConversation(ctx, brandID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, noConversation()
	}
	return c, err
}

// OpenConversation marks the contact's conversation read, as an operator
// opens it, and returns it.
func (s *Service) OpenConversation(ctx context.Context, brandID, userID int64) (*Conversation, error) {
	if err := s.db.WithTx(ctx, func(tx *store.Tx) error {
		return tx.MarkConversationRead(ctx, brandID, userID, tx.Now())
	}); err != nil {
		return nil, err
	}
	return s.FindConversation(ctx, brandID, userID)
}

// ResolveConversation resolves (resolved true) or reopens it.
func (s *Service) ResolveConversation(ctx context.Context, brandID, userID int64, resolved bool) error {
	status := store.ConversationOpen
	if resolved {
		status = store.ConversationResolved
	}
	return s.conversationTx(ctx, func(tx *store.Tx) error { return tx.SetConversationStatus(ctx, brandID, userID, status) })
}

// AssignConversation assigns it to an operator of the brand, or to no one
// (operatorID 0).
func (s *Service) AssignConversation(ctx context.Context, brandID, userID, operatorID int64) error {
	return s.conversationTx(ctx, func(tx *store.Tx) error { return tx.AssignConversation(ctx, brandID, userID, operatorID) })
}

func (s *Service) conversationTx(ctx context.Context, fn func(*store.Tx) error) error {
	err := s.db.WithTx(ctx, fn)
	if errors.Is(err, store.ErrNotFound) {
		return noConversation()
	}
	return err
}

func noConversation() error {
	return parley.Errorf(parley.ENotFound, "This contact has not texted you, so there is no conversation to change.")
}
