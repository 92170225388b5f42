package parley

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
)

// Flow trigger types (D21): what makes a contact enter a flow.
const (
	TriggerSubscribed     = "subscribed"      // messaging_consent becomes true
	TriggerCreated        = "created"         // the contact is created
	TriggerKeyword        = "keyword"         // an inbound text that is exactly the keyword
	TriggerSegmentEntered = "segment_entered" // the contact starts matching a segment
	TriggerEvent          = "event"           // POST /events with the name
	TriggerDate           = "date"            // each year on a DATE field, at a local time
)

// Flow step types (D21).
const (
	StepSend      = "send"
	StepWait      = "wait"
	StepWaitUntil = "wait_until"
	StepBranch    = "branch"
)

// Run statuses (D21).
const (
	RunActive    = "active"
	RunCompleted = "completed"
	RunExited    = "exited"
	RunCanceled  = "canceled"
)

// Limits of a flow (D21).
const (
	MaxFlowName        = 100
	MaxFlowSteps       = 50
	MaxWaitSeconds     = 31_536_000 // a year
	MaxDateOffsetDays  = 365
	MaxEventProperties = 8 << 10 // bytes of an event's properties
)

// Flow messages one contact at a time when something happens to that
// contact (D21).
type Flow struct {
	ID             int64       `json:"id"`
	BrandID        int64       `json:"-"`
	Name           string      `json:"name"`
	Trigger        FlowTrigger `json:"trigger"`
	Steps          []FlowStep  `json:"steps"`
	Active         bool        `json:"active"`
	ReentrySeconds *int64      `json:"reentry_seconds"`
	// Version counts the changes of Steps: a run keeps the steps of the
	// version it entered with.
	Version     int64           `json:"-"`
	DateCreated Time            `json:"date_created"`
	DateUpdated Time            `json:"date_updated"`
	Stats       FlowStats       `json:"stats"`
	StepsStats  []FlowStepStats `json:"steps_stats"`
}

// FlowTrigger is a flow's one trigger; the members beside Type are those of
// its type.
type FlowTrigger struct {
	Type string `json:"type"`
	// Keyword is the word of a keyword trigger.
	Keyword string `json:"keyword,omitempty"`
	// SegmentID is the STANDARD segment of a segment_entered trigger.
	SegmentID int64 `json:"segment_id,omitempty"`
	// Name is the event name of an event trigger.
	Name string `json:"name,omitempty"`
	// FieldName, OffsetDays and Time make a date trigger: the DATE contact
	// or custom field, the days after (or before, negative) it, and the
	// local time of day "HH:MM".
	FieldName  string `json:"field_name,omitempty"`
	OffsetDays *int   `json:"offset_days,omitempty"`
	Time       string `json:"time,omitempty"`
}

// FlowStep is one step of a flow; the members beside Type are those of its
// type (D21), and only those are encoded.
type FlowStep struct {
	Type string
	// send
	Body           string
	MediaItemUUIDs []string
	MessageType    string
	// wait
	Seconds int64
	// wait_until
	Time string
	// branch: If true goes on to the next step; false goes to ElseStep, or
	// ends the run exited when ElseStep is nil.
	If       *FlowCondition
	ElseStep *int
}

// MarshalJSON implements json.Marshaler: the members of the step's type.
func (s FlowStep) MarshalJSON() ([]byte, error) {
	switch s.Type {
	case StepSend:
		media := s.MediaItemUUIDs
		if media == nil {
			media = []string{}
		}
		return json.Marshal(struct {
			Type           string   `json:"type"`
			Body           string   `json:"body"`
			MediaItemUUIDs []string `json:"media_item_uuids"`
			MessageType    string   `json:"message_type"`
		}{s.Type, s.Body, media, s.MessageType})
	case StepWait:
		return json.Marshal(struct {
			Type    string `json:"type"`
			Seconds int64  `json:"seconds"`
		}{s.Type, s.Seconds})
	case StepWaitUntil:
		return json.Marshal(struct {
			Type string `json:"type"`
			Time string `json:"time"`
		}{s.Type, s.Time})
	case StepBranch:
		return json.Marshal(struct {
			Type     string         `json:"type"`
			If       *FlowCondition `json:"if"`
			ElseStep *int           `json:"else_step"`
		}{s.Type, s.If, s.ElseStep})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
	}{s.Type})
}

// FlowCondition is a branch's condition: exactly one member is set.
type FlowCondition struct {
	// Criteria: the contact matches these D14 criteria.
	Criteria *Criteria `json:"criteria,omitempty"`
	// Replied: an inbound text since the contact entered.
	Replied *bool `json:"replied,omitempty"`
	// Event: that event since the contact entered.
	Event *string `json:"event,omitempty"`
}

