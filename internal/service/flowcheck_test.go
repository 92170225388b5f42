package service

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley"
)

// testFlowScope is a brand with a DATE and an enum custom field and three
// segments: 1 STANDARD, 2 POINT IN TIME, 3 archived.
func testFlowScope() flowScope {
	return flowScope{criteria: parley.CriteriaScope{
		Fields: map[string]int64{"birthday": parley.CustomDate, "tier": parley.CustomString},
		Segments: map[int64]*parley.Segment{
			1: {ID: 1, Type: parley.SegmentStandard},
			2: {ID: 2, Type: parley.SegmentPointInTime},
			3: {ID: 3, Type: parley.SegmentStandard, IsArchived: true},
		},
	}}
}

// TestFlowTriggerRules: each D21 trigger rule refuses what it must, naming
// the member, and keeps what it may.
func TestFlowTriggerRules(t *testing.T) {
	tests := []struct {
		name, trigger string
		field         string // the member the error names; "" = accepted
		code          string // the error's code when not validation_error
	}{
		{"subscribed", `{"type":"subscribed"}`, "", ""},
		{"created", `{"type":"created"}`, "", ""},
		{"no type", `{}`, "trigger.type", ""},
		{"unknown type", `{"type":"opened"}`, "trigger.type", ""},
		{"unknown member", `{"type":"created","when":1}`, "trigger.when", ""},
		{"member of another type", `{"type":"created","keyword":"JOIN"}`, "trigger.keyword", ""},
		{"keyword", `{"type":"keyword","keyword":"join"}`, "", ""},
		{"keyword missing", `{"type":"keyword"}`, "trigger.keyword", ""},
		{"keyword two words", `{"type":"keyword","keyword":"join now"}`, "trigger.keyword", ""},
		{"D12 stop keyword", `{"type":"keyword","keyword":"stop"}`, "trigger.keyword", ""},
		{"D12 start synonym", `{"type":"keyword","keyword":"Unstop"}`, "trigger.keyword", ""},
		{"D12 help synonym", `{"type":"keyword","keyword":"INFO"}`, "trigger.keyword", ""},
		{"segment", `{"type":"segment_entered","segment_id":1}`, "", ""},
		{"segment of none", `{"type":"segment_entered","segment_id":9}`, "", parley.ESegmentNotFound},
		{"segment point in time", `{"type":"segment_entered","segment_id":2}`, "trigger.segment_id", ""},
		{"segment archived", `{"type":"segment_entered","segment_id":3}`, "trigger.segment_id", ""},
		{"segment_id a string", `{"type":"segment_entered","segment_id":"1"}`, "trigger.segment_id", ""},
		{"event", `{"type":"event","name":"order_placed"}`, "", ""},
		{"event upper case", `{"type":"event","name":"Order"}`, "trigger.name", ""},
		{"event too long", `{"type":"event","name":"` + string(make65('a')) + `"}`, "trigger.name", ""},
		{"date contact field", `{"type":"date","field_name":"date_of_birth","time":"10:00"}`, "", ""},
		{"date custom field", `{"type":"date","field_name":"birthday","offset_days":-365,"time":"23:59"}`, "", ""},
		{"date not a date field", `{"type":"date","field_name":"tier","time":"10:00"}`, "trigger.field_name", ""},
		{"date unknown field", `{"type":"date","field_name":"anniversary","time":"10:00"}`, "trigger.field_name", ""},
		{"date offset too far", `{"type":"date","field_name":"birthday","offset_days":366,"time":"10:00"}`, "trigger.offset_days", ""},
		{"date no time", `{"type":"date","field_name":"birthday"}`, "trigger.time", ""},
		{"date bad time", `{"type":"date","field_name":"birthday","time":"24:00"}`, "trigger.time", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeTrigger(parley.RawMember(tt.trigger), testFlowScope())
			checkFieldErr(t, err, tt.field, tt.code)
		})
	}
}

func make65(c byte) []byte {
	b := make([]byte, 65)
	for i := range b {
		b[i] = c
	}
	return b
}

