package service

import (
	"context"
	"errors"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/placeholder"
	"github.com/parleyhq/parley/internal/smsparts"
	"github.com/parleyhq/parley/internal/store"
)

// Reviewing and testing a campaign before it goes (issue #32).

// CampaignReview is what a campaign of a body to a segment would send if
// it started now.
type CampaignReview struct {
	Members   int64 // the segment's members
	Consented int64 // of them with messaging_consent true: the messages (D16)
	// Sample is the first consenting member, nil when none; Body is the
	// body rendered for it (for nobody: every placeholder missing).
	Sample   *parley.User
	Body     string
	Segments int    // num_segments of Body (D16)
	Encoding string // GSM-7 or UCS-2
	Total    int64  // Consented × Segments: the segments billed, about
	// Suspicious are brace groups of the body that are not placeholders
	// and go out as written: {first_name}, {{ frist_name }} (D21).
	Suspicious []string
}

// ReviewCampaign computes a CampaignReview. ESegmentNotFound, EValidation
// (the segment cannot be evaluated, or the body's placeholders are
// refused as a save would refuse them).
func (s *Service) ReviewCampaign(ctx context.Context, brandID, segmentID int64, body string, media int) (*CampaignReview, error) {
	r := &CampaignReview{Suspicious: placeholder.Suspicious(body)}
	if err := checkPlaceholders(ctx, s.db, brandID, "body", body, false); err != nil {
		return nil, err
	}
	a, err := s.segmentAudience(ctx, brandID, segmentID)
	if err != nil {
		return nil, err
	}
	reach, err := s.db.AudienceReach(ctx, brandID, a)
	if err != nil {
		return nil, s.audienceErr(segmentID, err)
	}
	r.Members, r.Consented, r.Sample = reach.Members, reach.Consented, reach.Sample
	r.Body = RenderBody(body, contactOf(r.Sample))
	p := smsparts.Count(r.Body, media)
	r.Segments, r.Encoding = p.Segments, string(p.Encoding)
	r.Total = r.Consented * int64(r.Segments)
	return r, nil
}

// contactOf is what a body is filled in with for u; nil is nobody.
func contactOf(u *parley.User) Contact {
	if u == nil {
		return Contact{}
	}
	c := Contact{CustomData: string(u.CustomData)}
	if u.FirstName != nil {
		c.FirstName = *u.FirstName
	}
	if u.LastName != nil {
		c.LastName = *u.LastName
	}
	if c.CustomData == "null" {
		c.CustomData = ""
	}
	return c
}

// CampaignTestSend is a test of a campaign's content to one number.
type CampaignTestSend struct {
	PhoneNumber    string
	Body           string
	MediaItemUUIDs []string
	// SegmentID, when not 0, gives the sample contact the body is
	// rendered for when the number is no contact's.
	SegmentID int64
}

// TestSendCampaign sends the body, rendered, to one number (issue #32).
// The text is rendered for the number's contact when there is one, else
// for the segment's sample contact (ReviewCampaign). It goes as any
// POST /messages does, type TRANSACTIONAL (a test is not held for quiet
// hours, but a number that opted out is still refused), with no
// campaign_id: it is in no campaign's stats. A number that is no
// contact's becomes a contact (phone number only, consent unknown), as
// an inbound text would make it. EInvalidPhoneNumber on phone_number,
// EValidation on body.
func (s *Service) TestSendCampaign(ctx context.Context, o parley.Origin, brandID int64, in CampaignTestSend) (*parley.Message, error) {
	if strings.TrimSpace(in.PhoneNumber) == "" {
		return nil, invalid("phone_number", "required: the number to send the test to")
	}
	e164, err := s.normalizePhone(in.PhoneNumber)
	if err != nil {
		return nil, err
	}
	if in.Body == "" && len(in.MediaItemUUIDs) == 0 {
		return nil, invalid("body", "required when there are no media items")
	}
	if err := checkPlaceholders(ctx, s.db, brandID, "body", in.Body, false); err != nil {
		return nil, err
	}
	u, err := s.db.FindUserByPhone(ctx, brandID, e164)
	var who *parley.User
	switch {
	case errors.Is(err, store.ErrNotFound):
		if in.SegmentID != 0 {
			if a, err := s.segmentAudience(ctx, brandID, in.SegmentID); err == nil {
				if reach, err := s.db.AudienceReach(ctx, brandID, a); err == nil {
					who = reach.Sample
				}
			}
		}
		u, err = s.CreateUser(ctx, o, brandID, parley.UserCreate{PhoneNumber: parley.Some(e164)})
		if err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		who = u
	}
	mc := parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some(RenderBody(in.Body, contactOf(who))),
		Type: parley.Some(parley.TypeTransactional)}
	if len(in.MediaItemUUIDs) > 0 {
		mc.MediaItemUUIDs = parley.Some(in.MediaItemUUIDs)
	}
	return s.SendMessage(ctx, o, brandID, mc)
}

// TestCampaign implements parley.CampaignService: campaign id's body and
// media to one number, as TestSendCampaign sends them.
func (s *Service) TestCampaign(ctx context.Context, o parley.Origin, brandID, id int64, in parley.CampaignTest) (*parley.Message, error) {
	c, err := s.FindCampaign(ctx, brandID, id)
	if err != nil {
		return nil, err
	}
	return s.TestSendCampaign(ctx, o, brandID, CampaignTestSend{PhoneNumber: in.PhoneNumber.Value, Body: c.Body,
		MediaItemUUIDs: c.MediaItemUUIDs, SegmentID: c.SegmentID})
}

// CheckCampaign applies every rule of CreateCampaign to in and returns
// the campaign it would store, storing nothing: the console's review
// step, before anything is sent or scheduled. A zero SendAt is now.
func (s *Service) CheckCampaign(ctx context.Context, brandID int64, in parley.CampaignCreate) (*parley.Campaign, error) {
	c, err := checkCampaign(in, s.db.Now())
	if err != nil {
		return nil, err
	}
	c.BrandID = brandID
	err = s.db.WithTx(ctx, func(tx *store.Tx) error { return s.checkCampaignRefs(ctx, tx, c) })
	if err != nil {
		return nil, err
	}
	return c, nil
}