// FlowStats counts a flow's runs and messages (D21).
type FlowStats struct {
	Entered   int64 `json:"entered"`
	Active    int64 `json:"active"`
	Completed int64 `json:"completed"`
	Exited    int64 `json:"exited"`
	Canceled  int64 `json:"canceled"`
	Sent      int64 `json:"sent"`
}

// FlowStepStats counts what happened at one step (D21): runs that reached
// it, and of a send step the messages sent and the sends skipped (no
// consent, the frequency cap).
type FlowStepStats struct {
	Reached int64 `json:"reached"`
	Sent    int64 `json:"sent"`
	Skipped int64 `json:"skipped"`
}

// FlowRun is one contact's way through a flow (D21).
type FlowRun struct {
	ID         int64   `json:"id"`
	FlowID     int64   `json:"flow_id"`
	UserID     int64   `json:"user_id"`
	Status     string  `json:"status"`
	Step       int     `json:"step"`
	EnteredAt  Time    `json:"entered_at"`
	NextAt     *Time   `json:"next_at"`
	EndedAt    *Time   `json:"ended_at"`
	ExitReason *string `json:"exit_reason"`
}

// FlowCreate is the body of POST /flows (D21). Absent members take their
// defaults: active false, reentry_seconds null (never again).
type FlowCreate struct {
	Name           Optional[string]    `json:"name,omitzero"`
	Trigger        Optional[RawMember] `json:"trigger,omitzero"`
	Steps          Optional[RawMember] `json:"steps,omitzero"`
	Active         Optional[bool]      `json:"active,omitzero"`
	ReentrySeconds Optional[int64]     `json:"reentry_seconds,omitzero"`
}

// FlowUpdate is the body of POST /flows/{id}: only members sent change.
type FlowUpdate FlowCreate

// RawMember is a member kept as sent, for a decoder that names the
// offending member at any depth (steps[2].body), which encoding/json alone
// cannot.
type RawMember json.RawMessage

// MarshalJSON implements json.Marshaler: the member as kept.
func (r RawMember) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *RawMember) UnmarshalJSON(data []byte) error {
	*r = append((*r)[:0], data...)
	return nil
}

// EventCreate is the body of POST /events (D21).
type EventCreate struct {
	UserID     Optional[int64]     `json:"user_id,omitzero"`
	Name       Optional[string]    `json:"name,omitzero"`
	Properties Optional[RawMember] `json:"properties,omitzero"`
}

// DecodeStrict decodes data into v, refusing unknown members: errors are
// EValidation *Error values naming the member below at.
func DecodeStrict(at string, data []byte, v any) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return FieldError(EValidation, at, "must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(at, "an object", err)
	}
	return nil
}

// StepPath names step i's member: steps[2].body.
func StepPath(i int, member string) string {
	p := "steps[" + strconv.Itoa(i) + "]"
	if member != "" {
		p += "." + member
	}
	return p
}

// FlowFilter selects a page of flows, newest first.
type FlowFilter struct {
	Limit  int
	Cursor string
}

// RunFilter selects a page of a flow's runs by id (GET /flows/{id}/runs).
type RunFilter struct {
	UserID int64  // 0: every contact
	Status string // "": every status
	Limit  int
	Cursor string
}

// UserEvent is an event of a contact (POST /events, D21).
type UserEvent struct {
	ID         int64           `json:"id"`
	UserID     int64           `json:"user_id"`
	Name       string          `json:"name"`
	Properties json.RawMessage `json:"properties"`
	OccurredAt Time            `json:"occurred_at"`
}

// FlowService manages a brand's flows and takes its contacts' events
// (D21). Lookups of an id of none or another brand's return EFlowNotFound;
// bad input returns EValidation naming the member (steps[2].body).
type FlowService interface {
	CreateFlow(ctx context.Context, o Origin, brandID int64, in FlowCreate) (*Flow, error)
	FindFlow(ctx context.Context, brandID, id int64) (*Flow, error)
	ListFlows(ctx context.Context, brandID int64, f FlowFilter) ([]*Flow, string, error)
	UpdateFlow(ctx context.Context, o Origin, brandID, id int64, in FlowUpdate) (*Flow, error)
	// DeleteFlow deletes the flow, ends its active runs canceled, and
	// returns it as it was last.
	DeleteFlow(ctx context.Context, o Origin, brandID, id int64) (*Flow, error)
	ListRuns(ctx context.Context, brandID, flowID int64, f RunFilter) ([]*FlowRun, string, error)
	// RecordEvent stores the event and enters the contact into the flows
	// it triggers.
	RecordEvent(ctx context.Context, o Origin, brandID int64, in EventCreate) (*UserEvent, error)
}
