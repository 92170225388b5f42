package parley

import (
	"context"
	"encoding/json"
)

// Event types (D11). webhook.test is sent only by POST /webhooks/{id}/test.
const (
	EventUserCreated        = "user.created"
	EventUserUpdated        = "user.updated"
	EventUserDeleted        = "user.deleted"
	EventUserSubscribed     = "user.subscribed"
	EventUserUnsubscribed   = "user.unsubscribed"
	EventMessageQueued      = "message.queued"
	EventMessageSent        = "message.sent"
	EventMessageDelivered   = "message.delivered"
	EventMessageUndelivered = "message.undelivered"
	EventMessageFailed      = "message.failed"
	EventMessageReceived    = "message.received"
	EventWebhookTest        = "webhook.test"
	// D16: a campaign's segment was resolved and its sending began; every
	// message of the campaign was handed to the provider or failed. The
	// data is the Campaign with its stats.
	EventCampaignStarted   = "campaign.started"
	EventCampaignCompleted = "campaign.completed"
	// D21: a contact entered a flow; its run completed. The data is the
	// Run.
	EventFlowEntered   = "flow.entered"
	EventFlowCompleted = "flow.completed"
)

// EventTypes is the catalogue endpoints subscribe to; "*" means all.
var EventTypes = []string{EventUserCreated, EventUserUpdated, EventUserDeleted, EventUserSubscribed,
	EventUserUnsubscribed, EventMessageQueued, EventMessageSent, EventMessageDelivered,
	EventMessageUndelivered, EventMessageFailed, EventMessageReceived, EventCampaignStarted, EventCampaignCompleted,
	EventFlowEntered, EventFlowCompleted}

// MaxWebhooks is how many endpoints a brand may have.
const MaxWebhooks = 10

// Event is what a webhook delivers: the resource as the API returns it.
type Event struct {
	ID        string          `json:"id"` // evt_…
	Type      string          `json:"type"`
	CreatedAt Time            `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// Webhook is an endpoint that receives a brand's events.
type Webhook struct {
	ID              int64    `json:"id"`
	BrandID         int64    `json:"-"`
	URL             string   `json:"url"`
	Description     string   `json:"description"`
	EventTypes      []string `json:"event_types"`
	Disabled        bool     `json:"disabled"`
	DateCreated     Time     `json:"date_created"`
	DateLastUpdated Time     `json:"date_last_updated"`
	// Secret is shown only when created or rotated.
	Secret string `json:"secret,omitempty"`
}

// WebhookCreate is the body of POST /webhooks.
type WebhookCreate struct {
	URL         Optional[string]   `json:"url,omitzero"`
	EventTypes  Optional[[]string] `json:"event_types,omitzero"`
	Description Optional[string]   `json:"description,omitzero"`
}

// WebhookUpdate is the body of POST /webhooks/{id}.
type WebhookUpdate struct {
	URL         Optional[string]   `json:"url,omitzero"`
	EventTypes  Optional[[]string] `json:"event_types,omitzero"`
	Description Optional[string]   `json:"description,omitzero"`
	Disabled    Optional[bool]     `json:"disabled,omitzero"`
}

// WebhookDelivery is one delivery attempt of an event to an endpoint.
type WebhookDelivery struct {
	ID          int64  `json:"id"`
	WebhookID   int64  `json:"webhook_id"`
	EventID     string `json:"event_id"`
	EventType   string `json:"event_type"`
	Attempt     int    `json:"attempt"`
	Status      *int   `json:"status"` // HTTP status; null when none was received
	LatencyMS   int64  `json:"latency_ms"`
	Response    string `json:"response"` // first 1 KiB
	Error       string `json:"error"`
	Outcome     string `json:"outcome"` // delivered, retrying, failed, disabled
	DateCreated Time   `json:"date_created"`
}

// WebhookService manages a brand's endpoints. ENotFound for another
// brand's or a missing endpoint.
type WebhookService interface {
	CreateWebhook(ctx context.Context, o Origin, brandID int64, in WebhookCreate) (*Webhook, error)
	ListWebhooks(ctx context.Context, brandID int64) ([]*Webhook, error)
	FindWebhook(ctx context.Context, brandID, id int64) (*Webhook, error)
	UpdateWebhook(ctx context.Context, o Origin, brandID, id int64, in WebhookUpdate) (*Webhook, error)
	DeleteWebhook(ctx context.Context, o Origin, brandID, id int64) (*Webhook, error)
	RotateWebhookSecret(ctx context.Context, o Origin, brandID, id int64) (*Webhook, error)
	// ListWebhookDeliveries returns attempts, newest first, and the next cursor.
	ListWebhookDeliveries(ctx context.Context, brandID, id int64, limit int, cursor string) ([]*WebhookDelivery, string, error)
	// TestWebhook queues a webhook.test event to the endpoint and returns it.
	TestWebhook(ctx context.Context, o Origin, brandID, id int64) (*Event, error)
	// RetryWebhookDelivery queues the attempt's event to its endpoint again.
	RetryWebhookDelivery(ctx context.Context, o Origin, brandID, id, deliveryID int64) (*WebhookDelivery, error)
}
