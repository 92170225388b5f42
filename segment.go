package parley

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Segment types (spec "Segment"; D14).
const (
	SegmentStandard    = "STANDARD"      // evaluated at each use
	SegmentPointInTime = "POINT IN TIME" // members frozen when created
)

// SourceUserDefined is the source of segments made through the API (D15).
const SourceUserDefined = "USER_DEFINED"

// Limits on a segment's text members.
const (
	MaxSegmentName        = 100
	MaxSegmentDescription = 500
)

// SegmentCreate is the body of POST /segments (D15). Absent members take
// their defaults: type STANDARD, no criteria (every contact), "", 0, false.
type SegmentCreate struct {
	Name        Optional[string]   `json:"name,omitzero"`
	Description Optional[string]   `json:"description,omitzero"`
	Type        Optional[string]   `json:"type,omitzero"`
	Criteria    Optional[Criteria] `json:"criteria,omitzero"`
	ColorID     Optional[int64]    `json:"color_id,omitzero"`
	IsPinned    Optional[bool]     `json:"is_pinned,omitzero"`
}

// SegmentUpdate is the body of POST /segments/{id}: only members sent
// change (D4). Sending criteria to a POINT IN TIME segment freezes its
// members again.
type SegmentUpdate SegmentCreate

// SegmentPreviewRequest is the body of POST /segments/preview (D15).
type SegmentPreviewRequest struct {
	Criteria Optional[Criteria] `json:"criteria,omitzero"`
}

// SegmentService manages and evaluates a brand's segments (D14, D15).
// Lookups of an id of none or another brand's return ESegmentNotFound;
// bad input returns EValidation naming the member (criteria[2].operator_type).
type SegmentService interface {
	// CreateSegment validates seg and stores it for the brand; a POINT IN
	// TIME segment's members are frozen in the same transaction. A name
	// the brand already uses, archived segments included, is EDuplicate.
	CreateSegment(ctx context.Context, o Origin, brandID int64, seg *Segment) (*Segment, error)
	FindSegment(ctx context.Context, brandID, id int64) (*Segment, error)
	UpdateSegment(ctx context.Context, o Origin, brandID, id int64, in SegmentUpdate) (*Segment, error)
	// ArchiveSegment archives the segment and returns it.
	ArchiveSegment(ctx context.Context, o Origin, brandID, id int64) (*Segment, error)
	CountSegment(ctx context.Context, brandID, id int64) (*SegmentCount, error)
	// SegmentUsers returns a page of the members by id and the next cursor.
	SegmentUsers(ctx context.Context, brandID, id int64, limit int, cursor string) ([]*User, string, error)
	PreviewSegment(ctx context.Context, brandID int64, criteria []SegmentCriterion) (*SegmentPreview, error)
}

// Criteria are a segment's criteria. Decoding them names the criterion of
// a member with the wrong JSON type or an unknown member
// (criteria[1].operator_type: must be an integer), which encoding/json
// alone cannot: its errors carry no array index.
type Criteria []SegmentCriterion

// UnmarshalJSON implements json.Unmarshaler; its errors are EValidation
// *Error values.
func (c *Criteria) UnmarshalJSON(data []byte) error {
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return FieldError(EValidation, "criteria", "must be an array of criteria")
	}
	if items == nil && string(bytes.TrimSpace(data)) == "null" {
		*c = nil
		return nil
	}
	out := make(Criteria, len(items))
	for i, raw := range items {
		at := "criteria[" + strconv.Itoa(i) + "]"
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return FieldError(EValidation, at, "must be an object")
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			return decodeError(at, "a criterion object", err)
		}
	}
	*c = out
	return nil
}

// MarshalJSON implements json.Marshaler: no criteria encode as [], never
// null (D10).
func (c Criteria) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]SegmentCriterion(c))
}

