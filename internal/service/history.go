package service

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// changes returns the history entries (D18) of what changed between
// before and after: messaging_consent, and each custom data value added,
// changed or removed. A nil before is a new contact: its consent, when
// set, and each custom data value, with old_value null. Source and detail
// are left to the transaction's Origin.
func changes(before, after *parley.User) ([]parley.HistoryEntry, error) {
	var out []parley.HistoryEntry
	var prevConsent *bool
	var prevData json.RawMessage
	if before != nil {
		prevConsent, prevData = before.MessagingConsent, before.CustomData
	}
	if !equalBoolPtr(prevConsent, after.MessagingConsent) {
		out = append(out, parley.HistoryEntry{UserID: after.ID, Field: parley.HistoryFieldConsent,
			OldValue: boolJSON(prevConsent), NewValue: boolJSON(after.MessagingConsent)})
	}
	if bytes.Equal(prevData, after.CustomData) {
		return out, nil
	}
	was, err := dataValues(prevData)
	if err != nil {
		return nil, err
	}
	is, err := dataValues(after.CustomData)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(was)+len(is))
	for k := range was {
		keys = append(keys, k)
	}
	for k := range is {
		if _, ok := was[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if old, now := was[k], is[k]; !bytes.Equal(old, now) {
			out = append(out, parley.HistoryEntry{UserID: after.ID, Field: parley.HistoryFieldCustomData + k, OldValue: old, NewValue: now})
		}
	}
	return out, nil
}

// dataValues splits a custom_data object into its values, compacted so
// that equal values compare equal; JSON null counts as no value.
func dataValues(data json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(data) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	for k, v := range m {
		if string(v) == "null" {
			delete(m, k)
			continue
		}
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, err
		}
		m[k] = b.Bytes()
	}
	return m, nil
}

func boolJSON(b *bool) json.RawMessage {
	switch {
	case b == nil:
		return nil
	case *b:
		return json.RawMessage("true")
	default:
		return json.RawMessage("false")
	}
}

// recordChanges writes the history of a contact's change in its
// transaction and, when its consent became true or false, emits
// user.subscribed or user.unsubscribed (D11, D18).
func (s *Service) recordChanges(ctx context.Context, tx *store.Tx, before, after *parley.User) error {
	entries, err := changes(before, after)
	if err != nil || len(entries) == 0 {
		return err
	}
	if err := tx.InsertHistory(ctx, after.BrandID, entries); err != nil {
		return err
	}
	if entries[0].Field != parley.HistoryFieldConsent || after.MessagingConsent == nil {
		return nil
	}
	var prev *bool
	if before != nil {
		prev = before.MessagingConsent
	}
	if err := s.consentChanged(ctx, tx, after.BrandID, after.ID, prev, after.MessagingConsent, ""); err != nil {
		return err
	}
	return s.emit(ctx, tx, after.BrandID, consentEvent(*after.MessagingConsent), after)
}

func consentEvent(subscribed bool) string {
	if subscribed {
		return parley.EventUserSubscribed
	}
	return parley.EventUserUnsubscribed
}

// UserHistory implements parley.HistoryService.
func (s *Service) UserHistory(ctx context.Context, brandID, userID int64, f parley.HistoryFilter) ([]*parley.HistoryEntry, string, error) {
	limit, after, err := pageArgs(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	if f.Field != "" && f.Field != parley.HistoryFieldConsent &&
		(!strings.HasPrefix(f.Field, parley.HistoryFieldCustomData) || len(f.Field) == len(parley.HistoryFieldCustomData)) {
		return nil, "", invalid("field", "must be messaging_consent or custom_data.<key>")
	}
	if _, err := s.FindUserByID(ctx, brandID, userID); err != nil {
		return nil, "", err
	}
	entries, err := s.db.ListHistory(ctx, brandID, userID, f.Field, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(entries) > limit {
		entries = entries[:limit]
		next = encodeCursor(entries[len(entries)-1].ID)
	}
	return entries, next, nil
}
