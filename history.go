package parley

import (
	"context"
	"encoding/json"
)

// HistoryEntry is one change of a contact's messaging_consent or of one of
// its custom data values (D18). Values are JSON as the API shows the
// member: booleans as booleans, numbers as numbers, null when unset.
type HistoryEntry struct {
	ID     int64  `json:"id"`
	UserID int64  `json:"-"`
	Field  string `json:"field"` // "messaging_consent" or "custom_data.<key>"
	// OldValue and NewValue are nil for null.
	OldValue   json.RawMessage `json:"old_value"`
	NewValue   json.RawMessage `json:"new_value"`
	Source     string          `json:"source"` // one of the Source constants
	Detail     string          `json:"detail"` // the keyword, error code, import id or operator email
	MessageID  *int64          `json:"message_id"`
	OccurredAt Time            `json:"occurred_at"`
}

// HistoryFieldConsent is the field of a consent change; a custom data
// value's is HistoryFieldCustomData followed by its key.
const (
	HistoryFieldConsent    = "messaging_consent"
	HistoryFieldCustomData = "custom_data."
)

// HistoryFilter selects a page of a contact's history.
type HistoryFilter struct {
	Field  string // "" for every field
	Limit  int    // 1–100; 0 for the default
	Cursor string // opaque; "" for the first page
}

// HistoryService reads contact history.
type HistoryService interface {
	// UserHistory returns a page of the user's history, oldest first, and
	// the cursor of the next page ("" after the last). A deleted user, or
	// another brand's, answers EUserNotFound.
	UserHistory(ctx context.Context, brandID, userID int64, f HistoryFilter) ([]*HistoryEntry, string, error)
}
