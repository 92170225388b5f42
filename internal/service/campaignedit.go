package service

import (
	"context"
	"errors"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Editing a scheduled campaign (issue #32): POST /campaigns/{id} changes
// the members it sets until the campaign starts. The edit locks the
// campaign's row and changes it only while it is scheduled; the
// scheduler's start (ResolveDueCampaigns) locks the same row and starts
// it only while it is scheduled and due, reading it again under the lock.
// So either the edit commits first, and the start sends what it says (or
// waits for its new send_at), or the start commits first, and the edit is
// refused with ECampaignNotEditable.

// UpdateCampaign implements parley.CampaignService.
func (s *Service) UpdateCampaign(ctx context.Context, o parley.Origin, brandID, id int64, in parley.CampaignCreate) (*parley.Campaign, error) {
	var c *parley.Campaign
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		status, err := tx.LockCampaignStatus(ctx, brandID, id)
		if errors.Is(err, store.ErrNotFound) {
			return parley.CampaignNotFound(id)
		} else if err != nil {
			return err
		}
		if status != parley.CampaignScheduled {
			return parley.Errorf(parley.ECampaignNotEditable,
				"Campaign with ID [%d] is %s: only a scheduled campaign can be changed. Duplicate it to send it again.", id, status)
		}
		old, err := tx.FindCampaign(ctx, brandID, id)
		if err != nil {
			return err
		}
		merged := mergeCampaign(old, in)
		now := tx.Now()
		if c, err = checkCampaign(merged, now); err != nil {
			return err
		}
		switch {
		case !in.SendAt.Set:
			c.SendAt = old.SendAt // as it was, even if due a moment ago
		case !in.SendAt.Valid:
			c.SendAt = parley.NewTime(now)
		}
		c.ID, c.BrandID, c.DateCreated = old.ID, brandID, old.DateCreated
		if err := s.checkCampaignRefs(ctx, tx, c); err != nil {
			return err
		}
		if err := tx.UpdateScheduledCampaign(ctx, c); err != nil {
			return err
		}
		if c, err = tx.FindCampaign(ctx, brandID, id); err != nil {
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

// mergeCampaign is old with the members in sets, as a create's input;
// send_at is left to the caller.
func mergeCampaign(old *parley.Campaign, in parley.CampaignCreate) parley.CampaignCreate {
	m := parley.CampaignCreate{Name: parley.Some(old.Name), SegmentID: parley.Some(old.SegmentID),
		Body: parley.Some(old.Body), MediaItemUUIDs: parley.Some(old.MediaItemUUIDs), Type: parley.Some(old.Type)}
	if in.Name.Set {
		m.Name = in.Name
	}
	if in.SegmentID.Set {
		m.SegmentID = in.SegmentID
	}
	if in.Body.Set {
		m.Body = in.Body
	}
	if in.MediaItemUUIDs.Set {
		m.MediaItemUUIDs = in.MediaItemUUIDs
	}
	if in.Type.Set {
		m.Type = in.Type
	}
	if in.SendAt.Valid {
		m.SendAt = in.SendAt
	}
	return m
}

// startable reads campaign c again under its row's lock when the
// scheduler starts it: ErrCampaignNotScheduled unless it is still
// scheduled and due at now (an edit may have moved send_at), else c as
// it is now (an edit may have changed its segment or body).
func startable(ctx context.Context, tx *store.Tx, c *parley.Campaign, now time.Time) (*parley.Campaign, error) {
	status, err := tx.LockCampaignStatus(ctx, c.BrandID, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrCampaignNotScheduled
	} else if err != nil {
		return nil, err
	}
	if status != parley.CampaignScheduled {
		return nil, store.ErrCampaignNotScheduled
	}
	fresh, err := tx.FindCampaign(ctx, c.BrandID, c.ID)
	if err != nil {
		return nil, err
	}
	if fresh.SendAt.After(now) {
		return nil, store.ErrCampaignNotScheduled
	}
	return fresh, nil
}