// checkFieldErr checks err against the member a test expects it to name
// ("" = no error) or, with code, the error's code.
func checkFieldErr(t *testing.T, err error, field, code string) {
	t.Helper()
	switch {
	case code != "":
		if parley.ErrorCode(err) != code {
			t.Fatalf("err = %v, want code %s", err, code)
		}
	case field == "":
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
	default:
		e, ok := err.(*parley.Error)
		if !ok || e.Code != parley.EValidation || e.Field != field {
			t.Fatalf("err = %#v, want a validation_error naming %s", err, field)
		}
	}
}

// TestFlowKeywordStoredUpperCase: a keyword is kept as the contact's word
// in capitals, whatever case it was sent in (matching ignores ASCII case).
func TestFlowKeywordStoredUpperCase(t *testing.T) {
	tr, err := decodeTrigger(parley.RawMember(`{"type":"keyword","keyword":" join "}`), testFlowScope())
	if err != nil || tr.Keyword != "JOIN" {
		t.Fatalf("trigger = %+v, %v", tr, err)
	}
	tr, err = decodeTrigger(parley.RawMember(`{"type":"date","field_name":"birthday","time":"09:00"}`), testFlowScope())
	if err != nil || tr.OffsetDays == nil || *tr.OffsetDays != 0 {
		t.Fatalf("date trigger without offset_days = %+v, %v; want offset 0", tr, err)
	}
}

