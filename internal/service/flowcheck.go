package service

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
)

// flowScope is what a flow is checked against: the brand's custom fields
// and segments at the time of the check (D21 names D14's rules for
// branches and the segment and date triggers).
type flowScope struct {
	criteria parley.CriteriaScope
}

// MaxReentrySeconds bounds reentry_seconds: ten years.
const MaxReentrySeconds = 10 * parley.MaxWaitSeconds

var (
	eventName = regexp.MustCompile(`^[a-z0-9_.]{1,64}$`)
	clockTime = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	// A keyword is one word, as a contact types it.
	keywordWord = regexp.MustCompile(`^[A-Za-z0-9]{1,32}$`)
)

// checkFlowName returns the trimmed name or a validation error.
func checkFlowName(o parley.Optional[string]) (string, error) {
	name := strings.TrimSpace(o.Value)
	switch {
	case !o.Valid || name == "":
		return "", invalid("name", "required")
	case utf8.RuneCountInString(name) > parley.MaxFlowName:
		return "", invalid("name", "at most "+strconv.Itoa(parley.MaxFlowName)+" characters")
	}
	return name, nil
}

// checkReentry applies reentry_seconds: null (never again) or 0…ten years.
func checkReentry(o parley.Optional[int64]) (*int64, error) {
	if !o.Valid {
		return nil, nil
	}
	if o.Value < 0 || o.Value > MaxReentrySeconds {
		return nil, invalid("reentry_seconds", "must be null (never again) or between 0 and "+
			strconv.FormatInt(MaxReentrySeconds, 10)+" seconds")
	}
	v := o.Value
	return &v, nil
}

// decodeTrigger reads and checks a flow's trigger (D21) against sc.
func decodeTrigger(raw parley.RawMember, sc flowScope) (parley.FlowTrigger, error) {
	var in struct {
		Type       parley.Optional[string] `json:"type,omitzero"`
		Keyword    parley.Optional[string] `json:"keyword,omitzero"`
		SegmentID  parley.Optional[int64]  `json:"segment_id,omitzero"`
		Name       parley.Optional[string] `json:"name,omitzero"`
		FieldName  parley.Optional[string] `json:"field_name,omitzero"`
		OffsetDays parley.Optional[int]    `json:"offset_days,omitzero"`
		Time       parley.Optional[string] `json:"time,omitzero"`
	}
	if err := parley.DecodeStrict("trigger", raw, &in); err != nil {
		return parley.FlowTrigger{}, err
	}
	t := parley.FlowTrigger{Type: in.Type.Value}
	// allowed lists the members besides type that the trigger's type takes.
	var allowed []string
	switch t.Type {
	case parley.TriggerSubscribed, parley.TriggerCreated:
	case parley.TriggerKeyword:
		allowed = []string{"keyword"}
		w := strings.TrimSpace(in.Keyword.Value)
		switch {
		case !in.Keyword.Valid || w == "":
			return t, invalid("trigger.keyword", "required for a keyword trigger")
		case !keywordWord.MatchString(w):
			return t, invalid("trigger.keyword", "must be one word of 1 to 32 letters or digits")
		case keyword(w, stopWords) || keyword(w, startWords) || keyword(w, helpWords):
			return t, invalid("trigger.keyword", strings.ToUpper(w)+" is a keyword Parley answers itself (STOP, START, HELP and their synonyms)")
		}
		t.Keyword = strings.ToUpper(w)
	case parley.TriggerSegmentEntered:
		allowed = []string{"segment_id"}
		if !in.SegmentID.Valid {
			return t, invalid("trigger.segment_id", "required for a segment_entered trigger")
		}
		seg, ok := sc.criteria.Segments[in.SegmentID.Value]
		switch {
		case !ok:
			return t, parley.SegmentNotFound(in.SegmentID.Value)
		case seg.IsArchived:
			return t, invalid("trigger.segment_id", "segment "+strconv.FormatInt(seg.ID, 10)+" is archived")
		case seg.Type != parley.SegmentStandard:
			return t, invalid("trigger.segment_id", "must be a STANDARD segment: the members of a POINT IN TIME segment never change")
		}
		t.SegmentID = seg.ID
	case parley.TriggerEvent:
		allowed = []string{"name"}
		if !eventName.MatchString(in.Name.Value) {
			return t, invalid("trigger.name", "must be 1 to 64 of a-z, 0-9, _ and .")
		}
		t.Name = in.Name.Value
	case parley.TriggerDate:
		allowed = []string{"field_name", "offset_days", "time"}
		f := in.FieldName.Value
		if !isDateField(f, sc) {
			return t, invalid("trigger.field_name", "must name a DATE field: date_of_birth, date_created or a custom field of type DATE")
		}
		t.FieldName = f
		off := 0
		if in.OffsetDays.Valid {
			off = in.OffsetDays.Value
		}
		if off < -parley.MaxDateOffsetDays || off > parley.MaxDateOffsetDays {
			return t, invalid("trigger.offset_days", "must be between -365 and 365")
		}
		t.OffsetDays = &off
		if !clockTime.MatchString(in.Time.Value) {
			return t, invalid("trigger.time", "must be a time of day HH:MM, such as 10:00")
		}
		t.Time = in.Time.Value
	default:
		return t, invalid("trigger.type", "must be one of subscribed, created, keyword, segment_entered, event, date")
	}
	for member, set := range map[string]bool{"keyword": in.Keyword.Set, "segment_id": in.SegmentID.Set,
		"name": in.Name.Set, "field_name": in.FieldName.Set, "offset_days": in.OffsetDays.Set, "time": in.Time.Set} {
		if set && !slices.Contains(allowed, member) {
			return t, invalid("trigger."+member, "not a member of a "+t.Type+" trigger")
		}
	}
	return t, nil
}

