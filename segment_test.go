package parley_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

func ptr[T any](v T) *T { return &v }

func crit(dim int64, field string, typ, op int64) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: dim, FieldName: field, FieldType: typ}, OperatorType: op}
}

func with(c parley.SegmentCriterion, f func(*parley.SegmentCriterion)) parley.SegmentCriterion {
	f(&c)
	return c
}

// scope is a brand with one field of each type and a few segments: 2 names
// 3, 3 names 2 (a cycle among stored segments), 4 names 5 which names 4's
// would-be caller (checked via Self), 6 is POINT IN TIME.
func scope() parley.CriteriaScope {
	member := func(id int64) []parley.SegmentCriterion {
		return []parley.SegmentCriterion{with(crit(4, "", 1, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(id) })}
	}
	return parley.CriteriaScope{
		Fields: map[string]int64{"age": 1, "score": 2, "tier": 3, "tags": 4, "vip": 5, "renewal": 6},
		Segments: map[int64]*parley.Segment{
			1: {ID: 1, Type: "STANDARD"},
			2: {ID: 2, Type: "STANDARD", Criteria: member(3)},
			3: {ID: 3, Type: "STANDARD", Criteria: member(2)},
			4: {ID: 4, Type: "STANDARD", Criteria: member(5)},
			5: {ID: 5, Type: "STANDARD", Criteria: member(9)},
			6: {ID: 6, Type: "POINT IN TIME", Criteria: member(9)},
			7: {ID: 7, Type: "STANDARD", Criteria: []parley.SegmentCriterion{
				with(crit(2, "gone", 3, 1), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("x") })}},
		},
		Self: 9,
	}
}

func TestValidateCriteriaAccepts(t *testing.T) {
	ok := []parley.SegmentCriterion{
		with(crit(1, "first_name", 3, 9), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("Al") }),
		with(crit(1, "messaging_consent", 5, 1), func(c *parley.SegmentCriterion) { c.BoolFieldValue = ptr(true) }),
		with(crit(1, "date_of_birth", 6, 14), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(7)) }),
		with(crit(1, "date_created", 6, 3), func(c *parley.SegmentCriterion) { c.DateFieldValue = ptr("2024-02-29") }),
		with(crit(2, "score", 2, 5), func(c *parley.SegmentCriterion) { c.FloatFieldValue = ptr(2.5) }),
		with(crit(2, "tags", 4, 8), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("x") }),
		crit(2, "vip", 5, 11),
		with(crit(3, "inbound_count", 1, 4), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(2)) }),
		with(crit(3, "last_delivered_at", 6, 12), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(0)) }),
		with(crit(4, "", 1, 2), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(1)) }),
		with(crit(4, "", 0, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(6)) }), // frozen: its criteria are not followed
	}
	if err := parley.ValidateCriteria(ok, scope()); err != nil {
		t.Fatalf("valid criteria refused: %v", err)
	}
	if err := parley.ValidateCriteria(nil, scope()); err != nil {
		t.Fatalf("no criteria (everyone) refused: %v", err)
	}
}

