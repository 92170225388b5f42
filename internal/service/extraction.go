package service

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/store"
)

// ExtractionMetrics observes auto-collected custom data (D20).
type ExtractionMetrics interface {
	// Ran counts an extractor call, failed unless ok, and its latency.
	Ran(ok bool, took time.Duration)
	// Skipped counts a job that did not call the extractor.
	Skipped(reason string)
	Written(n int)
	Refused(reason string, n int)
}

// ConversationWindow bounds the messages an extraction reads: the
// triggering inbound text and those before it, newest first. Enough for a
// question and its answers, and a bounded cost per inbound text.
const ConversationWindow = 20

// SetExtraction sets the extractor that fills auto-collected custom data
// (D20) and where its metrics go (nil for none). With no extractor,
// inbound texts queue no extraction.
func (s *Service) SetExtraction(x extract.Extractor, m ExtractionMetrics) {
	s.extractor, s.extractMetrics = x, m
}

var _ jobs.ExtractionRunner = (*Service)(nil)

// queuesExtraction reports whether an inbound text to the brand queues an
// extraction: it is not a keyword (D12) and the brand has an
// auto-collected field. It reads before the inbound message's write
// transaction, so the check holds no write lock.
func (s *Service) queuesExtraction(ctx context.Context, brandID int64, body string) (bool, error) {
	if s.extractor == nil || keyword(body, stopWords) || keyword(body, startWords) || keyword(body, helpWords) {
		return false, nil
	}
	now := time.Now()
	if c, ok := s.autoFields.Load(brandID); ok && now.Before(c.(autoFieldsEntry).until) {
		return c.(autoFieldsEntry).has, nil
	}
	has, err := s.db.HasAutoCollectedFields(ctx, brandID)
	if err != nil {
		return false, err
	}
	s.autoFields.Store(brandID, autoFieldsEntry{has: has, until: now.Add(autoFieldsTTL)})
	return has, nil
}

// autoFieldsTTL is how long a node remembers whether a brand has an
// auto-collected field, sparing each inbound text a read: a field's change
// through another node reaches this one's inbound texts within it (this
// node's own changes at once, forgetAutoFields).
const autoFieldsTTL = 2 * time.Second

type autoFieldsEntry struct {
	has   bool
	until time.Time
}

// forgetAutoFields drops what the node remembers of the brand's fields.
func (s *Service) forgetAutoFields(brandID int64) { s.autoFields.Delete(brandID) }

// extracted is a value that passed D6, with the message it came from.
type extracted struct {
	key       string
	value     json.RawMessage
	messageID int64
	at        time.Time // the message's date
}