// decodeError names the member of a decoding error below at; what is what
// the value at at must be, for errors that name no member.
func decodeError(at, what string, err error) error {
	var e *Error
	if errors.As(err, &e) { // a nested decoder's (Criteria), already named
		if e.Field != "" && e.Code == EValidation {
			return FieldError(EValidation, at+"."+e.Field, strings.TrimPrefix(e.Message, e.Field+": "))
		}
		return e
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) && typ.Field != "" {
		want := "of another type"
		switch typ.Type.Kind().String() {
		case "string":
			want = "a string"
		case "bool":
			want = "a boolean"
		case "int64", "int":
			want = "an integer"
		case "float64":
			want = "a number"
		case "struct":
			want = "an object"
		}
		return FieldError(EValidation, at+"."+typ.Field, "must be "+want)
	}
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, uerr := strconv.Unquote(rest)
		if uerr != nil {
			name = rest
		}
		return FieldError(EValidation, at+"."+name, "unknown field")
	}
	return FieldError(EValidation, at, "must be "+what)
}

// SegmentCount answers GET /segments/{id}/count (D15).
type SegmentCount struct {
	SegmentID  int64 `json:"segment_id"`
	Count      int64 `json:"count"`
	ComputedAt Time  `json:"computed_at"`
}

// SegmentPreview answers POST /segments/preview (D15): how many users the
// criteria select, and the first of them by id.
type SegmentPreview struct {
	Count  int64   `json:"count"`
	Sample []*User `json:"sample"`
}

// PreviewSampleSize is how many users a preview shows at most (D15).
const PreviewSampleSize = 10

// Criterion dimensions: attribute.dimension_type (D14).
const (
	DimensionContact    = 1 // a contact field (ContactFieldTypes)
	DimensionCustomData = 2 // a custom_data key
	DimensionActivity   = 3 // messaging activity (ActivityFieldTypes)
	DimensionSegment    = 4 // membership of another segment (int_field_value)
)

// Criterion operators: operator_type (D14).
const (
	OpEquals                = 1
	OpNotEquals             = 2
	OpGreaterThan           = 3
	OpGreaterOrEqual        = 4
	OpLessThan              = 5
	OpLessOrEqual           = 6
	OpContains              = 7 // substring; for a LIST: has the item
	OpDoesNotContain        = 8
	OpStartsWith            = 9
	OpIsSet                 = 10
	OpIsNotSet              = 11
	OpInLastDays            = 12 // DATE within the last N days, today included
	OpMoreThanDaysAgo       = 13 // DATE before today − N days
	OpAnniversaryWithinDays = 14 // DATE's month and day within today … today + N
)

// OperatorNames names the operator codes, for messages.
var OperatorNames = map[int64]string{
	OpEquals: "EQUALS", OpNotEquals: "NOT_EQUALS", OpGreaterThan: "GREATER_THAN",
	OpGreaterOrEqual: "GREATER_OR_EQUAL", OpLessThan: "LESS_THAN", OpLessOrEqual: "LESS_OR_EQUAL",
	OpContains: "CONTAINS", OpDoesNotContain: "DOES_NOT_CONTAIN", OpStartsWith: "STARTS_WITH",
	OpIsSet: "IS_SET", OpIsNotSet: "IS_NOT_SET", OpInLastDays: "IN_LAST_DAYS",
	OpMoreThanDaysAgo: "MORE_THAN_DAYS_AGO", OpAnniversaryWithinDays: "ANNIVERSARY_WITHIN_DAYS",
}

// TypeNames names the custom data type codes (D6), for messages.
var TypeNames = map[int64]string{
	CustomInteger: "INTEGER", CustomFloat: "FLOAT", CustomString: "STRING",
	CustomList: "LIST", CustomBoolean: "BOOLEAN", CustomDate: "DATE",
}

// ContactFieldTypes are the contact fields a criterion may test
// (dimension 1) and their types (D14). time_zone is location.time_zone.
var ContactFieldTypes = map[string]int64{
	"first_name": CustomString, "last_name": CustomString, "email_address": CustomString,
	"phone_number": CustomString, "date_of_birth": CustomDate, "messaging_consent": CustomBoolean,
	"postal_code": CustomString, "city": CustomString, "county": CustomString, "state": CustomString,
	"state_code": CustomString, "time_zone": CustomString, "date_created": CustomDate,
}

// ActivityFieldTypes are the messaging activity fields (dimension 3) and
// their types (D14): a contact without such messages has count 0 and no date.
var ActivityFieldTypes = map[string]int64{
	"last_inbound_at": CustomDate, "last_outbound_at": CustomDate, "last_delivered_at": CustomDate,
	"inbound_count": CustomInteger, "outbound_count": CustomInteger,
}

