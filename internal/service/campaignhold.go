package service

import (
	"context"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/sendwindow"
)

// CampaignHold explains a campaign's held messages (D22): how many wait
// for a sending window, until when, and which rules keep it shut now for
// the recipient whose message goes first.
type CampaignHold struct {
	Held  int64
	Until time.Time
	// Due: Until has come; the held messages go with the next batches.
	Due bool
	// Closed is what keeps the window shut now for the first recipient.
	Closed sendwindow.Closed
	// Window is the brand's sending window; USRules whether the server
	// applies the US rules on top of it (--us-sending-rules).
	Window  sendwindow.Window
	USRules bool
}

// USSendingRules reports whether the server applies the US sending rules
// on top of every brand's window (D17; --us-sending-rules).
func (s *Service) USSendingRules() bool { return s.usSendingRules }

// HoldOf explains c's held messages at the service's clock; nil when none
// is held.
func (s *Service) HoldOf(ctx context.Context, brandID int64, c *parley.Campaign) (*CampaignHold, error) {
	if c.Stats.Held == 0 || c.Stats.HeldUntil == nil {
		return nil, nil
	}
	set, err := s.db.BrandSettings(ctx, brandID)
	if err != nil {
		return nil, err
	}
	w, err := sendwindow.ParseWindow(set.SendingWindow.Start, set.SendingWindow.End)
	if err != nil {
		return nil, err
	}
	now := s.db.Now()
	h := &CampaignHold{Held: c.Stats.Held, Until: c.Stats.HeldUntil.Time, Window: w, USRules: s.usSendingRules}
	if !now.Before(h.Until) {
		h.Due = true
		return h, nil
	}
	r, ok, err := s.db.FirstHeldRecipient(ctx, brandID, c.ID)
	if err != nil || !ok {
		return h, err
	}
	h.Closed = sendwindow.WhyClosed(now, sendwindow.Zones(r.ZipZone, r.To, set.TimeZone),
		sendwindow.State(r.StateCode, r.To), w, s.usSendingRules)
	return h, nil
}