// isDateField reports whether name is a DATE contact field a date trigger
// may use, or a custom field of type DATE.
func isDateField(name string, sc flowScope) bool {
	if typ, ok := parley.ContactFieldTypes[name]; ok {
		return typ == parley.CustomDate
	}
	return sc.criteria.Fields[name] == parley.CustomDate
}

// decodeSteps reads and checks a flow's steps (D21) against sc; the
// errors name the member (steps[2].body).
func decodeSteps(raw parley.RawMember, sc flowScope) ([]parley.FlowStep, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		return nil, invalid("steps", "must be an array of steps")
	}
	switch {
	case len(items) == 0:
		return nil, invalid("steps", "at least one step")
	case len(items) > parley.MaxFlowSteps:
		return nil, invalid("steps", "at most "+strconv.Itoa(parley.MaxFlowSteps)+" steps")
	}
	steps := make([]parley.FlowStep, len(items))
	for i, item := range items {
		s, err := decodeStep(i, len(items), item, sc)
		if err != nil {
			return nil, err
		}
		steps[i] = s
	}
	return steps, nil
}

func decodeStep(i, n int, raw json.RawMessage, sc flowScope) (parley.FlowStep, error) {
	var head struct {
		Type string `json:"type"`
	}
	at := parley.StepPath(i, "")
	if err := json.Unmarshal(raw, &head); err != nil {
		return parley.FlowStep{}, invalid(at, "must be a step object with a type")
	}
	s := parley.FlowStep{Type: head.Type}
	switch head.Type {
	case parley.StepSend:
		var in struct {
			Type           string                    `json:"type"`
			Body           parley.Optional[string]   `json:"body,omitzero"`
			MediaItemUUIDs parley.Optional[[]string] `json:"media_item_uuids,omitzero"`
			MessageType    parley.Optional[string]   `json:"message_type,omitzero"`
		}
		if err := parley.DecodeStrict(at, raw, &in); err != nil {
			return s, err
		}
		var m parley.Message
		if err := checkContent(&m, in.Body, in.MediaItemUUIDs); err != nil {
			return s, under(at, err)
		}
		if m.Body == "" && len(m.MediaItemUUIDs) == 0 {
			return s, invalid(parley.StepPath(i, "body"), "required when there are no media items")
		}
		s.Body, s.MediaItemUUIDs = m.Body, m.MediaItemUUIDs
		s.MessageType = parley.TypeMarketing
		if in.MessageType.Set {
			t, ok := oneOf(in.MessageType, campaignTypes)
			if !ok {
				return s, invalid(parley.StepPath(i, "message_type"), "must be one of "+strings.Join(campaignTypes, ", "))
			}
			s.MessageType = t
		}
	case parley.StepWait:
		var in struct {
			Type    string                 `json:"type"`
			Seconds parley.Optional[int64] `json:"seconds,omitzero"`
		}
		if err := parley.DecodeStrict(at, raw, &in); err != nil {
			return s, err
		}
		if !in.Seconds.Valid || in.Seconds.Value < 1 || in.Seconds.Value > parley.MaxWaitSeconds {
			return s, invalid(parley.StepPath(i, "seconds"), "must be between 1 and "+strconv.Itoa(parley.MaxWaitSeconds)+" (a year)")
		}
		s.Seconds = in.Seconds.Value
	case parley.StepWaitUntil:
		var in struct {
			Type string                  `json:"type"`
			Time parley.Optional[string] `json:"time,omitzero"`
		}
		if err := parley.DecodeStrict(at, raw, &in); err != nil {
			return s, err
		}
		if !clockTime.MatchString(in.Time.Value) {
			return s, invalid(parley.StepPath(i, "time"), "must be a time of day HH:MM, such as 09:30")
		}
		s.Time = in.Time.Value
	case parley.StepBranch:
		var in struct {
			Type     string                            `json:"type"`
			If       parley.Optional[parley.RawMember] `json:"if,omitzero"`
			ElseStep parley.Optional[int]              `json:"else_step,omitzero"`
		}
		if err := parley.DecodeStrict(at, raw, &in); err != nil {
			return s, err
		}
		if !in.If.Valid {
			return s, invalid(parley.StepPath(i, "if"), "required: criteria, replied or event")
		}
		cond, err := decodeCondition(parley.StepPath(i, "if"), in.If.Value, sc)
		if err != nil {
			return s, err
		}
		s.If = cond
		if in.ElseStep.Valid {
			k := in.ElseStep.Value
			if k <= i || k >= n {
				return s, invalid(parley.StepPath(i, "else_step"), "must be the index of a later step ("+
					strconv.Itoa(i+1)+" to "+strconv.Itoa(n-1)+"), or null to end the run")
			}
			s.ElseStep = &k
		}
	default:
		return s, invalid(parley.StepPath(i, "type"), "must be one of send, wait, wait_until, branch")
	}
	return s, nil
}

