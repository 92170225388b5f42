package service

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// The triggers of flows (D21) that happen to a contact inside the
// transaction that changes it: created, subscribed, keyword, event. The
// contact enters in that transaction, so an entry is never lost nor made
// twice; the runner is woken once it commits.

// flowCache holds a transaction's reads of the brand's active flows by
// trigger, so the contacts of one transaction (an import's batch) read
// them once. It has nothing to flush.
type flowCache map[flowTriggerKey][]store.FlowEntry

type flowTriggerKey struct {
	brandID  int64
	typ, key string
}

type flowCacheKey struct{}

func (flowCache) Flush(context.Context, *store.Tx) error { return nil }

// enterFlows enters the contacts into the brand's active flows whose
// trigger is typ and key, and emits flow.entered for each run started.
// The contacts of one call enter each flow in one statement per chunk.
func (s *Service) enterFlows(ctx context.Context, tx *store.Tx, brandID int64, typ, key string, userIDs []int64, event json.RawMessage) error {
	if len(userIDs) == 0 {
		return nil
	}
	cache := tx.Batch(flowCacheKey{}, func() store.Flusher { return flowCache{} }).(flowCache)
	k := flowTriggerKey{brandID, typ, key}
	flows, ok := cache[k]
	if !ok {
		var err error
		if flows, err = tx.ActiveFlows(ctx, brandID, typ, key); err != nil {
			return err
		}
		cache[k] = flows
	}
	for _, f := range flows {
		if err := s.enterFlow(ctx, tx, f, userIDs, event); err != nil {
			return err
		}
	}
	return nil
}

// enterFlow enters the contacts into one flow, emits flow.entered for
// each run started and wakes the runner once the transaction commits.
func (s *Service) enterFlow(ctx context.Context, tx *store.Tx, f store.FlowEntry, userIDs []int64, event json.RawMessage) error {
	runs, err := tx.EnterFlow(ctx, f, userIDs, event)
	if err != nil || len(runs) == 0 {
		return err
	}
	hooks, err := s.hooksFor(ctx, tx, f.BrandID, parley.EventFlowEntered)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if err := s.emitTo(ctx, tx, f.BrandID, parley.EventFlowEntered, hooks, run); err != nil {
			return err
		}
	}
	tx.AfterCommit(s.wakeFlows)
	return nil
}

// consentChanged applies a change of the contact's messaging_consent to
// flows (D21): becoming true, from any source, is the subscribed trigger;
// becoming false ends the contact's runs exited (STOP, or any other
// opt-out: a contact who withdrew consent is not followed up).
func (s *Service) consentChanged(ctx context.Context, tx *store.Tx, brandID, userID int64, prev, now *bool, source string) error {
	switch {
	case now == nil || (prev != nil && *prev == *now):
		return nil
	case *now:
		return s.enterFlows(ctx, tx, brandID, parley.TriggerSubscribed, "", []int64{userID}, nil)
	}
	reason := ExitOptedOut
	if source == parley.SourceKeyword {
		reason = ExitStop
	}
	_, err := tx.EndUserRuns(ctx, userID, parley.RunExited, reason)
	return err
}

// userCreated is the created trigger (D21).
func (s *Service) userCreated(ctx context.Context, tx *store.Tx, u *parley.User) error {
	return s.enterFlows(ctx, tx, u.BrandID, parley.TriggerCreated, "", []int64{u.ID}, nil)
}

// keywordTrigger is the keyword trigger (D21): an inbound text that is
// exactly a keyword of an active flow, ASCII case ignored, sets the
// contact's consent true (history source keyword) and enters the flows.
func (s *Service) keywordTrigger(ctx context.Context, tx *store.Tx, brandID, userID int64, body string, messageID int64) error {
	w := strings.ToUpper(strings.TrimSpace(body))
	if !keywordWord.MatchString(w) {
		return nil
	}
	flows, err := tx.ActiveFlows(ctx, brandID, parley.TriggerKeyword, w)
	if err != nil || len(flows) == 0 {
		return err
	}
	if err := s.setConsent(ctx, tx, brandID, userID, true, parley.SourceKeyword, w, messageID); err != nil {
		return err
	}
	return s.enterFlows(ctx, tx, brandID, parley.TriggerKeyword, w, []int64{userID}, nil)
}
