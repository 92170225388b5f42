package parley

import (
	"context"
	"time"
)

// Campaign statuses (D16): scheduled → sending → completed, or canceled.
const (
	CampaignScheduled = "scheduled"
	CampaignSending   = "sending"
	CampaignCompleted = "completed"
	CampaignCanceled  = "canceled"
)

// ErrorCodeCanceled is the error_code of a campaign message that was not
// yet handed to the provider when its campaign was canceled (D16).
const ErrorCodeCanceled = "canceled"

// Campaign is one message sent to every consenting member of a segment at
// SendAt (D16).
type Campaign struct {
	ID             int64         `json:"id"`
	BrandID        int64         `json:"-"`
	Name           string        `json:"name"`
	SegmentID      int64         `json:"segment_id"`
	Body           string        `json:"body"`
	MediaItemUUIDs []string      `json:"media_item_uuids"`
	Type           string        `json:"type"` // TypeMarketing or TypeTransactional
	Status         string        `json:"status"`
	SendAt         Time          `json:"send_at"`
	StartedAt      *Time         `json:"started_at"`
	CompletedAt    *Time         `json:"completed_at"`
	DateCreated    Time          `json:"date_created"`
	Stats          CampaignStats `json:"stats"`
	// CancelReason says why the server canceled the campaign: its segment
	// could not be evaluated at send_at (issue #31). Null otherwise,
	// a cancel through the API included.
	CancelReason *string `json:"cancel_reason"`
}

// CampaignStats counts a campaign's audience and messages (D16).
// Recipients, SkippedUnsubscribed and SkippedFrequencyCap are fixed when
// the segment is resolved; the others follow the messages' statuses, so
// Recipients = SkippedUnsubscribed + SkippedFrequencyCap + Queued + Sent +
// Delivered + Undelivered + Failed + Canceled (Failed leaves out the
// canceled ones).
type CampaignStats struct {
	Recipients          int64 `json:"recipients"`
	SkippedUnsubscribed int64 `json:"skipped_unsubscribed"`
	SkippedFrequencyCap int64 `json:"skipped_frequency_cap"`
	Queued              int64 `json:"queued"`
	Sent                int64 `json:"sent"`
	Delivered           int64 `json:"delivered"`
	Undelivered         int64 `json:"undelivered"`
	Failed              int64 `json:"failed"`
	Canceled            int64 `json:"canceled"`
}

// MaxCampaignName bounds a campaign's name in characters, as a segment's.
const MaxCampaignName = 100

// SendAtGrace is how far in the past a campaign's send_at may be when it is
// created (D16): a client's clock a little behind the server's, or a
// request that took a while, still schedules "now"; anything older is
// more likely a mistake than a wish to send at once.
const SendAtGrace = 60 * time.Second

// SendAtLatest is the latest send_at a campaign created at now may have
// (D16): the same date and time a year later.
func SendAtLatest(now time.Time) time.Time { return now.AddDate(1, 0, 0) }

// CampaignCreate is the body of POST /campaigns (D16). SendAt is an RFC
// 3339 date-time; absent or null means now.
type CampaignCreate struct {
	Name           Optional[string]   `json:"name,omitzero"`
	SegmentID      Optional[int64]    `json:"segment_id,omitzero"`
	Body           Optional[string]   `json:"body,omitzero"`
	MediaItemUUIDs Optional[[]string] `json:"media_item_uuids,omitzero"`
	Type           Optional[string]   `json:"type,omitzero"`
	SendAt         Optional[string]   `json:"send_at,omitzero"`
}

// CampaignFilter selects a page of campaigns, newest first.
type CampaignFilter struct {
	Limit  int    // 1–100; 0 means the default
	Cursor string // opaque; "" for the first page
}

// CampaignService creates, reads and cancels a brand's campaigns (D16).
// Lookups of an id of none or another brand's return ECampaignNotFound.
type CampaignService interface {
	// CreateCampaign validates in and stores the campaign, scheduled, with
	// zero stats. EValidation, ESegmentNotFound, EInvalidMediaItem.
	CreateCampaign(ctx context.Context, o Origin, brandID int64, in CampaignCreate) (*Campaign, error)
	// FindCampaign returns the campaign with its current stats.
	FindCampaign(ctx context.Context, brandID, id int64) (*Campaign, error)
	// ListCampaigns returns one page, newest first, and the cursor of the
	// next ("" at the end). EValidation for a bad limit or cursor.
	ListCampaigns(ctx context.Context, brandID int64, f CampaignFilter) ([]*Campaign, string, error)
	// CancelCampaign cancels a scheduled or sending campaign: its messages
	// not yet handed to the provider end failed with ErrorCodeCanceled. A
	// canceled campaign is returned as it is; a completed one is
	// ECampaignNotCancelable.
	CancelCampaign(ctx context.Context, o Origin, brandID, id int64) (*Campaign, error)
	// UpdateCampaign changes the members of a scheduled campaign that in
	// sets, by the rules of CreateCampaign; send_at left out stays, null
	// is now. A campaign that has started (or ended) is
	// ECampaignNotEditable; the change and the scheduler's start never
	// both happen (issue #32).
	UpdateCampaign(ctx context.Context, o Origin, brandID, id int64, in CampaignCreate) (*Campaign, error)
	// TestCampaign sends the campaign's body, its placeholders filled in,
	// and media to one number, as a TRANSACTIONAL message outside the
	// campaign (no campaign_id, not in its stats; issue #32).
	// EInvalidPhoneNumber, EValidation.
	TestCampaign(ctx context.Context, o Origin, brandID, id int64, in CampaignTest) (*Message, error)
}

// CampaignTest is the body of POST /campaigns/{id}/test: the number a
// test of the campaign goes to.
type CampaignTest struct {
	PhoneNumber Optional[string] `json:"phone_number,omitzero"`
}