// Limits that keep one segment's query a reasonable size.
const (
	MaxCriteria = 50 // criteria of one segment
	// MaxExpandedCriteria bounds the criteria of a segment together with
	// those of the segments it names (dimension 4), which its query inlines.
	MaxExpandedCriteria = 200
	// MaxCriterionText bounds a str_field_value in characters (D14): a
	// CONTAINS of a long text over every contact costs seconds.
	MaxCriterionText = 1024
	// MaxDays bounds N of IN_LAST_DAYS, MORE_THAN_DAYS_AGO and
	// ANNIVERSARY_WITHIN_DAYS (about 270 years).
	MaxDays = 100000
)

// opFits reports whether operator op applies to values of type typ (D14):
// 1, 2, 10, 11 fit every type; 3–6 INTEGER, FLOAT and DATE; 7–9 STRING
// (7 and 8 also LIST); 12–14 DATE.
func opFits(op, typ int64) bool {
	switch op {
	case OpEquals, OpNotEquals, OpIsSet, OpIsNotSet:
		return true
	case OpGreaterThan, OpGreaterOrEqual, OpLessThan, OpLessOrEqual:
		return typ == CustomInteger || typ == CustomFloat || typ == CustomDate
	case OpContains, OpDoesNotContain:
		return typ == CustomString || typ == CustomList
	case OpStartsWith:
		return typ == CustomString
	case OpInLastDays, OpMoreThanDaysAgo, OpAnniversaryWithinDays:
		return typ == CustomDate
	}
	return false
}

// CriteriaScope is what criteria are checked against: the brand's
// configuration at the time of the check.
type CriteriaScope struct {
	// Fields maps each custom_data key of the brand to its type code.
	Fields map[string]int64
	// Segments holds the brand's segments by id (archived ones too).
	Segments map[int64]*Segment
	// Self is the id of the segment whose criteria these are; 0 for new
	// criteria or a preview.
	Self int64
}

// ValidateCriteria checks criteria against D14 and the brand's fields and
// segments. It returns an EValidation *Error whose field and message name
// the criterion's index (criteria[2].operator_type: GREATER_THAN does not
// fit BOOLEAN), or nil.
func ValidateCriteria(criteria []SegmentCriterion, sc CriteriaScope) error {
	if len(criteria) > MaxCriteria {
		return FieldError(EValidation, "criteria", "at most "+strconv.Itoa(MaxCriteria)+" criteria")
	}
	for i := range criteria {
		if err := validateCriterion(i, &criteria[i], sc); err != nil {
			return err
		}
	}
	// Membership: every segment named, and what it names in turn, must be
	// the brand's, and the chain must not lead back to Self; the criteria
	// of the whole expansion count against MaxExpandedCriteria.
	x := newExpansion(sc)
	total := len(criteria)
	for i, c := range criteria {
		if c.Attribute.DimensionType != DimensionSegment {
			continue
		}
		at := "criteria[" + strconv.Itoa(i) + "].int_field_value"
		n, err := x.segment(*c.IntFieldValue)
		if err != nil {
			return FieldError(EValidation, at, err.Error())
		}
		if total += n; total > MaxExpandedCriteria {
			return FieldError(EValidation, at, overLimit)
		}
	}
	return nil
}

// overLimit is the rule a segment breaks whose expansion passes
// MaxExpandedCriteria (D14).
var overLimit = "with the criteria of the segments named, at every depth, more than " +
	strconv.Itoa(MaxExpandedCriteria) + " criteria in all (D14)"

// ExpandedCriteria counts criteria as D14's limit does: each criterion 1,
// and each membership criterion also the criteria of the segment it
// names, recursively, as often as named (a POINT IN TIME segment counts
// 1). The count stops once it passes MaxExpandedCriteria (it then returns
// MaxExpandedCriteria+1), so a chain that would expand to millions costs
// a few hundred steps. A segment named that is not in sc, a cycle, or a
// named segment whose criteria no longer hold is an error.
func ExpandedCriteria(criteria []SegmentCriterion, sc CriteriaScope) (int, error) {
	return newExpansion(sc).criteria(criteria)
}

