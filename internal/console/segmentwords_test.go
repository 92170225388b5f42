package console

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// testFields is a brand with an enum field, a list field, a number field
// and two segments.
func testFields() fieldSet {
	return newFieldSet([]*parley.CustomField{
		{FieldName: "Loyalty Tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"Gold", "Silver"}},
		{FieldName: "Interests", CustomDataType: parley.CustomList, AvailableEnumValues: []string{"shoes", "hats"}},
		{FieldName: "Orders", CustomDataType: parley.CustomInteger},
	}, []*parley.Segment{{ID: 7, Name: "VIPs"}, {ID: 8, Name: "Lapsed"}})
}

func str(s string) *string { return &s }
func num(n int64) *int64   { return &n }
func yes(b bool) *bool     { return &b }

func crit(dim int64, field string, typ, op, group int64) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: dim, FieldName: field, FieldType: typ},
		OperatorType: op, AndGroupNum: group}
}

// TestSegmentSentences: a segment's criteria read as a sentence in the
// list and the builder (issue #32): fields by their plain names, values
// in words (yes, a state's name, a segment's name), groups joined by "or",
// "is one of" collapsed from the groups it is saved as (D14).
func TestSegmentSentences(t *testing.T) {
	fs := testFields()
	city := crit(1, "city", 3, 1, 0)
	city.StrFieldValue = str("Brooklyn")
	consent := crit(1, "messaging_consent", 5, 1, 0)
	consent.BoolFieldValue = yes(true)
	bday := crit(1, "date_of_birth", 6, 14, 0)
	bday.IntFieldValue = num(7)
	lastIn := crit(3, "last_inbound_at", 6, 13, 0)
	lastIn.IntFieldValue = num(30)
	vip := crit(4, "", 1, 1, 0)
	vip.IntFieldValue = num(7)
	notLapsed := crit(4, "", 1, 2, 0)
	notLapsed.IntFieldValue = num(8)
	ny := crit(1, "state_code", 3, 1, 0)
	ny.StrFieldValue = str("NY")
	tier := crit(2, "loyalty_tier", 3, 1, 0)
	tier.StrFieldValue = str("Gold")
	orders := crit(2, "orders", 1, 4, 0)
	orders.IntFieldValue = num(3)
	email := crit(1, "email_address", 3, 10, 0)
	before := crit(1, "date_created", 6, 5, 0)
	before.DateFieldValue = str("2026-01-31")
	in := func(c parley.SegmentCriterion, g int64) parley.SegmentCriterion { c.AndGroupNum = g; return c }
	withStr := func(c parley.SegmentCriterion, v string, g int64) parley.SegmentCriterion {
		c.StrFieldValue, c.AndGroupNum = &v, g
		return c
	}
	for _, c := range []struct {
		criteria parley.Criteria
		want     string
	}{
		{nil, "Every contact"},
		{parley.Criteria{city}, "City is Brooklyn"},
		{parley.Criteria{consent}, "Opted in is yes"},
		{parley.Criteria{bday}, "Birthday is within the next 7 days"},
		{parley.Criteria{lastIn}, "Last message received is more than 30 days ago"},
		{parley.Criteria{vip}, "Is in segment VIPs"},
		{parley.Criteria{ny}, "State is New York"},
		{parley.Criteria{tier}, "Loyalty Tier is Gold"},
		{parley.Criteria{orders}, "Orders is at least 3"},
		{parley.Criteria{email}, "Email is set"},
		{parley.Criteria{before}, "Date added is before Jan 31, 2026"},
		{parley.Criteria{city, consent, notLapsed}, "City is Brooklyn and Opted in is yes and is not in segment Lapsed"},
		{parley.Criteria{city, in(consent, 1)}, "City is Brooklyn or Opted in is yes"},
		{parley.Criteria{city, consent, in(ny, 1)}, "(City is Brooklyn and Opted in is yes) or State is New York"},
		// "is one of", as saved: one group per value, the others copied.
		{parley.Criteria{ny, consent, withStr(ny, "NJ", 1), in(consent, 1), withStr(ny, "CT", 2), in(consent, 2)},
			"State is one of New York, New Jersey or Connecticut and Opted in is yes"},
	} {
		if got := fs.segmentSentence(c.criteria); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", marshal(c.criteria), got, c.want)
		}
	}
}

func marshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSegmentOperatorsByType: each field offers the conditions that fit
// its type (D14's table) and no other: every one offered is accepted by
// D14's check for that field, "City" has no "in the last … days", a yes/no
// field has no "contains", a segment only "is in" and "is not in".
func TestSegmentOperatorsByType(t *testing.T) {
	fs := testFields()
	scope := parley.CriteriaScope{Fields: map[string]int64{"loyalty_tier": 3, "interests": 4, "orders": 1},
		Segments: map[int64]*parley.Segment{7: {ID: 7, Name: "VIPs"}, 8: {ID: 8, Name: "Lapsed"}}}
	sample := map[valueKind]string{kindText: "x", kindNumber: "3", kindDate: "2026-01-31", kindBool: "true",
		kindEnum: "Gold", kindList: "shoes", kindState: "New York", kindSegment: "7"}
	for _, f := range fs.List {
		for _, op := range opsFor(f) {
			v := sample[f.Kind]
			if op.Value == "12" || op.Value == "13" || op.Value == "14" {
				v = "30"
			}
			r := criterionRow{Attr: f.Key, Op: op.Value, Values: []string{v}}
			crs := fs.rowCriteria(&r)
			if r.Error != "" {
				t.Errorf("%s %s: %s", f.Label, op.Label, r.Error)
				continue
			}
			if err := parley.ValidateCriteria(crs, scope); err != nil {
				t.Errorf("%s %s is offered but D14 refuses it: %v", f.Label, op.Label, err)
			}
		}
	}
	words := func(label string) []string {
		for _, f := range fs.List {
			if f.Label == label {
				var out []string
				for _, o := range opsFor(f) {
					out = append(out, o.Label)
				}
				return out
			}
		}
		t.Fatalf("no field %q", label)
		return nil
	}
	for _, c := range []struct {
		field string
		want  []string
	}{
		{"City", []string{"is", "is not", "is one of", "contains", "does not contain", "starts with", "is set", "is not set"}},
		{"Opted in", []string{"is", "is set", "is not set"}},
		{"State", []string{"is", "is not", "is one of", "is set", "is not set"}},
		{"Loyalty Tier", []string{"is", "is not", "is one of", "is set", "is not set"}},
		{"Interests", []string{"includes", "does not include", "includes any of", "is set", "is not set"}},
		{"Orders", []string{"is", "is not", "is one of", "is more than", "is at least", "is less than", "is at most", "is set", "is not set"}},
		{"Birthday", []string{"is on", "is not on", "is before", "is after", "is on or before", "is on or after",
			"is in the last … days", "is more than … days ago", "is within the next … days (day and month)", "is set", "is not set"}},
		{"Segment", []string{"is in", "is not in"}},
	} {
		if got := words(c.field); !slices.Equal(got, c.want) {
			t.Errorf("%s offers %q, want %q", c.field, got, c.want)
		}
	}
	// A condition that does not fit is refused in words.
	r := criterionRow{Attr: attrKey(1, "city", 3), Op: "12", Values: []string{"7"}}
	if fs.rowCriteria(&r); r.Error != "Choose a condition for City." {
		t.Errorf("city in the last 7 days: %q", r.Error)
	}
}

