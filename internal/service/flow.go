package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Flows (D21): the service checks a flow against the brand's custom
// fields, segments and media, and stores it; flowrun.go runs them.

// flowScopeOf reads what a flow is checked against in tx.
func flowScopeOf(ctx context.Context, tx *store.Tx, brandID int64) (flowScope, error) {
	sc, err := criteriaScope(ctx, tx, brandID, 0)
	return flowScope{criteria: sc}, err
}

// CreateFlow checks in (D21) and stores the flow; bad input is a
// validation_error naming the member, and nothing is stored.
func (s *Service) CreateFlow(ctx context.Context, o parley.Origin, brandID int64, in parley.FlowCreate) (*parley.Flow, error) {
	var f *parley.Flow
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		var err error
		if f, err = checkFlow(ctx, tx, brandID, in); err != nil {
			return err
		}
		if err := tx.InsertFlow(ctx, f); err != nil {
			return err
		}
		tx.Answer(f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// CheckFlow answers what CreateFlow would refuse in, and stores nothing:
// the console's editor checks a flow as it is written (issue #33).
func (s *Service) CheckFlow(ctx context.Context, brandID int64, in parley.FlowCreate) error {
	return s.db.WithTx(ctx, func(tx *store.Tx) error {
		_, err := checkFlow(ctx, tx, brandID, in)
		return err
	})
}

// checkFlow checks a new flow's members against the brand in tx (D21).
func checkFlow(ctx context.Context, tx *store.Tx, brandID int64, in parley.FlowCreate) (*parley.Flow, error) {
	name, err := checkFlowName(in.Name)
	if err != nil {
		return nil, err
	}
	if !in.Trigger.Valid {
		return nil, invalid("trigger", "required")
	}
	if !in.Steps.Valid {
		return nil, invalid("steps", "required")
	}
	reentry, err := checkReentry(in.ReentrySeconds)
	if err != nil {
		return nil, err
	}
	if in.Active.Set && !in.Active.Valid {
		return nil, invalid("active", "must be true or false")
	}
	f := &parley.Flow{BrandID: brandID, Name: name, Active: in.Active.Value, ReentrySeconds: reentry}
	sc, err := flowScopeOf(ctx, tx, brandID)
	if err != nil {
		return nil, err
	}
	if f.Trigger, err = decodeTrigger(in.Trigger.Value, sc); err != nil {
		return nil, err
	}
	if f.Steps, err = decodeSteps(in.Steps.Value, sc); err != nil {
		return nil, err
	}
	if err := checkStepContent(ctx, tx, brandID, f.Trigger, f.Steps); err != nil {
		return nil, err
	}
	return f, nil
}

// checkStepContent checks every send step's media against the brand's
// (D8) and its body's placeholders (D21: {{event.…}} only under an event
// trigger, {{custom.<key>}} only for a custom field of the brand), naming
// the step.
func checkStepContent(ctx context.Context, tx *store.Tx, brandID int64, t parley.FlowTrigger, steps []parley.FlowStep) error {
	for i, st := range steps {
		if st.Type != parley.StepSend {
			continue
		}
		if err := checkMedia(ctx, tx, brandID, st.MediaItemUUIDs); err != nil {
			return under(parley.StepPath(i, ""), err)
		}
		if err := checkPlaceholders(ctx, tx, brandID, parley.StepPath(i, "body"), st.Body, t.Type == parley.TriggerEvent); err != nil {
			return err
		}
	}
	return nil
}

// FindFlow returns a flow of the brand, or flow_not_found.
func (s *Service) FindFlow(ctx context.Context, brandID, id int64) (*parley.Flow, error) {
	f, err := s.db.FindFlow(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.FlowNotFound(id)
	}
	return f, err
}

// ListFlows returns a page of the brand's flows, newest first, and the
// next page's cursor.
func (s *Service) ListFlows(ctx context.Context, brandID int64, f parley.FlowFilter) ([]*parley.Flow, string, error) {
	limit, before, err := pageArgs(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	flows, err := s.db.ListFlows(ctx, brandID, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(flows) > limit {
		flows = flows[:limit]
		next = encodeCursor(flows[limit-1].ID)
	}
	return flows, next, nil
}

// UpdateFlow changes the members sent (D4); new steps are a new version,
// and a contact's run keeps the steps it entered with (D21).
func (s *Service) UpdateFlow(ctx context.Context, o parley.Origin, brandID, id int64, in parley.FlowUpdate) (*parley.Flow, error) {
	var f *parley.Flow
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		var err error
		f, err = tx.FindFlow(ctx, brandID, id)
		if errors.Is(err, store.ErrNotFound) {
			return parley.FlowNotFound(id)
		} else if err != nil {
			return err
		}
		if in.Name.Set {
			if f.Name, err = checkFlowName(in.Name); err != nil {
				return err
			}
		}
		if in.ReentrySeconds.Set {
			if f.ReentrySeconds, err = checkReentry(in.ReentrySeconds); err != nil {
				return err
			}
		}
		activated := false
		if in.Active.Set {
			if !in.Active.Valid {
				return invalid("active", "must be true or false")
			}
			activated = in.Active.Value && !f.Active
			f.Active = in.Active.Value
		}
		var sc flowScope
		if in.Trigger.Set || in.Steps.Set {
			if sc, err = flowScopeOf(ctx, tx, brandID); err != nil {
				return err
			}
		}
		if in.Trigger.Set {
			if !in.Trigger.Valid {
				return invalid("trigger", "required: a flow has one trigger")
			}
			t, err := decodeTrigger(in.Trigger.Value, sc)
			if err != nil {
				return err
			}
			// A new segment means new members: only those who start
			// matching it from now on enter, as on activation (D21).
			if t.Type == parley.TriggerSegmentEntered && t != f.Trigger && f.Active {
				activated = true
			}
			f.Trigger = t
		}
		newSteps := false
		if in.Steps.Set {
			if !in.Steps.Valid {
				return invalid("steps", "must be an array of steps")
			}
			steps, err := decodeSteps(in.Steps.Value, sc)
			if err != nil {
				return err
			}
			newSteps = !sameSteps(steps, f.Steps)
			f.Steps = steps
		}
		// A new trigger may take {{event.…}} away from the steps.
		if in.Steps.Set || in.Trigger.Set {
			if err := checkStepContent(ctx, tx, brandID, f.Trigger, f.Steps); err != nil {
				return err
			}
		}
		if err := tx.UpdateFlow(ctx, f, newSteps, activated); err != nil {
			return err
		}
		// The answer an Idempotency-Key stores is the flow as stored, with
		// the step counts of its current steps (D13, D21).
		stored, err := tx.FindFlow(ctx, brandID, id)
		if err != nil {
			return err
		}
		tx.Answer(stored)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.FindFlow(ctx, brandID, id)
}

// sameSteps reports whether a and b are the same steps (an update that
// sends the steps unchanged makes no new version).
func sameSteps(a, b []parley.FlowStep) bool {
	return slices.EqualFunc(a, b, func(x, y parley.FlowStep) bool {
		xj, _ := x.MarshalJSON()
		yj, _ := y.MarshalJSON()
		return string(xj) == string(yj)
	})
}

// DeleteFlow deletes a flow of the brand; its active runs end canceled
// (D21). It answers the flow as it was last: inactive, with the runs
// canceled in its stats.
func (s *Service) DeleteFlow(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Flow, error) {
	var f *parley.Flow
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		var err error
		if f, err = tx.FindFlow(ctx, brandID, id); errors.Is(err, store.ErrNotFound) {
			return parley.FlowNotFound(id)
		} else if err != nil {
			return err
		}
		n, err := tx.DeleteFlow(ctx, brandID, id)
		if err != nil {
			return err
		}
		f.Active = false
		f.Stats.Active -= n
		f.Stats.Canceled += n
		tx.Answer(f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ListRuns returns a page of a flow's runs by id (GET /flows/{id}/runs)
// and the next page's cursor.
func (s *Service) ListRuns(ctx context.Context, brandID, flowID int64, f parley.RunFilter) ([]*parley.FlowRun, string, error) {
	if _, err := s.FindFlow(ctx, brandID, flowID); err != nil {
		return nil, "", err
	}
	switch f.Status {
	case "", parley.RunActive, parley.RunCompleted, parley.RunExited, parley.RunCanceled:
	default:
		return nil, "", invalid("status", "must be one of active, completed, exited, canceled")
	}
	limit, after, err := pageArgs(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	runs, err := s.db.ListRuns(ctx, store.RunFilter{FlowID: flowID, UserID: f.UserID, Status: f.Status, AfterID: after, Limit: limit + 1})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(runs) > limit {
		runs = runs[:limit]
		next = encodeCursor(runs[limit-1].ID)
	}
	return runs, next, nil
}

// RecordEvent implements parley.FlowService (POST /events, D21).
func (s *Service) RecordEvent(ctx context.Context, o parley.Origin, brandID int64, in parley.EventCreate) (*parley.UserEvent, error) {
	ev, err := checkEvent(in)
	if err != nil {
		return nil, err
	}
	err = s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		if _, err := tx.FindUserByID(ctx, brandID, ev.UserID); errors.Is(err, store.ErrNotFound) {
			return parley.UserNotFound(ev.UserID)
		} else if err != nil {
			return err
		}
		ev.OccurredAt = parley.NewTime(tx.Now())
		if ev.ID, err = tx.InsertUserEvent(ctx, brandID, ev.UserID, ev.Name, ev.Properties); err != nil {
			return err
		}
		if err := s.enterFlows(ctx, tx, brandID, parley.TriggerEvent, ev.Name, []int64{ev.UserID}, ev.Properties); err != nil {
			return err
		}
		tx.Answer(ev)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ev, nil
}

// checkEvent applies D21's rules of an event: a user id, a name of
// [a-z0-9_.]{1,64}, properties a JSON object of at most 8 KiB.
func checkEvent(in parley.EventCreate) (*parley.UserEvent, error) {
	switch {
	case !in.UserID.Valid:
		return nil, invalid("user_id", "required")
	case in.UserID.Value < 1:
		return nil, invalid("user_id", "must be an integer ≥ 1")
	case !in.Name.Valid:
		return nil, invalid("name", "required")
	case !eventName.MatchString(in.Name.Value):
		return nil, invalid("name", "must be 1 to 64 of a-z, 0-9, _ and .")
	}
	ev := &parley.UserEvent{UserID: in.UserID.Value, Name: in.Name.Value, Properties: json.RawMessage("{}")}
	if in.Properties.Valid {
		raw := bytes.TrimSpace(in.Properties.Value)
		var obj map[string]json.RawMessage
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			return nil, invalid("properties", "must be a JSON object")
		}
		if len(raw) > parley.MaxEventProperties {
			return nil, invalid("properties", "at most 8 KiB of JSON")
		}
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return nil, invalid("properties", "must be a JSON object")
		}
		ev.Properties = b.Bytes()
	}
	return ev, nil
}

var _ parley.FlowService = (*Service)(nil)

// CreateDemoFlows gives a new demo brand an inactive "Welcome" flow, to
// show the idea (issue #33): a thank-you when a contact opts in, and a
// second message two days later.
func (s *Service) CreateDemoFlows(ctx context.Context, brandID int64) (*parley.Flow, error) {
	return s.CreateFlow(ctx, parley.Origin{Source: parley.SourceAdmin, Detail: "first run"}, brandID, parley.FlowCreate{
		Name:    parley.Some("Welcome"),
		Trigger: parley.Some(parley.RawMember(`{"type":"subscribed"}`)),
		Steps: parley.Some(parley.RawMember(`[` +
			`{"type":"send","body":"Thanks for joining, {{first_name | \"friend\"}}! Reply STOP to opt out, HELP for help."},` +
			`{"type":"wait","seconds":172800},` +
			`{"type":"send","body":"Here is 10% off your next order: WELCOME10"}]`)),
		Active: parley.Some(false),
	})
}

// UserRuns returns the contact's runs of the brand's flows, newest first
// (the console's contact page, D21).
func (s *Service) UserRuns(ctx context.Context, brandID, userID int64, limit int) ([]*parley.FlowRun, error) {
	return s.db.UserRuns(ctx, brandID, userID, limit)
}