// Every refusal is a validation_error naming the criterion's index (D14).
func TestValidateCriteriaRefuses(t *testing.T) {
	good := with(crit(1, "first_name", 3, 1), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("a") })
	tests := []struct {
		name      string
		c         parley.SegmentCriterion
		field     string
		wantMsg   string
		selfOther int64
	}{
		{"UnknownDimension", crit(5, "first_name", 3, 10), "criteria[1].attribute.dimension_type", "criteria[1].attribute.dimension_type: unknown code 5", 0},
		{"UnknownContactField", crit(1, "nickname", 3, 10), "criteria[1].attribute.field_name", "", 0},
		{"CustomKeyOfNoField", crit(2, "loyalty", 3, 10), "criteria[1].attribute.field_name", "", 0},
		{"CustomFieldNameNotKey", crit(2, "Tier", 3, 10), "criteria[1].attribute.field_name", "", 0},
		{"UnknownActivityField", crit(3, "clicks", 1, 10), "criteria[1].attribute.field_name", "", 0},
		{"WrongFieldType", crit(1, "first_name", 1, 10), "criteria[1].attribute.field_type", "criteria[1].attribute.field_type: first_name is STRING (3)", 0},
		{"UnknownOperator", crit(1, "first_name", 3, 15), "criteria[1].operator_type", "criteria[1].operator_type: unknown code 15", 0},
		{"ZeroOperator", crit(1, "first_name", 3, 0), "criteria[1].operator_type", "", 0},
		{"GreaterThanBoolean", with(crit(2, "vip", 5, 3), func(c *parley.SegmentCriterion) { c.BoolFieldValue = ptr(true) }),
			"criteria[1].operator_type", "criteria[1].operator_type: GREATER_THAN does not fit BOOLEAN", 0},
		{"ContainsInteger", with(crit(2, "age", 1, 7), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(1)) }), "criteria[1].operator_type", "", 0},
		{"StartsWithList", with(crit(2, "tags", 4, 9), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("a") }), "criteria[1].operator_type", "", 0},
		{"LessThanString", with(crit(1, "city", 3, 5), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("a") }), "criteria[1].operator_type", "", 0},
		{"InLastDaysInteger", with(crit(3, "inbound_count", 1, 12), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(1)) }), "criteria[1].operator_type", "", 0},
		{"AnniversaryString", with(crit(1, "city", 3, 14), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(1)) }), "criteria[1].operator_type", "", 0},
		{"MissingStr", crit(1, "city", 3, 1), "criteria[1].str_field_value", "criteria[1].str_field_value: required", 0},
		{"MissingInt", crit(2, "age", 1, 3), "criteria[1].int_field_value", "", 0},
		{"MissingFloat", crit(2, "score", 2, 3), "criteria[1].float_field_value", "", 0},
		{"MissingBool", crit(1, "messaging_consent", 5, 1), "criteria[1].bool_field_value", "", 0},
		{"MissingDate", crit(2, "renewal", 6, 3), "criteria[1].date_field_value", "", 0},
		{"MissingDays", crit(2, "renewal", 6, 12), "criteria[1].int_field_value", "", 0},
		{"WrongMember", with(crit(2, "age", 1, 1), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr("3") }), "criteria[1].str_field_value", "", 0},
		{"TwoMembers", with(crit(2, "age", 1, 1), func(c *parley.SegmentCriterion) {
			c.IntFieldValue = ptr(int64(3))
			c.FloatFieldValue = ptr(3.0)
		}), "criteria[1].float_field_value", "", 0},
		{"ValueWithIsSet", with(crit(2, "age", 1, 10), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(3)) }), "criteria[1].int_field_value", "", 0},
		{"BadDate", with(crit(2, "renewal", 6, 1), func(c *parley.SegmentCriterion) { c.DateFieldValue = ptr("02/30/2024") }), "criteria[1].date_field_value", "", 0},
		{"ImpossibleDate", with(crit(2, "renewal", 6, 1), func(c *parley.SegmentCriterion) { c.DateFieldValue = ptr("2023-02-29") }), "criteria[1].date_field_value", "", 0},
		{"NegativeDays", with(crit(2, "renewal", 6, 13), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(-1)) }), "criteria[1].int_field_value", "", 0},
		{"DateMemberForDays", with(crit(2, "renewal", 6, 12), func(c *parley.SegmentCriterion) { c.DateFieldValue = ptr("2024-01-01") }), "criteria[1].date_field_value", "", 0},
		{"SegmentOperator", with(crit(4, "", 1, 3), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(1)) }), "criteria[1].operator_type", "", 0},
		{"SegmentFieldType", with(crit(4, "", 3, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(1)) }), "criteria[1].attribute.field_type", "", 0},
		{"SegmentIDMissing", crit(4, "", 1, 1), "criteria[1].int_field_value", "", 0},
		{"SegmentOfNoneOrOtherBrand", with(crit(4, "", 1, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(99)) }),
			"criteria[1].int_field_value", "criteria[1].int_field_value: segment 99 not found", 0},
		{"SegmentSelf", with(crit(4, "", 1, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(9)) }), "criteria[1].int_field_value", "", 0},
		{"SegmentCycleThroughOthers", with(crit(4, "", 1, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(4)) }),
			"criteria[1].int_field_value", "criteria[1].int_field_value: segment 9 leads back to this segment (a cycle)", 0},
		{"StoredCycle", with(crit(4, "", 1, 2), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(2)) }), "criteria[1].int_field_value", "", 0},
		{"NamedSegmentNoLongerValid", with(crit(4, "", 1, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(int64(7)) }), "criteria[1].int_field_value", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parley.ValidateCriteria([]parley.SegmentCriterion{good, tt.c}, scope())
			e, ok := err.(*parley.Error)
			if !ok || e.Code != parley.EValidation {
				t.Fatalf("err = %v, want a validation_error", err)
			}
			if e.Field != tt.field {
				t.Errorf("field = %q, want %q (message %q)", e.Field, tt.field, e.Message)
			}
			if tt.wantMsg != "" && e.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q", e.Message, tt.wantMsg)
			}
		})
	}
}

