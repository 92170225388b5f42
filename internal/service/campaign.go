package service

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Campaigns (D16): this file checks, stores, reads and cancels them. The
// engine that resolves a due campaign's segment and sends its messages
// lives beside the delivery code; it finds what CreateCampaign stores.

var _ parley.CampaignService = (*Service)(nil)

var campaignTypes = []string{parley.TypeMarketing, parley.TypeTransactional}

// canceledReason is the error_message of a message failed by its
// campaign's cancel.
const canceledReason = "The campaign was canceled before this message was handed to the provider."

// CreateCampaign implements parley.CampaignService: the members are
// checked first, then the segment and the media in the transaction that
// stores the campaign, so a refused campaign leaves nothing behind.
func (s *Service) CreateCampaign(ctx context.Context, o parley.Origin, brandID int64, in parley.CampaignCreate) (*parley.Campaign, error) {
	c, err := checkCampaign(in, s.db.Now())
	if err != nil {
		return nil, err
	}
	c.BrandID = brandID
	err = s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		if err := s.checkCampaignRefs(ctx, tx, c); err != nil {
			return err
		}
		if c.SendAt.IsZero() {
			c.SendAt = parley.NewTime(tx.Now())
		}
		if err := tx.InsertCampaign(ctx, c); err != nil {
			return err
		}
		tx.Answer(c)
		tx.AfterCommit(s.wakeCampaigns)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// checkCampaignRefs checks what campaign c names in the database: its
// segment (the brand's, not archived, usable), its media and the custom
// data keys of its placeholders (D21).
func (s *Service) checkCampaignRefs(ctx context.Context, tx *store.Tx, c *parley.Campaign) error {
	seg, err := tx.FindSegment(ctx, c.BrandID, c.SegmentID)
	if errors.Is(err, store.ErrNotFound) {
		return parley.SegmentNotFound(c.SegmentID)
	} else if err != nil {
		return err
	}
	if seg.IsArchived {
		return invalid("segment_id", "segment "+strconv.FormatInt(seg.ID, 10)+" is archived")
	}
	// A segment that count would refuse is refused here too (D14),
	// not found out at send_at.
	if _, err := usableSegment(ctx, tx, c.BrandID, seg.ID); err != nil {
		return unusableSegment(seg.ID, err)
	}
	if err := checkMedia(ctx, tx, c.BrandID, c.MediaItemUUIDs); err != nil {
		return err
	}
	return checkPlaceholders(ctx, tx, c.BrandID, "body", c.Body, false)
}

// unusableSegment names segment_id in the error of a campaign's segment
// that cannot be evaluated (usableSegment).
func unusableSegment(id int64, err error) error {
	if parley.ErrorCode(err) != parley.EValidation {
		return err
	}
	return invalid("segment_id", "segment "+strconv.FormatInt(id, 10)+" cannot be evaluated: "+parley.ErrorMessage(err))
}

// checkCampaign applies the rules of D16 that need no database, with now
// the server's clock, and returns the campaign to store: scheduled, with
// zero stats, SendAt zero for "now".
func checkCampaign(in parley.CampaignCreate, now time.Time) (*parley.Campaign, error) {
	c := &parley.Campaign{Type: parley.TypeMarketing, Status: parley.CampaignScheduled, MediaItemUUIDs: []string{}}
	c.Name = strings.TrimSpace(in.Name.Value)
	switch {
	case c.Name == "":
		return nil, invalid("name", "required")
	case utf8.RuneCountInString(c.Name) > parley.MaxCampaignName:
		return nil, invalid("name", "at most "+strconv.Itoa(parley.MaxCampaignName)+" characters")
	case !in.SegmentID.Valid:
		return nil, invalid("segment_id", "required")
	case in.SegmentID.Value < 1:
		return nil, invalid("segment_id", "must be an integer ≥ 1")
	}
	c.SegmentID = in.SegmentID.Value
	var m parley.Message
	if err := checkContent(&m, in.Body, in.MediaItemUUIDs); err != nil {
		return nil, err
	}
	c.Body = m.Body
	if in.MediaItemUUIDs.Valid {
		c.MediaItemUUIDs = m.MediaItemUUIDs
	}
	if in.Type.Set {
		t, ok := oneOf(in.Type, campaignTypes)
		if !ok {
			return nil, invalid("type", "must be one of "+strings.Join(campaignTypes, ", "))
		}
		c.Type = t
	}
	if in.SendAt.Valid {
		at, err := time.Parse(time.RFC3339, in.SendAt.Value)
		if err != nil {
			return nil, invalid("send_at", "must be an RFC 3339 date-time with a time zone, such as 2026-11-21T22:12:32Z")
		}
		if at.Before(now.Add(-parley.SendAtGrace)) {
			return nil, invalid("send_at", "more than 60 seconds in the past; send null (or leave it out) to send now")
		}
		// The year bound is implied today; it stays in case the horizon
		// grows: a year past 9999 cannot be written back (#31).
		if at.After(parley.SendAtLatest(now)) || !parley.InYearRange(at) {
			return nil, invalid("send_at", "more than one year ahead (at most "+
				parley.SendAtLatest(now).UTC().Format(time.RFC3339)+")")
		}
		c.SendAt = parley.NewTime(at)
	}
	if c.Body == "" && len(c.MediaItemUUIDs) == 0 {
		return nil, invalid("body", "required when there are no media items")
	}
	if _, err := parseBody("body", c.Body); err != nil {
		return nil, err
	}
	return c, nil
}

// FindCampaign implements parley.CampaignService.
func (s *Service) FindCampaign(ctx context.Context, brandID, id int64) (*parley.Campaign, error) {
	c, err := s.db.FindCampaign(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.CampaignNotFound(id)
	} else if err != nil {
		return nil, err
	}
	return c, nil
}

// ListCampaigns implements parley.CampaignService: pages as GET /messages
// does, newest first, each campaign with its stats.
func (s *Service) ListCampaigns(ctx context.Context, brandID int64, f parley.CampaignFilter) ([]*parley.Campaign, string, error) {
	limit, before, err := pageArgs(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	cs, err := s.db.ListCampaigns(ctx, brandID, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(cs) > limit {
		cs = cs[:limit]
		next = encodeCursor(cs[limit-1].ID)
	}
	return cs, next, nil
}

// CancelCampaign implements parley.CampaignService. The campaign and its
// unclaimed messages change in one transaction, with a message.failed
// event for each such message when an endpoint of the brand subscribes
// (D11); the answer carries the stats as of that transaction.
func (s *Service) CancelCampaign(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Campaign, error) {
	return s.cancelCampaign(ctx, o, brandID, id, "")
}

// cancelCampaign cancels the campaign as CancelCampaign does; a why other
// than "" is stored as its cancel_reason, in the same transaction, when
// this call is the one that cancels it (the server's cancel, issue #31).
func (s *Service) cancelCampaign(ctx context.Context, o parley.Origin, brandID, id int64, why string) (*parley.Campaign, error) {
	var c *parley.Campaign
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		hooks, err := s.hooksFor(ctx, tx, brandID, parley.EventMessageFailed)
		if err != nil {
			return err
		}
		var each func([]*parley.Message) error
		if len(hooks) > 0 {
			each = func(ms []*parley.Message) error {
				for _, m := range ms {
					if err := s.emitTo(ctx, tx, brandID, parley.EventMessageFailed, hooks, m); err != nil {
						return err
					}
				}
				return nil
			}
		}
		var canceled bool
		c, canceled, err = tx.CancelCampaign(ctx, brandID, id, canceledReason, each)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return parley.CampaignNotFound(id)
		case errors.Is(err, store.ErrCampaignNotCancelable):
			return parley.Errorf(parley.ECampaignNotCancelable,
				"Campaign with ID [%d] has completed: every message was handed to the provider or failed, so there is nothing to cancel.", id)
		case err != nil:
			return err
		}
		if canceled && why != "" {
			if err := tx.SetCampaignCancelReason(ctx, brandID, id, why); err != nil {
				return err
			}
			c.CancelReason = &why
		}
		tx.Answer(c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}