// CheckReferrers checks a change of segment id, before → after (the
// brand's segments as stored, and with the change): a segment that names
// id, at any depth, and was within MaxExpandedCriteria before must stay
// within it after (D14). member is the member the change came through
// (criteria, type), for the error.
func CheckReferrers(id int64, before, after CriteriaScope, member string) error {
	before.Self, after.Self = 0, 0 // each referrer is counted from itself
	xb, xa := newExpansion(before), newExpansion(after)
	ids := make([]int64, 0, len(after.Segments))
	for sid := range after.Segments {
		ids = append(ids, sid)
	}
	slices.Sort(ids) // the same error for the same change
	for _, sid := range ids {
		if sid == id || after.Segments[sid].Type == SegmentPointInTime {
			continue
		}
		na, err := xa.segment(sid)
		if err != nil || na <= MaxExpandedCriteria {
			continue // unusable for another reason, or within the limit
		}
		if nb, err := xb.segment(sid); err == nil && nb <= MaxExpandedCriteria {
			return FieldError(EValidation, member, "segment "+strconv.FormatInt(sid, 10)+
				" names this segment and would hold, "+overLimit)
		}
	}
	return nil
}

type ruleError string

func (e ruleError) Error() string { return string(e) }

// expansion counts the criteria that segments expand to (ExpandedCriteria),
// each segment once: memo holds the count of each segment met, capped at
// MaxExpandedCriteria+1; path holds the segments on the way to the current
// one, so meeting one again is a cycle.
type expansion struct {
	sc   CriteriaScope
	memo map[int64]int
	path map[int64]bool
}

func newExpansion(sc CriteriaScope) *expansion {
	x := &expansion{sc: sc, memo: map[int64]int{}, path: map[int64]bool{}}
	if sc.Self != 0 {
		x.path[sc.Self] = true
	}
	return x
}

// segment returns the count of segment id as a membership criterion names
// it: 1 for POINT IN TIME, else its criteria expanded.
func (x *expansion) segment(id int64) (int, error) {
	if x.path[id] {
		return 0, ruleError("segment " + strconv.FormatInt(id, 10) + " leads back to this segment (a cycle)")
	}
	if n, ok := x.memo[id]; ok {
		return n, nil
	}
	seg := x.sc.Segments[id]
	if seg == nil {
		return 0, ruleError("segment " + strconv.FormatInt(id, 10) + " not found")
	}
	if seg.Type == SegmentPointInTime {
		return 1, nil // its frozen members are read, not its criteria
	}
	x.path[id] = true
	defer delete(x.path, id)
	// Its query is inlined into this one, so its criteria must hold today
	// (a field may have been deleted since it was saved).
	for j := range seg.Criteria {
		if err := validateCriterion(j, &seg.Criteria[j], x.sc); err != nil {
			return 0, ruleError("segment " + strconv.FormatInt(id, 10) + ": " + err.(*Error).Message)
		}
	}
	n, err := x.criteria(seg.Criteria)
	if err != nil {
		return 0, err
	}
	x.memo[id] = n
	return n, nil
}

