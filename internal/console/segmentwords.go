package console

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// The segment builder's words (issue #32, D14): each field a criterion may
// test by its plain name, the conditions that fit its type in words, and a
// criterion or a whole segment as a sentence ("City is Brooklyn and Opted
// in is yes"). The codes stay behind the form: a field is sent as
// "dimension:field_name:field_type", a condition as its D14 operator code,
// or opOneOf for "is one of", which the builder saves as D14 groups.

// valueKind is how a field's values are shown and picked.
type valueKind int

const (
	kindText    valueKind = iota // typed text
	kindNumber                   // a number
	kindDate                     // a calendar day
	kindBool                     // yes or no, from a menu
	kindEnum                     // one of the field's values, from a menu
	kindList                     // a list field of given values: has the item
	kindState                    // a US state, by name or code (state_code)
	kindSegment                  // membership of another segment
)

// opOneOf is the builder's "is one of": D14 has no IN, so it is saved as
// one AND group per value (expandGroups).
const opOneOf = "in"

// segField is one field the builder offers.
type segField struct {
	Key, Label, Group string
	Dim, Type         int64
	Name              string
	Kind              valueKind
	Enum              []string // kindEnum and kindList: the values offered
}

// contactFieldWords are the plain names of the D14 contact fields, in the
// order the builder offers them. "state" (the state's full name) is not
// offered: "State" tests state_code, picked from a menu by name or code,
// so that NY and New York both match (issue #32).
var contactFieldWords = []struct{ name, label string }{
	{"first_name", "First name"}, {"last_name", "Last name"}, {"email_address", "Email"},
	{"phone_number", "Phone number"}, {"messaging_consent", "Opted in"}, {"date_of_birth", "Birthday"},
	{"city", "City"}, {"state_code", "State"}, {"county", "County"}, {"postal_code", "ZIP code"},
	{"time_zone", "Time zone (from the ZIP code)"}, {"date_created", "Date added"},
}

// activityFieldWords are the plain names of the D14 activity fields.
var activityFieldWords = []struct{ name, label string }{
	{"last_inbound_at", "Last message received"}, {"last_outbound_at", "Last message sent"},
	{"last_delivered_at", "Last message delivered"}, {"inbound_count", "Messages received"},
	{"outbound_count", "Messages sent"},
}

// attrKey is the form's value for a field.
func attrKey(dim int64, name string, typ int64) string {
	return strconv.FormatInt(dim, 10) + ":" + name + ":" + strconv.FormatInt(typ, 10)
}

// segmentKey is the form's value for segment membership.
const segmentKey = "4::1"

// fieldSet is the fields the builder offers a brand, by key.
type fieldSet struct {
	List  []segField
	ByKey map[string]segField
	// Segments names the brand's segments by id, for membership.
	Segments map[int64]string
}

// newFieldSet builds the builder's fields from the brand's custom fields
// and segments.
func newFieldSet(custom []*parley.CustomField, segs []*parley.Segment) fieldSet {
	fs := fieldSet{ByKey: map[string]segField{}, Segments: map[int64]string{}}
	add := func(f segField) {
		fs.List = append(fs.List, f)
		fs.ByKey[f.Key] = f
	}
	for _, w := range contactFieldWords {
		typ := parley.ContactFieldTypes[w.name]
		f := segField{Key: attrKey(1, w.name, typ), Label: w.label, Group: "Contact", Dim: 1, Type: typ, Name: w.name, Kind: kindOfType(typ)}
		if w.name == "state_code" {
			f.Kind = kindState
		}
		add(f)
	}
	custom = slices.Clone(custom)
	slices.SortFunc(custom, func(a, b *parley.CustomField) int {
		return strings.Compare(strings.ToLower(a.FieldName), strings.ToLower(b.FieldName))
	})
	for _, c := range custom {
		typ := int64(c.CustomDataType)
		f := segField{Key: attrKey(2, parley.CustomDataKey(c.FieldName), typ), Label: c.FieldName, Group: "Custom fields",
			Dim: 2, Type: typ, Name: parley.CustomDataKey(c.FieldName), Kind: kindOfType(typ)}
		if len(c.AvailableEnumValues) > 0 && typ == parley.CustomString {
			f.Kind, f.Enum = kindEnum, c.AvailableEnumValues
		}
		if typ == parley.CustomList {
			f.Kind, f.Enum = kindList, c.AvailableEnumValues
		}
		add(f)
	}
	for _, w := range activityFieldWords {
		typ := parley.ActivityFieldTypes[w.name]
		add(segField{Key: attrKey(3, w.name, typ), Label: w.label, Group: "Messages", Dim: 3, Type: typ, Name: w.name, Kind: kindOfType(typ)})
	}
	add(segField{Key: segmentKey, Label: "Segment", Group: "Segments", Dim: 4, Type: parley.CustomInteger, Kind: kindSegment})
	// A state's full name, only for criteria saved with it (the API may).
	fs.ByKey[attrKey(1, "state", parley.CustomString)] = segField{Key: attrKey(1, "state", parley.CustomString),
		Label: "State name", Group: "Contact", Dim: 1, Type: parley.CustomString, Name: "state", Kind: kindText}
	for _, s := range segs {
		fs.Segments[s.ID] = s.Name
	}
	return fs
}

func kindOfType(typ int64) valueKind {
	switch typ {
	case parley.CustomInteger, parley.CustomFloat:
		return kindNumber
	case parley.CustomDate:
		return kindDate
	case parley.CustomBoolean:
		return kindBool
	}
	return kindText
}