// TestSegmentValues: values as the API stores them: a state by name or
// code in any case is its code (so NY and New York both match), an enum
// value in the field's spelling, yes as true (D14).
func TestSegmentValues(t *testing.T) {
	fs := testFields()
	for _, c := range []struct {
		attr, op, value, want string
	}{
		{attrKey(1, "state_code", 3), "1", "New York", `"str_field_value":"NY"`},
		{attrKey(1, "state_code", 3), "1", "ny", `"str_field_value":"NY"`},
		{attrKey(1, "state_code", 3), "2", "new jersey", `"str_field_value":"NJ"`},
		{attrKey(2, "loyalty_tier", 3), "1", "gold", `"str_field_value":"Gold"`},
		{attrKey(1, "messaging_consent", 5), "1", "false", `"bool_field_value":false`},
		{attrKey(3, "last_inbound_at", 6), "12", "7", `"int_field_value":7`},
		{segmentKey, "1", "8", `"int_field_value":8`},
	} {
		r := criterionRow{Attr: c.attr, Op: c.op, Values: []string{c.value}}
		crs := fs.rowCriteria(&r)
		if r.Error != "" || len(crs) != 1 || !strings.Contains(marshal(crs[0]), c.want) {
			t.Errorf("%s %s %q: %s %q, want %s", c.attr, c.op, c.value, marshal(crs), r.Error, c.want)
		}
	}
}

// TestSegmentOneOf: "is one of" is saved as one AND group per value (D14
// has no IN), the group's other conditions copied into each, two of them
// in one group as every combination, values from a menu in the menu's
// order; shown again, the groups collapse to
// the builder's rows and expand to the same criteria.
func TestSegmentOneOf(t *testing.T) {
	fs := testFields()
	rows := []criterionRow{
		{Group: 0, Attr: attrKey(1, "state_code", 3), Op: opOneOf, Values: []string{"NY", "New Jersey"}},
		{Group: 0, Attr: attrKey(2, "loyalty_tier", 3), Op: opOneOf, Values: []string{"Gold", "silver"}},
		{Group: 0, Attr: attrKey(1, "messaging_consent", 5), Op: "1", Values: []string{"true"}},
		{Group: 1, Attr: attrKey(2, "orders", 1), Op: opOneOf, Values: []string{"1, 2,2"}},
	}
	per := make([][]parley.SegmentCriterion, len(rows))
	for i := range rows {
		if per[i] = fs.rowCriteria(&rows[i]); rows[i].Error != "" {
			t.Fatalf("row %d: %s", i, rows[i].Error)
		}
	}
	got, rowOf := expandGroups(rows, per)
	var want parley.Criteria
	g := int64(0)
	for _, st := range []string{"NJ", "NY"} { // the menu's order, not the order picked
		for _, tier := range []string{"Gold", "Silver"} {
			s, t2, c := crit(1, "state_code", 3, 1, g), crit(2, "loyalty_tier", 3, 1, g), crit(1, "messaging_consent", 5, 1, g)
			s.StrFieldValue, t2.StrFieldValue, c.BoolFieldValue = str(st), str(tier), yes(true)
			want = append(want, s, t2, c)
			g++
		}
	}
	for _, n := range []int64{1, 2} {
		o := crit(2, "orders", 1, 1, g)
		o.IntFieldValue = num(n)
		want = append(want, o)
		g++
	}
	if marshal(got) != marshal(want) {
		t.Fatalf("expanded:\n got %s\nwant %s", marshal(got), marshal(want))
	}
	if !slices.Equal(rowOf, []int{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 3}) {
		t.Errorf("rows of the criteria: %v", rowOf)
	}
	// Shown again and saved again: the same criteria.
	var again []criterionRow
	for _, g := range collapse(got) {
		again = append(again, g...)
	}
	per = make([][]parley.SegmentCriterion, len(again))
	for i := range again {
		per[i] = fs.rowCriteria(&again[i])
	}
	if back, _ := expandGroups(again, per); marshal(back) != marshal(got) {
		t.Errorf("collapsed %+v and expanded again:\n got %s\nwant %s", again, marshal(back), marshal(got))
	}
	if s := fs.segmentSentence(parley.Criteria{want[12], want[13]}); s != "Orders is one of 1 or 2" {
		t.Errorf("sentence: %q", s)
	}
}