// TestFlowStepRules: each D21 step rule refuses what it must, naming the
// member (steps[2].body), and keeps what it may.
func TestFlowStepRules(t *testing.T) {
	long := make([]byte, parley.MaxMessageBody+1)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		name, steps, field string
	}{
		{"send", `[{"type":"send","body":"Hi"}]`, ""},
		{"send transactional", `[{"type":"send","body":"Hi","message_type":"transactional"}]`, ""},
		{"send no body", `[{"type":"send"}]`, "steps[0].body"},
		{"send body too long", `[{"type":"wait","seconds":1},{"type":"send","body":"` + string(long) + `"}]`, "steps[1].body"},
		{"send bad type", `[{"type":"send","body":"Hi","message_type":"CONVERSATIONAL"}]`, "steps[0].message_type"},
		{"send unknown member", `[{"type":"send","body":"Hi","seconds":3}]`, "steps[0].seconds"},
		{"no steps", `[]`, "steps"},
		{"not an array", `{"type":"send"}`, "steps"},
		{"null", `null`, "steps"},
		{"step not an object", `[1]`, "steps[0]"},
		{"unknown step type", `[{"type":"sms"}]`, "steps[0].type"},
		{"wait", `[{"type":"wait","seconds":31536000}]`, ""},
		{"wait zero", `[{"type":"wait","seconds":0}]`, "steps[0].seconds"},
		{"wait over a year", `[{"type":"wait","seconds":31536001}]`, "steps[0].seconds"},
		{"wait missing", `[{"type":"wait"}]`, "steps[0].seconds"},
		{"wait_until", `[{"type":"wait_until","time":"09:30"}]`, ""},
		{"wait_until bad", `[{"type":"wait_until","time":"9:30"}]`, "steps[0].time"},
		{"branch criteria", `[{"type":"branch","if":{"criteria":[{"attribute":{"dimension_type":2,"field_name":"tier","field_type":3},"operator_type":1,"str_field_value":"Gold","and_group_num":1}]},"else_step":null},{"type":"send","body":"Hi"}]`, ""},
		{"branch bad criterion", `[{"type":"branch","if":{"criteria":[{"attribute":{"dimension_type":2,"field_name":"tier","field_type":3},"operator_type":12,"int_field_value":3,"and_group_num":1}]}},{"type":"send","body":"Hi"}]`, "steps[0].if.criteria[0].operator_type"},
		{"branch criterion wrong JSON type", `[{"type":"branch","if":{"criteria":[{"operator_type":"1"}]}}]`, "steps[0].if.criteria[0].operator_type"},
		{"branch replied", `[{"type":"branch","if":{"replied":true},"else_step":2},{"type":"send","body":"a"},{"type":"send","body":"b"}]`, ""},
		{"branch replied false", `[{"type":"branch","if":{"replied":false}}]`, "steps[0].if.replied"},
		{"branch event", `[{"type":"branch","if":{"event":"order_placed"}}]`, ""},
		{"branch two conditions", `[{"type":"branch","if":{"replied":true,"event":"x"}}]`, "steps[0].if"},
		{"branch no condition", `[{"type":"branch","if":{}}]`, "steps[0].if"},
		{"branch if missing", `[{"type":"branch"}]`, "steps[0].if"},
		{"else_step itself", `[{"type":"branch","if":{"replied":true},"else_step":0}]`, "steps[0].else_step"},
		{"else_step backwards", `[{"type":"send","body":"a"},{"type":"branch","if":{"replied":true},"else_step":0},{"type":"send","body":"b"}]`, "steps[1].else_step"},
		{"else_step past the end", `[{"type":"branch","if":{"replied":true},"else_step":1}]`, "steps[0].else_step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeSteps(parley.RawMember(tt.steps), testFlowScope())
			checkFieldErr(t, err, tt.field, "")
		})
	}
	t.Run("at most 50", func(t *testing.T) {
		steps := make([]json.RawMessage, parley.MaxFlowSteps+1)
		for i := range steps {
			steps[i] = json.RawMessage(`{"type":"wait","seconds":1}`)
		}
		raw, _ := json.Marshal(steps)
		if _, err := decodeSteps(raw, testFlowScope()); err == nil {
			t.Fatal("51 steps accepted")
		}
		if _, err := decodeSteps(mustJSON(steps[:parley.MaxFlowSteps]), testFlowScope()); err != nil {
			t.Fatalf("50 steps refused: %v", err)
		}
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestFlowStepJSON: a step encodes the members of its type only, with
// defaults filled in (D21: message_type MARKETING, else_step null).
func TestFlowStepJSON(t *testing.T) {
	steps, err := decodeSteps(parley.RawMember(`[{"type":"send","body":"Hi"},{"type":"wait","seconds":5},`+
		`{"type":"wait_until","time":"10:00"},{"type":"branch","if":{"replied":true}},{"type":"send","body":"b"}]`), testFlowScope())
	if err != nil {
		t.Fatal(err)
	}
	got := string(mustJSON(steps))
	want := `[{"type":"send","body":"Hi","media_item_uuids":[],"message_type":"MARKETING"},{"type":"wait","seconds":5},` +
		`{"type":"wait_until","time":"10:00"},{"type":"branch","if":{"replied":true},"else_step":null},` +
		`{"type":"send","body":"b","media_item_uuids":[],"message_type":"MARKETING"}]`
	if got != want {
		t.Fatalf("steps encode as\n%s\nwant\n%s", got, want)
	}
}

// TestFlowNameAndReentry: name required and bounded; reentry_seconds null
// or 0…ten years.
func TestFlowNameAndReentry(t *testing.T) {
	if _, err := checkFlowName(parley.Some("  ")); err == nil {
		t.Error("blank name accepted")
	}
	if _, err := checkFlowName(parley.Optional[string]{}); err == nil {
		t.Error("missing name accepted")
	}
	if n, err := checkFlowName(parley.Some(" Welcome ")); err != nil || n != "Welcome" {
		t.Errorf("name = %q, %v", n, err)
	}
	long := make([]byte, parley.MaxFlowName+1)
	for i := range long {
		long[i] = 'x'
	}
	if _, err := checkFlowName(parley.Some(string(long))); err == nil {
		t.Error("101-character name accepted")
	}
	if r, err := checkReentry(parley.Null[int64]()); err != nil || r != nil {
		t.Errorf("null reentry = %v, %v", r, err)
	}
	if _, err := checkReentry(parley.Some[int64](-1)); err == nil {
		t.Error("negative reentry accepted")
	}
	if _, err := checkReentry(parley.Some[int64](MaxReentrySeconds + 1)); err == nil {
		t.Error("reentry over ten years accepted")
	}
	if r, err := checkReentry(parley.Some[int64](86400)); err != nil || *r != 86400 {
		t.Errorf("reentry = %v, %v", r, err)
	}
}