// opWord is one condition the builder offers: the form's value and its
// words ("is", "is in the last … days").
type opWord struct{ Value, Label string }

// Condition words by D14 operator. Dates read "is before", numbers "is
// less than"; the day counts are the D14 DATE operators.
var (
	opIs     = opWord{"1", "is"}
	opIsNot  = opWord{"2", "is not"}
	opIn     = opWord{opOneOf, "is one of"}
	opSet    = opWord{"10", "is set"}
	opNotSet = opWord{"11", "is not set"}
	kindOps  = map[valueKind][]opWord{
		kindText:  {opIs, opIsNot, opIn, {"7", "contains"}, {"8", "does not contain"}, {"9", "starts with"}, opSet, opNotSet},
		kindEnum:  {opIs, opIsNot, opIn, opSet, opNotSet},
		kindList:  {{"7", "includes"}, {"8", "does not include"}, {opOneOf, "includes any of"}, opSet, opNotSet},
		kindState: {opIs, opIsNot, opIn, opSet, opNotSet},
		kindBool:  {opIs, opSet, opNotSet},
		kindNumber: {opIs, opIsNot, opIn, {"3", "is more than"}, {"4", "is at least"}, {"5", "is less than"},
			{"6", "is at most"}, opSet, opNotSet},
		kindDate: {{"1", "is on"}, {"2", "is not on"}, {"5", "is before"}, {"3", "is after"}, {"6", "is on or before"},
			{"4", "is on or after"}, {"12", "is in the last … days"}, {"13", "is more than … days ago"},
			{"14", "is within the next … days (day and month)"}, opSet, opNotSet},
		kindSegment: {{"1", "is in"}, {"2", "is not in"}},
	}
)

// opsFor are the conditions that fit a field, in words.
func opsFor(f segField) []opWord { return kindOps[f.Kind] }

// opFits reports whether the form's condition fits the field.
func opFits(f segField, op string) bool {
	return slices.ContainsFunc(kindOps[f.Kind], func(w opWord) bool { return w.Value == op })
}

// stateCode reads a state given by code or name, in any case ("ny", "New
// York"), as its code; ok is false for none.
func stateCode(s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, st := range usStates {
		if strings.EqualFold(s, st.Code) || strings.EqualFold(s, st.Name) {
			return st.Code, true
		}
	}
	return "", false
}

// stateName names a state code ("NY" → "New York"); an unknown code as is.
func stateName(code string) string {
	for _, st := range usStates {
		if strings.EqualFold(code, st.Code) {
			return st.Name
		}
	}
	return code
}

// valueWords shows one form value of a field in words: yes/no, a state's
// name, a segment's name, a date as "Jan 2, 2006".
func (fs fieldSet) valueWords(f segField, v string) string {
	switch f.Kind {
	case kindBool:
		if v == "true" {
			return "yes"
		}
		return "no"
	case kindState:
		return stateName(v)
	case kindSegment:
		id, _ := strconv.ParseInt(v, 10, 64)
		if name, ok := fs.Segments[id]; ok {
			return name
		}
		return "a segment that no longer exists"
	case kindDate:
		if t, err := time.Parse(time.DateOnly, v); err == nil {
			return t.Format("Jan 2, 2006")
		}
	}
	return v
}

// sentence shows one builder row in words: "City is Brooklyn", "Birthday
// is within the next 7 days", "Is in segment VIPs".
func (fs fieldSet) sentence(r criterionRow) string {
	f, ok := fs.ByKey[r.Attr]
	if !ok {
		return "a field that no longer exists"
	}
	vals := r.values()
	words := make([]string, len(vals))
	for i, v := range vals {
		words[i] = fs.valueWords(f, v)
	}
	v := strings.Join(words, ", ")
	switch {
	case f.Kind == kindSegment && r.Op == "2":
		return "Is not in segment " + v
	case f.Kind == kindSegment:
		return "Is in segment " + v
	case r.Op == "12":
		return f.Label + " is in the last " + days(v)
	case r.Op == "13":
		return f.Label + " is more than " + days(v) + " ago"
	case r.Op == "14":
		return f.Label + " is within the next " + days(v)
	case r.Op == "10":
		return f.Label + " is set"
	case r.Op == "11":
		return f.Label + " is not set"
	case r.Op == opOneOf:
		if len(words) > 1 {
			v = strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
		}
	}
	for _, w := range opsFor(f) {
		if w.Value == r.Op {
			return f.Label + " " + w.Label + " " + v
		}
	}
	return f.Label + " " + v
}

func days(n string) string {
	if n == "1" {
		return "1 day"
	}
	return n + " days"
}

// segmentSentence shows a segment's criteria in words: each group's
// criteria joined by "and", the groups by "or".
func (fs fieldSet) segmentSentence(criteria parley.Criteria) string {
	groups := collapse(criteria)
	if len(groups) == 0 {
		return "Every contact"
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		words := make([]string, len(g))
		for j, r := range g {
			words[j] = fs.sentence(r)
			if j > 0 && strings.HasPrefix(words[j], "Is ") {
				words[j] = "is" + words[j][2:]
			}
		}
		parts[i] = strings.Join(words, " and ")
		if len(groups) > 1 && len(g) > 1 {
			parts[i] = "(" + parts[i] + ")"
		}
	}
	return strings.Join(parts, " or ")
}