// RunExtraction implements jobs.ExtractionRunner (D20, #19): it reads the
// contact's conversation up to the inbound message messageID, asks the
// extractor for the brand's auto-collected fields, checks every value as
// the API would (D6) and writes the kept ones in one transaction, with
// history (source extraction, the message each value came from) and a
// user.updated event. A value set after its message, by anyone, stays. It
// returns an error only when a retry may do better (the extractor could
// not run, the database failed).
func (s *Service) RunExtraction(ctx context.Context, a jobs.ExtractCustomDataArgs, final bool) error {
	if s.extractor == nil {
		return nil
	}
	brandID, userID, messageID := a.BrandID, a.UserID, a.MessageID
	log := s.logger.With("brand_id", brandID, "user_id", userID, "message_id", messageID, "provider_id", a.ProviderID)
	if messageID == 0 {
		m, err := s.db.FindMessageByProviderID(ctx, a.Provider, a.ProviderID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && (m.BrandID != brandID || m.UserID != userID)) {
			log.Warn("extraction: the inbound message is gone")
			return nil
		} else if err != nil {
			return err
		}
		messageID = m.ID
	}
	all, err := s.db.ListCustomFields(ctx, brandID)
	if err != nil {
		return err
	}
	byKey := make(map[string]*parley.CustomField, len(all))
	var req extract.Request
	for _, f := range all {
		key := parley.CustomDataKey(f.FieldName)
		byKey[key] = f
		if f.IsAutoCollected {
			req.Fields = append(req.Fields, extractField(key, f))
		}
	}
	if len(req.Fields) == 0 {
		return nil // the fields changed since the text arrived
	}
	u, err := s.db.FindUserByID(ctx, brandID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted since
	} else if err != nil {
		return err
	}
	set, err := s.db.BrandSettings(ctx, brandID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if optedOut(u) && !set.ExtractWhenOptedOut {
		if s.extractMetrics != nil {
			s.extractMetrics.Skipped("opted_out")
		}
		return nil
	}
	msgs, err := s.db.ListMessages(ctx, brandID, userID, messageID+1, ConversationWindow)
	if err != nil {
		return err
	}
	if len(msgs) == 0 || msgs[0].ID != messageID || msgs[0].Direction != parley.DirectionInbound {
		log.Warn("extraction: the inbound message is gone")
		return nil
	}
	slices.Reverse(msgs) // oldest first, as the extractor reads them
	req.Conversation = make([]extract.Message, len(msgs))
	for i, m := range msgs {
		req.Conversation[i] = extract.Message{Inbound: m.Direction == parley.DirectionInbound, Body: m.Body, At: m.DateCreated.Time}
	}
	req.Known, err = knownValues(u.CustomData, byKey)
	if err != nil {
		return err
	}
	req.Now = s.db.Now().In(brandLocation(set.TimeZone))

	req.BrandID = brandID
	start := time.Now()
	vals, err := s.extractor.Extract(ctx, req)
	if errors.Is(err, extract.ErrOverBudget) {
		// The brand's daily calls are spent: retrying today would not
		// help, so the text is left unread.
		log.Info("extraction: skipped", "reason", "over_budget")
		if s.extractMetrics != nil {
			s.extractMetrics.Skipped("over_budget")
		}
		return nil
	}
	if s.extractMetrics != nil {
		s.extractMetrics.Ran(err == nil, time.Since(start))
	}
	if err != nil {
		if final {
			log.Warn("extraction: the extractor failed; giving up", "error", err.Error())
		}
		return err
	}
	kept, invalid := checkExtracted(vals, byKey, msgs)
	if invalid > 0 {
		log.Info("extraction: values refused", "reason", "invalid", "count", invalid)
		if s.extractMetrics != nil {
			s.extractMetrics.Refused("invalid", invalid)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return s.writeExtracted(ctx, brandID, userID, set, kept, byKey)
}

// writeExtracted writes kept values in one transaction. It reads the user
// again under lock, and the last change of each field: a value changed
// after the message the extracted value came from is newer news and stays
// (D20: never overwrite what an operator or the API set later).
func (s *Service) writeExtracted(ctx context.Context, brandID, userID int64, set *parley.BrandSettings,
	kept []extracted, byKey map[string]*parley.CustomField) error {
	var written, superseded, tooBig int
	// Extractions finishing together share a commit, as API updates do:
	// on SQLite they so take the one writer from inbound texts less often.
	err := s.db.WithGroupTx(ctx, parley.Origin{Source: parley.SourceExtraction}, func(ctx context.Context, tx *store.Tx) error {
		written, superseded, tooBig = 0, 0, 0
		u, err := tx.FindUserForUpdate(ctx, brandID, userID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if optedOut(u) && !set.ExtractWhenOptedOut {
			return nil // opted out while the extractor ran
		}
		names := make([]string, len(kept))
		for i, k := range kept {
			names[i] = parley.HistoryFieldCustomData + k.key
		}
		last, err := tx.LastChanges(ctx, brandID, userID, names)
		if err != nil {
			return err
		}
		upd := make(map[string]json.RawMessage, len(kept))
		from := make(map[string]int64, len(kept))
		for i, k := range kept {
			if t, ok := last[names[i]]; ok && t.After(k.at) {
				superseded++
				continue
			}
			upd[k.key], from[k.key] = k.value, k.messageID
		}
		if len(upd) == 0 {
			return nil
		}
		before := *u
		if u.CustomData, err = mergeCustomData(u.CustomData, upd, byKey); err != nil {
			if _, ok := errors.AsType[*parley.Error](err); ok {
				tooBig = len(upd) // D6's limits of 100 keys and 16 KiB
				return nil
			}
			return err
		}
		if sameUser(&before, u) {
			return nil
		}
		u.DateLastUpdated = parley.Time{Time: tx.Now()}
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		entries, err := changes(&before, u)
		if err != nil {
			return err
		}
		for i := range entries {
			id := from[strings.TrimPrefix(entries[i].Field, parley.HistoryFieldCustomData)]
			entries[i].Source, entries[i].MessageID = parley.SourceExtraction, &id
		}
		if err := tx.InsertHistory(ctx, brandID, entries); err != nil {
			return err
		}
		written = len(entries)
		return s.emit(ctx, tx, brandID, parley.EventUserUpdated, u)
	})
	if err != nil {
		return err
	}
	if s.extractMetrics != nil {
		s.extractMetrics.Written(written)
		s.extractMetrics.Refused("superseded", superseded)
		s.extractMetrics.Refused("invalid", tooBig)
	}
	if superseded > 0 || tooBig > 0 {
		s.logger.Info("extraction: values not written", "brand_id", brandID, "user_id", userID,
			"superseded", superseded, "over_limits", tooBig)
	}
	return nil
}

// checkExtracted keeps the values that name an auto-collected field once,
// come from one of the contact's own messages and pass D6 exactly as an
// API update would (parseCustomData); it counts the others. msgs is the
// conversation, oldest first.
func checkExtracted(vals []extract.Value, byKey map[string]*parley.CustomField, msgs []*parley.Message) ([]extracted, int) {
	var kept []extracted
	invalid := 0
	seen := make(map[string]bool, len(vals))
	for _, v := range vals {
		f := byKey[v.Key]
		if f == nil || !f.IsAutoCollected || seen[v.Key] || v.From < 0 || v.From >= len(msgs) ||
			msgs[v.From].Direction != parley.DirectionInbound {
			invalid++
			continue
		}
		raw, err := json.Marshal(map[string]json.RawMessage{v.Key: v.Value})
		if err != nil { // not JSON at all
			invalid++
			continue
		}
		out, err := parseCustomData(raw, map[string]*parley.CustomField{v.Key: f})
		if err != nil || out[v.Key] == nil { // D6 refuses it, or it is null
			invalid++
			continue
		}
		seen[v.Key] = true
		m := msgs[v.From]
		kept = append(kept, extracted{key: v.Key, value: out[v.Key], messageID: m.ID, at: m.DateCreated.Time})
	}
	return kept, invalid
}

// extractField describes a field to the extractor.
func extractField(key string, f *parley.CustomField) extract.Field {
	return extract.Field{Key: key, Name: f.FieldName, Type: f.CustomDataType, Subtype: f.Subtype,
		Enum: f.AvailableEnumValues, Prompt: f.ExtractionPrompt, IncludeUserAnswers: f.IncludeUserAnswers,
		EmphasizeCurrent: f.IsEmphasizeCurrent, EmphasizePersonal: f.IsEmphasizePersonal}
}

// knownValues returns the contact's current values of the fields with
// include_in_ai_prompt, and of no other field (D20).
func knownValues(data json.RawMessage, byKey map[string]*parley.CustomField) (map[string]json.RawMessage, error) {
	vals, err := dataValues(data)
	if err != nil {
		return nil, err
	}
	known := map[string]json.RawMessage{}
	for k, v := range vals {
		if f := byKey[k]; f != nil && f.IncludeInAIPrompt {
			known[k] = v
		}
	}
	return known, nil
}

func optedOut(u *parley.User) bool { return u.MessagingConsent != nil && !*u.MessagingConsent }

// brandLocation is the brand's time zone (D17); UTC if it cannot load,
// which settings checked when saved make unlikely.
func brandLocation(name string) *time.Location {
	if loc, err := time.LoadLocation(name); err == nil {
		return loc
	}
	return time.UTC
}
