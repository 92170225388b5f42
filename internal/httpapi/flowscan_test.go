package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// The scanned triggers of flows (D21): segment_entered and date. A test
// runs the scan itself (Service.ScanFlowTriggers) and moves the clock.

func scanFlows(t *testing.T, e *apitest.Env) {
	t.Helper()
	if err := e.App.Service.ScanFlowTriggers(e.Ctx); err != nil {
		t.Fatal(err)
	}
	runFlows(t, e)
}

func withTier(t *testing.T, e *apitest.Env, phone, tier string) *parley.User {
	t.Helper()
	return e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(phone),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true),
			CustomData: parley.Some(json.RawMessage(`{"tier":"` + tier + `"}`))}})
}

func setTier(t *testing.T, e *apitest.Env, u *parley.User, tier string) {
	t.Helper()
	if _, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(`{"tier":"` + tier + `"}`))}}); err != nil {
		t.Fatal(err)
	}
}

func entered(t *testing.T, e *apitest.Env, flowID int64) []int64 {
	t.Helper()
	runs, _, err := e.A.ListRuns(e.Ctx, flowID, parley.RunFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range runs {
		ids = append(ids, r.UserID)
	}
	return ids
}

// TestFlowSegmentEntered: a contact who starts matching the segment
// enters; members when the flow is activated do not (D21).
func TestFlowSegmentEntered(t *testing.T) {
	e := apitest.New(t)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "tier", CustomDataType: parley.CustomString})
	gold := "Gold"
	seg, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Gold"), Criteria: parley.Some(parley.Criteria{{
		Attribute:    parley.SegmentAttribute{DimensionType: parley.DimensionCustomData, FieldName: "tier", FieldType: parley.CustomString},
		OperatorType: parley.OpEquals, StrFieldValue: &gold, AndGroupNum: 1}})})
	if err != nil {
		t.Fatal(err)
	}
	already := withTier(t, e, "+14155557101", "Gold")
	later := withTier(t, e, "+14155557102", "Silver")
	f := mustFlow(t, e, "Welcome to Gold", fmt.Sprintf(`{"type":"segment_entered","segment_id":%d}`, seg.ID), `[{"type":"send","body":"You're Gold now"}]`)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); len(got) != 0 {
		t.Fatalf("members at activation entered: %v", got)
	}
	setTier(t, e, later, "gold") // text compares ignoring case (D14)
	e.Advance(time.Minute)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); !slices.Equal(got, []int64{later.ID}) {
		t.Fatalf("entered %v, want only %d", got, later.ID)
	}
	// A scan with no change enters no one again.
	e.Advance(time.Minute)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); len(got) != 1 {
		t.Errorf("entered %v after a scan with no change", got)
	}
	// One who leaves and comes back matches anew: it enters, as the flow's
	// re-entry allows (here never again, so only `already` enters).
	setTier(t, e, already, "Silver")
	e.Advance(time.Minute)
	scanFlows(t, e)
	setTier(t, e, already, "Gold")
	e.Advance(time.Minute)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); !slices.Equal(got, []int64{later.ID, already.ID}) {
		t.Errorf("entered %v, want %d then %d", got, later.ID, already.ID)
	}
}

// TestFlowDateTrigger: a birthday flow enters the contact on the day, at
// the trigger's time in the contact's zone (D21, D17), once.
func TestFlowDateTrigger(t *testing.T) {
	e := apitest.New(t)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "birthday", CustomDataType: parley.CustomDate})
	la, _ := time.LoadLocation("America/Los_Angeles")
	e.SetNow(time.Date(2026, 12, 1, 9, 0, 0, 0, la))
	// 415: San Francisco, Pacific time.
	bday := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155557201"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true),
			CustomData: parley.Some(json.RawMessage(`{"birthday":"1990-12-01"}`))}})
	e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155557202"),
		UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(`{"birthday":"1990-12-05"}`))}})
	f := mustFlow(t, e, "Birthday", `{"type":"date","field_name":"birthday","time":"10:00"}`, `[{"type":"send","body":"Happy birthday!"}]`)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); len(got) != 0 {
		t.Fatalf("entered before 10:00 local: %v", got)
	}
	e.Advance(59 * time.Minute)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); len(got) != 0 {
		t.Fatalf("entered at 09:59 local: %v", got)
	}
	e.Advance(2 * time.Minute)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); !slices.Equal(got, []int64{bday.ID}) {
		t.Fatalf("entered %v at 10:01, want %d", got, bday.ID)
	}
	if got := flowMessages(t, e, bday.ID); !slices.Equal(got, []string{"Happy birthday!"}) {
		t.Errorf("messages %q", got)
	}
	e.Advance(time.Hour)
	scanFlows(t, e)
	if got := entered(t, e, f.ID); len(got) != 1 {
		t.Errorf("entered again: %v", got)
	}
}

// TestFlowWaitUntilAndCriteriaBranch: wait_until waits for the next such
// time in the contact's zone; a branch on D14 criteria picks the path
// (D21).
func TestFlowWaitUntilAndCriteriaBranch(t *testing.T) {
	e := apitest.New(t)
	ny, _ := time.LoadLocation("America/New_York")
	e.SetNow(time.Date(2026, 12, 1, 18, 0, 0, 0, ny))
	f := mustFlow(t, e, "Morning", `{"type":"event","name":"signup"}`,
		`[{"type":"wait_until","time":"09:30"},`+
			`{"type":"branch","if":{"criteria":[{"attribute":{"dimension_type":1,"field_name":"first_name","field_type":3},"operator_type":10,"and_group_num":1}]},"else_step":3},`+
			`{"type":"send","body":"You have a name","message_type":"TRANSACTIONAL"},`+
			`{"type":"send","body":"Good morning","message_type":"TRANSACTIONAL"}]`)
	// 212: New York.
	named := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+12125557301"),
		UserFields: parley.UserFields{FirstName: parley.Some("Ada"), MessagingConsent: parley.Some(true)}})
	anon := consenting(t, e, "+12125557302", yes)
	for _, u := range []*parley.User{named, anon} {
		if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(u.ID), Name: parley.Some("signup")}); err != nil {
			t.Fatal(err)
		}
	}
	runFlows(t, e)
	runs, _, _ := e.A.ListRuns(e.Ctx, f.ID, parley.RunFilter{})
	for _, r := range runs {
		if want := time.Date(2026, 12, 2, 9, 30, 0, 0, ny); r.NextAt == nil || !r.NextAt.Equal(want) {
			t.Fatalf("run %d next_at %v, want %v", r.ID, r.NextAt, want)
		}
	}
	e.SetNow(time.Date(2026, 12, 2, 9, 30, 0, 0, ny))
	runFlows(t, e)
	if got := flowMessages(t, e, named.ID); !slices.Equal(got, []string{"You have a name", "Good morning"}) {
		t.Errorf("the named contact got %q, want the first-name branch, then the next step", got)
	}
	if got := flowMessages(t, e, anon.ID); !slices.Equal(got, []string{"Good morning"}) {
		t.Errorf("the contact without a name got %q", got)
	}
}