// decodeCondition reads a branch's condition: exactly one of criteria,
// replied (true) and event.
func decodeCondition(at string, raw parley.RawMember, sc flowScope) (*parley.FlowCondition, error) {
	var in struct {
		Criteria parley.Optional[parley.Criteria] `json:"criteria,omitzero"`
		Replied  parley.Optional[bool]            `json:"replied,omitzero"`
		Event    parley.Optional[string]          `json:"event,omitzero"`
	}
	if err := parley.DecodeStrict(at, raw, &in); err != nil {
		return nil, err
	}
	set := 0
	for _, s := range []bool{in.Criteria.Set, in.Replied.Set, in.Event.Set} {
		if s {
			set++
		}
	}
	if set != 1 {
		return nil, invalid(at, "must hold exactly one of criteria, replied and event")
	}
	c := &parley.FlowCondition{}
	switch {
	case in.Criteria.Set:
		if !in.Criteria.Valid {
			return nil, invalid(at+".criteria", "must be an array of criteria")
		}
		crit := in.Criteria.Value
		if err := parley.ValidateCriteria(crit, sc.criteria); err != nil {
			return nil, under(at, err)
		}
		c.Criteria = &crit
	case in.Replied.Set:
		if !in.Replied.Valid || !in.Replied.Value {
			return nil, invalid(at+".replied", "must be true (an inbound text since the contact entered)")
		}
		c.Replied = &in.Replied.Value
	case in.Event.Set:
		if !eventName.MatchString(in.Event.Value) {
			return nil, invalid(at+".event", "must be 1 to 64 of a-z, 0-9, _ and .")
		}
		c.Event = &in.Event.Value
	}
	return c, nil
}

// under moves an error's member below at, keeping its code: body →
// steps[2].body.
func under(at string, err error) error {
	e, ok := err.(*parley.Error)
	if !ok || e.Field == "" {
		return err
	}
	field := at + "." + e.Field
	return parley.FieldError(e.Code, field, strings.TrimPrefix(e.Message, e.Field+": "))
}
