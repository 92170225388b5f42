package service

import (
	"context"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// The keywords Parley answers itself (D12), as messages.auto_reply names
// them.
const (
	AutoReplyStop  = "stop"
	AutoReplyStart = "start"
	AutoReplyHelp  = "help"
)

// queueAutoReply stores a keyword's answer as an outbound CONVERSATIONAL
// message of the conversation and queues it for the delivery worker, in
// the transaction that stored the keyword (issue #32).
//
// How it travels: through the provider like any message, never as the
// carrier callback's answer (Twilio's TwiML). The answer is created only
// with the inbound text that is new to the store, and the text is keyed
// by the carrier's id, so a redelivered callback creates none and the
// answer goes exactly once; the worker sends a message once (D8). It
// then gets the provider's real delivery status, as every message does,
// and shows in the conversation and in GET /messages. It goes whatever
// the contact's consent (Deliver): a STOP's answer confirms the opt-out.
func (s *Service) queueAutoReply(ctx context.Context, tx *store.Tx, brandID, userID int64, kind, body string) error {
	m := &parley.Message{BrandID: brandID, UserID: userID, Direction: parley.DirectionOutbound,
		Status: parley.StatusQueued, Body: body, MediaItemUUIDs: []string{}, Type: parley.TypeConversational,
		DateCreated: parley.Time{Time: tx.Now()}, AutoReply: kind}
	if err := tx.InsertMessage(ctx, m); err != nil {
		return err
	}
	if err := tx.MarkAutoReply(ctx, m.ID, kind); err != nil {
		return err
	}
	s.jobsOf(tx).Delivery(brandID, m.ID)
	return s.emit(ctx, tx, brandID, parley.EventMessageQueued, m)
}
