package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
)

var _ parley.Simulator = (*Service)(nil)

// SimulateInbound implements parley.Simulator (D12): the text reaches the
// calling brand's own number (not whichever brand a shared number would
// route to) through the same path as a carrier's inbound callback.
func (s *Service) SimulateInbound(ctx context.Context, o parley.Origin, brandID int64, in parley.SimulatedInbound) (*parley.Message, string, error) {
	if !in.From.Valid || in.From.Value == "" {
		return nil, "", invalid("from", "required: the sender's number in E.164")
	}
	from, err := s.normalizePhone(in.From.Value)
	if err != nil {
		return nil, "", &parley.Error{Code: parley.EInvalidPhoneNumber,
			Message: "from: Invalid phone number [" + in.From.Value + "] provided.", Field: "from"}
	}
	// The body is a carrier's text: stored, never refused, whatever its
	// characters and length (parley.CarrierText in receive, #31).
	if !in.Body.Valid || in.Body.Value == "" {
		return nil, "", invalid("body", "required: a non-empty string")
	}
	brand, replies, err := s.db.FindBrandWithReplies(ctx, brandID)
	if err != nil {
		return nil, "", err
	}
	// Each simulated text is a new carrier message, with an id of its own
	// as a carrier's SID; a retry is deduplicated by Idempotency-Key (D13).
	var id [16]byte
	rand.Read(id[:])
	m, reply, err := s.receive(ctx, o, brand, replies, delivery.Inbound{
		ProviderID: "SIMIN" + hex.EncodeToString(id[:]),
		From:       from, To: brand.PhoneNumber, Body: in.Body.Value})
	if err != nil {
		return nil, "", err
	}
	if reply != "" {
		s.logger.InfoContext(ctx, "sim: reply to an inbound message", "brand_id", brandID, "message_id", m.ID, "reply", reply)
	}
	return m, reply, nil
}
