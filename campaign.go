package parley

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
