package service

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

// The scans of flow triggers that nothing a contact does causes (D21):
// segment_entered, checked at least every 60 s, and date, each year at a
// local time. A worker node scans every flowScanEvery; a flow is scanned
// by one node at a time (store.ClaimFlowScan).

// flowScanEvery is how often the scans run: D21 asks for a segment's new
// members within 60 s.
const flowScanEvery = 30 * time.Second

// RunFlowScans scans the segment and date triggers until ctx ends.
func (s *Service) RunFlowScans(ctx context.Context) {
	t := time.NewTicker(flowScanEvery)
	defer t.Stop()
	for {
		if err := s.ScanFlowTriggers(ctx); err != nil && ctx.Err() == nil {
			s.logger.Error("flows: scanning triggers", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ScanFlowTriggers runs one scan of every active segment_entered and date
// flow whose last scan is due.
func (s *Service) ScanFlowTriggers(ctx context.Context) error {
	due := s.db.Now().Add(-flowScanEvery / 2)
	segFlows, err := s.db.FlowsToScan(ctx, parley.TriggerSegmentEntered, due)
	if err != nil {
		return err
	}
	for _, f := range segFlows {
		if err := s.scanSegmentFlow(ctx, f); err != nil {
			return err
		}
	}
	dateFlows, err := s.db.FlowsToScan(ctx, parley.TriggerDate, due)
	if err != nil {
		return err
	}
	for _, f := range dateFlows {
		if err := s.scanDateFlow(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// scanSegmentFlow enters the contacts that started matching the flow's
// segment since its last scan; the first scan after the flow became
// active only records the members (D21: they do not enter).
//
// The members come from the audience engine, evaluated before the
// transaction (it does not hold the writer meanwhile), and are checked
// again in it (store.Tx.SegmentEntrantsByID); SQL evaluates them in the
// transaction while the brand loads.
func (s *Service) scanSegmentFlow(ctx context.Context, f store.ScanFlow) error {
	members, err := s.aud.MemberIDs(ctx, f.BrandID, store.Audience{SegmentID: f.Trigger.SegmentID})
	fromEngine := err == nil
	if err != nil && !errors.Is(err, audience.ErrNotLoaded) && parley.ErrorCode(err) != parley.EValidation {
		return err
	}
	return s.db.WithTx(ctx, func(tx *store.Tx) error {
		if ok, err := tx.ClaimFlowScan(ctx, f); err != nil || !ok {
			return err
		}
		var ids []int64
		var err error
		if fromEngine {
			ids, err = tx.SegmentEntrantsByID(ctx, f, members)
		} else {
			ids, err = tx.SegmentEntrants(ctx, f)
		}
		if parley.ErrorCode(err) == parley.EValidation {
			// The segment changed past D14's limits: no one can match.
			s.logger.Warn("flows: a segment trigger cannot be evaluated", "flow_id", f.FlowID, "err", err)
			return nil
		}
		if err != nil || f.ScannedAt == nil {
			return err
		}
		return s.enterFlow(ctx, tx, f.FlowEntry, ids, nil)
	})
}

// scanDateFlow enters the contacts whose day came (the DATE field's day
// and month plus offset_days, at the trigger's time in the contact's zone,
// D17) after the last scan, or after the flow became active.
func (s *Service) scanDateFlow(ctx context.Context, f store.ScanFlow) error {
	return s.db.WithTx(ctx, func(tx *store.Tx) error {
		if ok, err := tx.ClaimFlowScan(ctx, f); err != nil || !ok {
			return err
		}
		since := f.ActivatedAt
		if f.ScannedAt != nil {
			since = *f.ScannedAt
		}
		now := tx.Now()
		off := 0
		if f.Trigger.OffsetDays != nil {
			off = *f.Trigger.OffsetDays
		}
		// The field's day is the local day minus the offset; local days
		// are within a day of the UTC day.
		from := now.UTC().AddDate(0, 0, -off-1)
		users, err := tx.DateCandidates(ctx, f.BrandID, f.Trigger.FieldName, from)
		if err != nil {
			return err
		}
		set, err := tx.BrandSettings(ctx, f.BrandID)
		if err != nil {
			return err
		}
		var ids []int64
		for _, u := range users {
			day, ok := dateField(u, f.Trigger.FieldName)
			if !ok {
				continue
			}
			if at, ok := dateOccurrence(day, off, f.Trigger.Time, userZone(u, set), since, now); ok && at.After(since) {
				ids = append(ids, u.ID)
			}
		}
		return s.enterFlow(ctx, tx, f.FlowEntry, ids, nil)
	})
}

// dateField reads a contact's DATE field (a contact field or custom data)
// as a calendar day.
func dateField(u *parley.User, name string) (time.Time, bool) {
	switch name {
	case "date_of_birth":
		if u.DateOfBirth == nil {
			return time.Time{}, false
		}
		return parley.ParseCriterionDate(*u.DateOfBirth)
	case "date_created":
		return u.DateCreated.UTC(), true
	}
	v, ok := customValue(u, name)
	if !ok {
		return time.Time{}, false
	}
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false
	}
	return parley.ParseCriterionDate(s)
}

// dateOccurrence returns the occurrence of day's anniversary plus off days
// at hh:mm in loc that falls in (since, now], if one does.
func dateOccurrence(day time.Time, off int, hhmm string, loc *time.Location, since, now time.Time) (time.Time, bool) {
	local := now.In(loc)
	for _, y := range []int{local.Year() - 1, local.Year(), local.Year() + 1} {
		d := time.Date(y, day.Month(), day.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, off)
		at := nextClock(time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, loc), loc, hhmm)
		if at.After(since) && !at.After(now) {
			return at, true
		}
	}
	return time.Time{}, false
}

// customValue reads one custom_data value of the contact.
func customValue(u *parley.User, key string) (any, bool) {
	var data map[string]any
	if len(u.CustomData) == 0 || json.Unmarshal(u.CustomData, &data) != nil {
		return nil, false
	}
	v, ok := data[key]
	return v, ok && v != nil
}
