// Package delivery is the boundary between Parley and SMS providers: the
// Provider interface that sends, and the updates and inbound messages that
// providers report back. Implementations live in sim/ and twilio/.
package delivery

import (
	"context"
	"errors"
	"time"
)

// Message is what a provider needs to send one SMS/MMS.
type Message struct {
	// ID is Parley's message id. Providers that support idempotency use it
	// as the key, so a retried send cannot reach the recipient twice.
	ID        int64
	BrandID   int64
	From      string // the brand's E.164 number
	To        string // the recipient's E.164 number
	Body      string
	MediaURLs []string // signed, expiring links to GET /media/{id}
}

// Receipt is a provider's acceptance of a message.
type Receipt struct {
	// ProviderID is the provider's id for the message (Twilio's SID); status
	// updates refer to it.
	ProviderID string
}

// Error is a provider's refusal to send. Temporary errors (timeouts, 5xx,
// 429) are retried with backoff; permanent ones fail the message at once.
type Error struct {
	Code      string // the provider's error code, e.g. "21211" or "invalid_number"
	Message   string
	Temporary bool
	// Unsubscribed: the carrier reports that the recipient opted out (Twilio
	// 21610). The message fails with recipient_unsubscribed and the user's
	// consent becomes false.
	Unsubscribed bool
}

func (e *Error) Error() string { return "provider error " + e.Code + ": " + e.Message }

// Provider sends messages.
type Provider interface {
	// Name identifies the provider in logs and metrics ("sim", "twilio").
	Name() string
	// Send hands one message to the provider. It returns *Error when the
	// provider refuses; any other error is treated as temporary.
	Send(ctx context.Context, m Message) (Receipt, error)
}

// StatusUpdate is a provider's later report on a message it accepted.
type StatusUpdate struct {
	ProviderID string
	// MessageID is Parley's id of the message when the provider echoes it
	// back. A report can overtake the recording of ProviderID after Send
	// returns; with MessageID it still finds its message.
	MessageID    int64
	Status       string // parley.StatusSent, StatusDelivered, StatusUndelivered or StatusFailed
	ErrorCode    string
	ErrorMessage string
	// Unsubscribed: see Error.Unsubscribed.
	Unsubscribed bool
	At           time.Time
}

// Inbound is a message from a phone to a brand's number.
type Inbound struct {
	ProviderID string
	From       string // E.164
	To         string // the brand's number, E.164
	Body       string
	MediaURLs  []string
	At         time.Time
}

// ErrNotYet is returned by Sink.ApplyStatus for a report about a message
// whose send is still being recorded: the provider should report it again
// a little later.
var ErrNotYet = errors.New("delivery: the message's send is still being recorded; report again later")

// Sink receives what providers report. Parley's service implements it.
type Sink interface {
	// ApplyStatus records a status update. Unknown provider ids are ignored
	// (with a log line); a repeated or out-of-order update changes nothing.
	ApplyStatus(ctx context.Context, u StatusUpdate) error
	// ReceiveInbound stores an inbound message and returns the reply to send
	// back ("" for none): the confirmation of STOP/START, or the HELP text.
	ReceiveInbound(ctx context.Context, in Inbound) (reply string, err error)
}

// Result is a provider's answer about one message of a batch: a receipt,
// or an error as Send returns it.
type Result struct {
	Receipt Receipt
	Err     error
}

// BatchSender is implemented by providers that take many messages in one
// call (campaigns, D16). SendBatch returns one Result per message, in
// order; like Send, it is safe to repeat for an idempotent provider.
type BatchSender interface {
	SendBatch(ctx context.Context, ms []Message) []Result
}

// BatchSink is implemented by sinks that record many status updates in
// one transaction. ApplyStatuses has the semantics of ApplyStatus for each
// update: the error at index i is nil (recorded, or ignored as ApplyStatus
// ignores it) or ErrNotYet (report it again later). A non-nil second
// result means none was recorded. The caller must record that it
// reported them with a durable write of its own after the call returns
// (the simulator marks its ledger): the sink may commit without waiting
// for the disk, and a crash before that write makes the caller report
// them again, which changes nothing twice.
type BatchSink interface {
	ApplyStatuses(ctx context.Context, us []StatusUpdate) ([]error, error)
}