func (x *expansion) criteria(cs []SegmentCriterion) (int, error) {
	n := len(cs)
	for _, c := range cs {
		if n > MaxExpandedCriteria {
			break
		}
		if c.Attribute.DimensionType != DimensionSegment || c.IntFieldValue == nil {
			continue
		}
		m, err := x.segment(*c.IntFieldValue)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return min(n, MaxExpandedCriteria+1), nil
}

func validateCriterion(i int, c *SegmentCriterion, sc CriteriaScope) error {
	at := "criteria[" + strconv.Itoa(i) + "]"
	bad := func(member, rule string) error { return FieldError(EValidation, at+"."+member, rule) }
	a := c.Attribute
	typ := a.FieldType
	switch a.DimensionType {
	case DimensionContact, DimensionCustomData, DimensionActivity:
		var want int64
		var ok bool
		switch a.DimensionType {
		case DimensionContact:
			want, ok = ContactFieldTypes[a.FieldName]
		case DimensionCustomData:
			want, ok = sc.Fields[a.FieldName]
		case DimensionActivity:
			want, ok = ActivityFieldTypes[a.FieldName]
		}
		if !ok {
			return bad("attribute.field_name", strconv.Quote(a.FieldName)+" is not a field of dimension_type "+
				strconv.FormatInt(a.DimensionType, 10))
		}
		if typ != want {
			return bad("attribute.field_type", a.FieldName+" is "+TypeNames[want]+" ("+strconv.FormatInt(want, 10)+")")
		}
		if _, known := OperatorNames[c.OperatorType]; !known {
			return bad("operator_type", "unknown code "+strconv.FormatInt(c.OperatorType, 10))
		}
		if !opFits(c.OperatorType, typ) {
			return bad("operator_type", OperatorNames[c.OperatorType]+" does not fit "+TypeNames[typ])
		}
	case DimensionSegment:
		if typ != 0 && typ != CustomInteger {
			return bad("attribute.field_type", "must be INTEGER (1) for segment membership")
		}
		if c.OperatorType != OpEquals && c.OperatorType != OpNotEquals {
			return bad("operator_type", "segment membership takes EQUALS (1) or NOT_EQUALS (2)")
		}
	default:
		return bad("attribute.dimension_type", "unknown code "+strconv.FormatInt(a.DimensionType, 10))
	}
	return checkValueMember(c, typ, bad)
}

// valueMember names the member that carries a criterion's value: N for
// the day operators and segment ids, else the one its field_type selects.
func valueMember(c *SegmentCriterion, typ int64) string {
	switch {
	case c.OperatorType == OpIsSet || c.OperatorType == OpIsNotSet:
		return ""
	case c.Attribute.DimensionType == DimensionSegment:
		return "int_field_value"
	case c.OperatorType >= OpInLastDays && c.OperatorType <= OpAnniversaryWithinDays:
		return "int_field_value"
	}
	switch typ {
	case CustomInteger:
		return "int_field_value"
	case CustomFloat:
		return "float_field_value"
	case CustomString, CustomList:
		return "str_field_value"
	case CustomBoolean:
		return "bool_field_value"
	}
	return "date_field_value"
}

func checkValueMember(c *SegmentCriterion, typ int64, bad func(member, rule string) error) error {
	want := valueMember(c, typ)
	set := map[string]bool{
		"str_field_value": c.StrFieldValue != nil, "bool_field_value": c.BoolFieldValue != nil,
		"int_field_value": c.IntFieldValue != nil, "float_field_value": c.FloatFieldValue != nil,
		"date_field_value": c.DateFieldValue != nil,
	}
	for _, m := range []string{"str_field_value", "bool_field_value", "int_field_value", "float_field_value", "date_field_value"} {
		if set[m] && m != want {
			if want == "" {
				return bad(m, "must be null with "+OperatorNames[c.OperatorType])
			}
			return bad(m, "must be null; this criterion takes "+want)
		}
	}
	if want == "" {
		return nil
	}
	if !set[want] {
		return bad(want, "required")
	}
	switch {
	case c.Attribute.DimensionType == DimensionSegment:
		if *c.IntFieldValue < 1 {
			return bad(want, "must be a segment id")
		}
	case want == "int_field_value" && c.OperatorType >= OpInLastDays:
		if n := *c.IntFieldValue; n < 0 || n > MaxDays {
			return bad(want, "must be a number of days between 0 and "+strconv.Itoa(MaxDays))
		}
	case want == "str_field_value":
		if n := utf8.RuneCountInString(*c.StrFieldValue); n > MaxCriterionText {
			return bad(want, "at most "+strconv.Itoa(MaxCriterionText)+" characters ("+strconv.Itoa(n)+" given)")
		}
	case want == "float_field_value":
		if f := *c.FloatFieldValue; math.IsNaN(f) || math.IsInf(f, 0) {
			return bad(want, "must be a finite number")
		}
	case want == "date_field_value":
		if _, ok := ParseCriterionDate(*c.DateFieldValue); !ok {
			return bad(want, "must be a date YYYY-MM-DD, year 0001 to 9999")
		}
	}
	return nil
}

// ParseCriterionDate reads a date_field_value: YYYY-MM-DD, a real calendar
// day (D14), as midnight UTC.
func ParseCriterionDate(s string) (time.Time, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	for i, r := range s {
		if i != 4 && i != 7 && (r < '0' || r > '9') {
			return time.Time{}, false
		}
	}
	t, err := time.Parse("2006-01-02", s)
	return t, err == nil && InYearRange(t) // not year 0000 (#31)
}
