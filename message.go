package parley

import "context"

// Message directions.
const (
	DirectionInbound  = "inbound"
	DirectionOutbound = "outbound"
)

// Message statuses (D8). Transitions only move forward:
// queued → sent → delivered | undelivered, and queued | sent → failed.
const (
	StatusQueued      = "queued"
	StatusSent        = "sent"
	StatusDelivered   = "delivered"
	StatusFailed      = "failed"
	StatusUndelivered = "undelivered"
)

// Message types (D8).
const (
	TypeConversational = "CONVERSATIONAL"
	TypeMarketing      = "MARKETING"
	TypeTransactional  = "TRANSACTIONAL"
)

// Message limits (D8).
const (
	MaxMessageBody = 1600
	MaxMediaItems  = 10
)

// Message is an SMS/MMS to or from a user.
type Message struct {
	ID             int64    `json:"id"`
	BrandID        int64    `json:"-"`
	UserID         int64    `json:"user_id"`
	Direction      string   `json:"direction"`
	Status         string   `json:"status"`
	DateCreated    Time     `json:"date_created"`
	Body           string   `json:"body"`
	MediaItemUUIDs []string `json:"media_item_uuids"`
	Type           string   `json:"type"`
	DateSent       *Time    `json:"date_sent"`
	DateDelivered  *Time    `json:"date_delivered"`
	ErrorCode      *string  `json:"error_code"`
	ErrorMessage   *string  `json:"error_message"`
	// Encoding (GSM-7 or UCS-2) and NumSegments (the parts an SMS is
	// billed as; 1 with media) are how the body goes on the air (D16).
	Encoding    string `json:"encoding"`
	NumSegments int    `json:"num_segments"`
	// CampaignID is the campaign that sent the message, nil outside
	// campaigns (D16).
	CampaignID *int64 `json:"campaign_id"`
	// FlowID is the flow that sent the message, nil outside flows (D21).
	FlowID *int64 `json:"flow_id"`
	// ScheduledAt is when a MARKETING message held outside the recipient's
	// sending window will go (D17); nil unless it was held.
	ScheduledAt *Time `json:"scheduled_at"`
	// BodyTruncated is true when an inbound text was longer than
	// MaxMessageBody characters and Body holds its beginning (#31).
	BodyTruncated bool `json:"body_truncated"`
	// AutoReply is the keyword (stop, start or help) an outbound message
	// answered automatically (D12, issue #32); "" for every other message.
	// In GET /messages such an answer is an outbound CONVERSATIONAL message.
	AutoReply string `json:"-"`
}

// MessageCreate is the body of POST /messages.
type MessageCreate struct {
	UserID         Optional[int64]    `json:"user_id,omitzero"`
	Body           Optional[string]   `json:"body,omitzero"`
	MediaItemUUIDs Optional[[]string] `json:"media_item_uuids,omitzero"`
	Type           Optional[string]   `json:"type,omitzero"`
}

// SimulatedInbound is a text from a phone to a brand's number, made up
// for the sim provider (D12): From in E.164, a non-empty Body.
type SimulatedInbound struct {
	From Optional[string] `json:"from,omitzero"`
	Body Optional[string] `json:"body,omitzero"`
}

// Simulator delivers made-up inbound texts; only the sim provider has one.
type Simulator interface {
	// SimulateInbound handles in as a carrier's inbound callback to the
	// brand's number is handled (the same storage, keywords and events),
	// and returns the stored message and the reply sent back to the phone
	// ("" for none). EValidation, EInvalidPhoneNumber.
	SimulateInbound(ctx context.Context, o Origin, brandID int64, in SimulatedInbound) (*Message, string, error)
}

// MessageFilter selects a page of messages, newest first.
type MessageFilter struct {
	UserID int64  // 0: every user
	Limit  int    // 1–100
	Cursor string // opaque; "" for the first page

	// CampaignID keeps only the campaign's messages (D16); 0: any.
	CampaignID int64
}

// MessageService sends and reads a brand's messages.
type MessageService interface {
	// SendMessage stores the message as queued and enqueues its delivery in
	// the same transaction. EValidation, EUserNotFound, EInvalidMediaItem.
	SendMessage(ctx context.Context, o Origin, brandID int64, in MessageCreate) (*Message, error)
	// FindMessageByID returns ENotFound for a missing message.
	FindMessageByID(ctx context.Context, brandID, id int64) (*Message, error)
	// ListMessages returns one page and the cursor of the next ("" at the end).
	ListMessages(ctx context.Context, brandID int64, f MessageFilter) ([]*Message, string, error)
}

// statusFrom lists, for each status a message can move to, the statuses it
// may move from. Transitions only go forward (D8): a late "sent" after
// "delivered" changes nothing.
var statusFrom = map[string][]string{
	StatusSent:        {StatusQueued},
	StatusDelivered:   {StatusQueued, StatusSent},
	StatusUndelivered: {StatusQueued, StatusSent},
	StatusFailed:      {StatusQueued, StatusSent},
}

// StatusFrom returns the statuses a message may be in to move to status;
// none for queued (nothing moves back to it) or an unknown status.
func StatusFrom(status string) []string { return statusFrom[status] }