func TestValidateCriteriaBounds(t *testing.T) {
	many := make([]parley.SegmentCriterion, parley.MaxCriteria+1)
	for i := range many {
		many[i] = crit(1, "city", 3, 10)
	}
	if err := parley.ValidateCriteria(many, scope()); parley.ErrorCode(err) != parley.EValidation {
		t.Errorf("%d criteria: %v, want validation_error", len(many), err)
	}
}

// member is a membership criterion naming segment id (dimension 4).
func member(id int64) parley.SegmentCriterion {
	return with(crit(4, "", 1, 1), func(c *parley.SegmentCriterion) { c.IntFieldValue = ptr(id) })
}

func repeat(c parley.SegmentCriterion, n int) []parley.SegmentCriterion {
	out := make([]parley.SegmentCriterion, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// ladder is issue #31's L1…L4: each of 50 criteria naming the level
// below, L1 of 50 plain criteria; L4 expands to about 6.4 million.
func ladder() parley.CriteriaScope {
	sc := parley.CriteriaScope{Fields: map[string]int64{}, Segments: map[int64]*parley.Segment{
		1: {ID: 1, Type: "STANDARD", Criteria: repeat(crit(1, "city", 3, 10), 50)},
	}}
	for id := int64(2); id <= 4; id++ {
		sc.Segments[id] = &parley.Segment{ID: id, Type: "STANDARD", Criteria: repeat(member(id-1), 50)}
	}
	return sc
}

// TestExpandedCriteria: D14's count, each membership criterion with the
// criteria of the segment it names, as often as named, POINT IN TIME 1;
// it stops once past the limit (issue #31 item 1).
func TestExpandedCriteria(t *testing.T) {
	sc := ladder()
	sc.Segments[5] = &parley.Segment{ID: 5, Type: "STANDARD", Criteria: repeat(crit(1, "city", 3, 10), 3)}
	sc.Segments[6] = &parley.Segment{ID: 6, Type: "POINT IN TIME", Criteria: repeat(member(4), 50)}
	for _, tc := range []struct {
		name     string
		criteria []parley.SegmentCriterion
		want     int
	}{
		{"plain", repeat(crit(1, "city", 3, 10), 7), 7},
		{"L1 once", []parley.SegmentCriterion{member(1)}, 51},
		{"three criteria named 50 times", repeat(member(5), 50), 200},
		{"the same, once more", append(repeat(member(5), 50), member(5)), parley.MaxExpandedCriteria + 1},
		{"L4 stops at the limit", []parley.SegmentCriterion{member(4)}, parley.MaxExpandedCriteria + 1},
		{"POINT IN TIME counts 1", repeat(member(6), 10), 20},
	} {
		got, err := parley.ExpandedCriteria(tc.criteria, sc)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
	// The per-criterion check of old let 50 criteria each naming a
	// segment of 4 through (4 + 50 ≤ 200 each): the sum is what counts.
	sc.Segments[7] = &parley.Segment{ID: 7, Type: "STANDARD", Criteria: repeat(crit(1, "city", 3, 10), 4)}
	err := parley.ValidateCriteria(repeat(member(7), 50), sc)
	if parley.ErrorCode(err) != parley.EValidation || !strings.Contains(err.Error(), "criteria[37].int_field_value") {
		t.Errorf("50 × (1 + 4) criteria: %v, want validation_error at criteria[37] (50 + 38 × 4 > 200)", err)
	}
	if err := parley.ValidateCriteria([]parley.SegmentCriterion{member(4)}, sc); parley.ErrorCode(err) != parley.EValidation {
		t.Errorf("naming L4: %v, want validation_error", err)
	}
}

// TestExpandedCriteriaCost: a wide, deep lattice of segments (each of 50
// criteria naming the one below, 60 levels: 50^60 criteria expanded) is
// counted in a few hundred steps, memoised and stopped at the limit.
func TestExpandedCriteriaCost(t *testing.T) {
	sc := parley.CriteriaScope{Fields: map[string]int64{}, Segments: map[int64]*parley.Segment{
		1: {ID: 1, Type: "STANDARD"}, // empty: a criterion naming it counts 1
	}}
	for id := int64(2); id <= 60; id++ {
		sc.Segments[id] = &parley.Segment{ID: id, Type: "STANDARD", Criteria: repeat(member(id-1), 50)}
	}
	n := testing.AllocsPerRun(5, func() {
		if got, err := parley.ExpandedCriteria([]parley.SegmentCriterion{member(60)}, sc); err != nil || got != parley.MaxExpandedCriteria+1 {
			t.Fatalf("%d, %v", got, err)
		}
	})
	if n > 2000 {
		t.Errorf("%v allocations to count a lattice: the count is not bounded", n)
	}
	// A cycle among stored segments is an error, not a loop.
	sc.Segments[1].Criteria = []parley.SegmentCriterion{member(60)}
	if _, err := parley.ExpandedCriteria([]parley.SegmentCriterion{member(2)}, sc); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
}

// TestCheckReferrers: a change to a segment that others name is refused
// when it pushes one of them over the limit (issue #31 item 1), and
// allowed when that one was over already (so it can be repaired).
func TestCheckReferrers(t *testing.T) {
	before := parley.CriteriaScope{Fields: map[string]int64{}, Segments: map[int64]*parley.Segment{
		1: {ID: 1, Type: "STANDARD"},
		2: {ID: 2, Type: "STANDARD", Criteria: repeat(member(1), 50)},
		3: {ID: 3, Type: "STANDARD", Criteria: repeat(member(2), 1)},
	}}
	after := parley.CriteriaScope{Fields: before.Fields, Segments: maps.Clone(before.Segments), Self: 1}
	after.Segments[1] = &parley.Segment{ID: 1, Type: "STANDARD", Criteria: repeat(crit(1, "city", 3, 10), 4)}
	err := parley.CheckReferrers(1, before, after, "criteria")
	if parley.ErrorCode(err) != parley.EValidation || !strings.Contains(err.Error(), "segment 2 names this segment") {
		t.Errorf("L1 made 4 criteria under a 50-wide L2: %v, want validation_error naming segment 2", err)
	}
	after.Segments[1] = &parley.Segment{ID: 1, Type: "STANDARD", Criteria: repeat(crit(1, "city", 3, 10), 2)}
	if err := parley.CheckReferrers(1, before, after, "criteria"); err != nil {
		t.Errorf("L1 made 2 criteria (L2 150, L3 151): %v", err)
	}
	// Over before: still over after does not block a change.
	before.Segments[1] = after.Segments[1]
	if err := parley.CheckReferrers(1, before, after, "criteria"); err != nil {
		t.Errorf("unchanged count, a referrer over already: %v", err)
	}
}

func TestCriterionTextBound(t *testing.T) {
	ok := with(crit(1, "city", 3, 7), func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr(strings.Repeat("é", 1024)) })
	if err := parley.ValidateCriteria([]parley.SegmentCriterion{ok}, scope()); err != nil {
		t.Errorf("1024 characters: %v", err)
	}
	long := with(ok, func(c *parley.SegmentCriterion) { c.StrFieldValue = ptr(strings.Repeat("a", 1025)) })
	err := parley.ValidateCriteria([]parley.SegmentCriterion{ok, long}, scope())
	if parley.ErrorCode(err) != parley.EValidation || !strings.Contains(err.Error(), "criteria[1].str_field_value: at most 1024 characters") {
		t.Errorf("1025 characters: %v, want validation_error on criteria[1].str_field_value", err)
	}
}
