package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// Flows (D21, issue #33) through signed requests. No worker runs in these
// tests: a test runs the due steps itself (Service.RunDueFlowSteps) and
// moves the injected clock for waits.

// flowMembers and runMembers are the members of a Flow and a Run, exactly.
var (
	flowMembers = []string{"id", "name", "trigger", "steps", "active", "reentry_seconds", "date_created",
		"date_updated", "stats", "steps_stats"}
	runMembers = []string{"id", "flow_id", "user_id", "status", "step", "entered_at", "next_at", "ended_at", "exit_reason"}
)

func raw(s string) parley.Optional[parley.RawMember] { return parley.Some(parley.RawMember(s)) }

// mustFlow makes an active flow of brand A.
func mustFlow(t *testing.T, e *apitest.Env, name, trigger, steps string) *parley.Flow {
	t.Helper()
	f, err := e.A.CreateFlow(e.Ctx, parley.FlowCreate{Name: parley.Some(name), Trigger: raw(trigger), Steps: raw(steps),
		Active: parley.Some(true)})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runFlows runs the due steps until none is due.
func runFlows(t *testing.T, e *apitest.Env) {
	t.Helper()
	for range 100 {
		n, err := e.App.Service.RunDueFlowSteps(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("flow steps still due after 100 batches")
}

// flowMessages returns the bodies of the contact's outbound messages,
// oldest first.
func flowMessages(t *testing.T, e *apitest.Env, userID int64) []string {
	t.Helper()
	msgs, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: userID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range slices.Backward(msgs) {
		if m.Direction == parley.DirectionOutbound {
			out = append(out, m.Body)
		}
	}
	return out
}

func consenting(t *testing.T, e *apitest.Env, phone string, consent *bool) *parley.User {
	t.Helper()
	in := parley.UserCreate{PhoneNumber: parley.Some(phone)}
	if consent != nil {
		in.MessagingConsent = parley.Some(*consent)
	}
	return e.MustCreateUser(t, e.A, in)
}

var yes, no = new(bool), new(bool)

func init() { *yes = true }

// TestFlowAPI: create, read, list, update and delete a flow through the
// API (D21): the members exactly, defaults, 404 for another brand's.
func TestFlowAPI(t *testing.T) {
	e := apitest.New(t)
	body := `{"name":"Welcome","trigger":{"type":"subscribed"},"steps":[{"type":"send","body":"Hi!"},` +
		`{"type":"wait","seconds":86400},{"type":"send","body":"Day two","message_type":"transactional"}]}`
	r := hardSend(t, e, "POST", "/api/v1/flows", body)
	if r.status != 201 {
		t.Fatalf("POST /flows: %d %s", r.status, r.body)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := slices.Clone(flowMembers)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("members %v, want %v", keys, want)
	}
	if string(got["active"]) != "false" || string(got["reentry_seconds"]) != "null" {
		t.Errorf("defaults: active %s, reentry_seconds %s; want false, null", got["active"], got["reentry_seconds"])
	}
	wantSteps := `[{"type":"send","body":"Hi!","media_item_uuids":[],"message_type":"MARKETING"},{"type":"wait","seconds":86400},` +
		`{"type":"send","body":"Day two","media_item_uuids":[],"message_type":"TRANSACTIONAL"}]`
	if string(got["steps"]) != wantSteps {
		t.Errorf("steps %s\nwant %s", got["steps"], wantSteps)
	}
	if s := string(got["steps_stats"]); s != `[{"reached":0,"sent":0,"skipped":0},{"reached":0,"sent":0,"skipped":0},{"reached":0,"sent":0,"skipped":0}]` {
		t.Errorf("steps_stats %s", s)
	}
	var f parley.Flow
	if err := json.Unmarshal(r.body, &f); err != nil {
		t.Fatal(err)
	}

	if _, err := e.B.GetFlow(e.Ctx, f.ID); !isAPIError(err, 404, parley.EFlowNotFound) {
		t.Errorf("brand B reads brand A's flow: %v", err)
	}
	wantError(t, hardSend(t, e, "GET", "/api/v1/flows/999999", ""), 404, parley.EFlowNotFound)
	list, _, err := e.A.ListFlows(e.Ctx, parley.FlowFilter{})
	if err != nil || len(list) != 1 || list[0].ID != f.ID {
		t.Fatalf("list: %v, %v", list, err)
	}
	if list, _, _ := e.B.ListFlows(e.Ctx, parley.FlowFilter{}); len(list) != 0 {
		t.Errorf("brand B lists %d flows of brand A", len(list))
	}

	up, err := e.A.UpdateFlow(e.Ctx, f.ID, parley.FlowUpdate{Name: parley.Some("Welcome series"), Active: parley.Some(true)})
	if err != nil || up.Name != "Welcome series" || !up.Active || len(up.Steps) != 3 {
		t.Fatalf("update: %+v, %v", up, err)
	}
	del, err := e.A.DeleteFlow(e.Ctx, f.ID)
	if err != nil || del.Active {
		t.Fatalf("delete: %+v, %v", del, err)
	}
	if _, err := e.A.GetFlow(e.Ctx, f.ID); !isAPIError(err, 404, parley.EFlowNotFound) {
		t.Errorf("deleted flow still read: %v", err)
	}
}

// TestFlowValidationStoresNothing: bad input → 422 naming the member, and
// nothing is stored (D21, D3).
func TestFlowValidationStoresNothing(t *testing.T) {
	e := apitest.New(t)
	before := e.State(t)
	for _, c := range []struct{ body, field string }{
		{`{"trigger":{"type":"created"},"steps":[{"type":"send","body":"x"}]}`, "name"},
		{`{"name":"x","trigger":{"type":"created"},"steps":[{"type":"branch","if":{"criteria":[{"attribute":{"dimension_type":1,"field_name":"city","field_type":3},"operator_type":12,"int_field_value":3,"and_group_num":1}]}}]}`, "steps[0].if.criteria[0].operator_type"},
		{`{"name":"x","steps":[{"type":"send","body":"x"}]}`, "trigger"},
		{`{"name":"x","trigger":{"type":"created"},"steps":[{"type":"send","body":"x"},{"type":"wait","seconds":0}]}`, "steps[1].seconds"},
		{`{"name":"x","trigger":{"type":"keyword","keyword":"STOP"},"steps":[{"type":"send","body":"x"}]}`, "trigger.keyword"},
		{`{"name":"x","trigger":{"type":"created"},"steps":[],"stats":{}}`, "stats"},
	} {
		r := hardSend(t, e, "POST", "/api/v1/flows", c.body)
		msg := wantError(t, r, 422, parley.EValidation)
		if !strings.HasPrefix(msg, c.field+":") {
			t.Errorf("%s: message %q does not name %s", c.body, msg, c.field)
		}
	}
	r := hardSend(t, e, "POST", "/api/v1/flows", `{"name":"x","trigger":{"type":"created"},"steps":[{"type":"send","media_item_uuids":["6f1e0a3c-1d2b-4c5d-8e9f-0a1b2c3d4e5f"]}]}`)
	if msg := wantError(t, r, 422, parley.EInvalidMediaItem); !strings.HasPrefix(msg, "steps[0].media_item_uuids[0]:") {
		t.Errorf("media of another brand: %q does not name the step's member", msg)
	}
	if after := e.State(t); after != before {
		t.Errorf("a refused flow changed the database:\n%s", after)
	}
}

// TestFlowSendWaitSend: a contact who subscribes enters; the first send
// goes at once, the second after the wait; the run completes and the
// stats count it (D21).
func TestFlowSendWaitSend(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "Welcome", `{"type":"subscribed"}`,
		`[{"type":"send","body":"Welcome!"},{"type":"wait","seconds":2},{"type":"send","body":"Still here?"}]`)
	u := consenting(t, e, "+14155557001", yes)
	runFlows(t, e)
	if got := flowMessages(t, e, u.ID); !slices.Equal(got, []string{"Welcome!"}) {
		t.Fatalf("after entering: %q", got)
	}
	e.Advance(time.Second)
	runFlows(t, e)
	if got := flowMessages(t, e, u.ID); len(got) != 1 {
		t.Fatalf("the wait did not hold: %q", got)
	}
	e.Advance(time.Second)
	runFlows(t, e)
	if got := flowMessages(t, e, u.ID); !slices.Equal(got, []string{"Welcome!", "Still here?"}) {
		t.Fatalf("after the wait: %q", got)
	}
	runs, _, err := e.A.ListRuns(e.Ctx, f.ID, parley.RunFilter{UserID: u.ID})
	if err != nil || len(runs) != 1 || runs[0].Status != parley.RunCompleted || runs[0].EndedAt == nil {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
	got, _ := e.A.GetFlow(e.Ctx, f.ID)
	if got.Stats != (parley.FlowStats{Entered: 1, Completed: 1, Sent: 2}) {
		t.Errorf("stats %+v", got.Stats)
	}
	if want := []parley.FlowStepStats{{Reached: 1, Sent: 1}, {Reached: 1}, {Reached: 1, Sent: 1}}; !slices.Equal(got.StepsStats, want) {
		t.Errorf("steps_stats %+v, want %+v", got.StepsStats, want)
	}
	msgs, _, _ := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID})
	for _, m := range msgs {
		if m.FlowID == nil || *m.FlowID != f.ID {
			t.Errorf("message %d flow_id %v, want %d", m.ID, m.FlowID, f.ID)
		}
	}
	// Each step happened once: running again sends nothing more.
	e.Advance(time.Hour)
	runFlows(t, e)
	if got := flowMessages(t, e, u.ID); len(got) != 2 {
		t.Errorf("a completed run sent again: %q", got)
	}
}

// TestFlowConsentAtSendTime: a MARKETING step needs consent true when it
// runs, else it is skipped and the run goes on (D21, D16); TRANSACTIONAL
// goes without express consent.
func TestFlowConsentAtSendTime(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "On create", `{"type":"created"}`,
		`[{"type":"send","body":"Offer"},{"type":"send","body":"Receipt","message_type":"TRANSACTIONAL"}]`)
	u := consenting(t, e, "+14155557002", nil)
	runFlows(t, e)
	if got := flowMessages(t, e, u.ID); !slices.Equal(got, []string{"Receipt"}) {
		t.Fatalf("messages %q, want only the transactional one", got)
	}
	got, _ := e.A.GetFlow(e.Ctx, f.ID)
	if want := []parley.FlowStepStats{{Reached: 1, Skipped: 1}, {Reached: 1, Sent: 1}}; !slices.Equal(got.StepsStats, want) {
		t.Errorf("steps_stats %+v, want %+v", got.StepsStats, want)
	}
	if got.Stats.Completed != 1 {
		t.Errorf("stats %+v: the run did not go on to complete", got.Stats)
	}
}

// TestFlowStopEndsRuns: STOP ends the contact's runs exited, and deleting
// a contact does too (D21).
func TestFlowStopEndsRuns(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "Series", `{"type":"subscribed"}`,
		`[{"type":"wait","seconds":3600},{"type":"send","body":"later"}]`)
	u1 := consenting(t, e, "+14155557003", yes)
	u2 := consenting(t, e, "+14155557004", yes)
	runFlows(t, e)
	inbound(t, e, u1.PhoneNumber, "stop")
	if _, err := e.A.DeleteUser(e.Ctx, u2.ID); err != nil {
		t.Fatal(err)
	}
	e.Advance(2 * time.Hour)
	runFlows(t, e)
	runs, _, err := e.A.ListRuns(e.Ctx, f.ID, parley.RunFilter{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	reasons := map[int64]string{}
	for _, r := range runs {
		if r.Status != parley.RunExited || r.ExitReason == nil {
			t.Fatalf("run %+v not exited", r)
		}
		reasons[r.UserID] = *r.ExitReason
	}
	if reasons[u1.ID] != "stop" || reasons[u2.ID] != "contact_deleted" {
		t.Errorf("exit reasons %v", reasons)
	}
	if got := flowMessages(t, e, u1.ID); slices.Contains(got, "later") {
		t.Errorf("a contact who sent STOP got the flow's message: %q", got)
	}
	got, _ := e.A.GetFlow(e.Ctx, f.ID)
	if got.Stats != (parley.FlowStats{Entered: 2, Exited: 2}) {
		t.Errorf("stats %+v", got.Stats)
	}
}

// inbound simulates a text from phone to brand A (D12).
func inbound(t *testing.T, e *apitest.Env, phone, body string) {
	t.Helper()
	if _, err := e.A.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some(phone), Body: parley.Some(body)}); err != nil {
		t.Fatal(err)
	}
}

// TestFlowKeywordTrigger: a text that is exactly the keyword, any case,
// enters the contact and sets consent true (D21); another text does not.
func TestFlowKeywordTrigger(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "Join", `{"type":"keyword","keyword":"JOIN"}`, `[{"type":"send","body":"You're in!"}]`)
	inbound(t, e, "+14155557005", "join now")
	inbound(t, e, "+14155557006", " Join ")
	runFlows(t, e)
	runs, _, _ := e.A.ListRuns(e.Ctx, f.ID, parley.RunFilter{})
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1 (only the exact keyword)", len(runs))
	}
	u, err := e.A.GetUser(e.Ctx, runs[0].UserID)
	if err != nil || u.PhoneNumber != "+14155557006" || u.MessagingConsent == nil || !*u.MessagingConsent {
		t.Fatalf("the keyword's sender: %+v, %v", u, err)
	}
	if got := flowMessages(t, e, u.ID); !slices.Equal(got, []string{"You're in!"}) {
		t.Errorf("messages %q", got)
	}
}

// TestFlowEventTriggerAndBranch: POST /events enters the contact; a branch
// on an event since entry and on a reply picks the path (D21).
func TestFlowEventTriggerAndBranch(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "Cart", `{"type":"event","name":"cart_abandoned"}`,
		`[{"type":"wait","seconds":60},{"type":"branch","if":{"event":"order_placed"},"else_step":3},`+
			`{"type":"send","body":"Thanks for ordering"},{"type":"send","body":"Forgot something?"}]`)
	buyer := consenting(t, e, "+14155557007", yes)
	idler := consenting(t, e, "+14155557008", yes)
	for _, u := range []*parley.User{buyer, idler} {
		r := hardSend(t, e, "POST", "/api/v1/events", fmt.Sprintf(`{"user_id":%d,"name":"cart_abandoned","properties":{"total":42}}`, u.ID))
		if r.status != 202 {
			t.Fatalf("POST /events: %d %s", r.status, r.body)
		}
	}
	runFlows(t, e)
	if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(buyer.ID), Name: parley.Some("order_placed")}); err != nil {
		t.Fatal(err)
	}
	e.Advance(time.Minute)
	runFlows(t, e)
	if got := flowMessages(t, e, buyer.ID); !slices.Equal(got, []string{"Thanks for ordering", "Forgot something?"}) {
		t.Errorf("buyer got %q", got)
	}
	if got := flowMessages(t, e, idler.ID); !slices.Equal(got, []string{"Forgot something?"}) {
		t.Errorf("idler got %q", got)
	}
	got, _ := e.A.GetFlow(e.Ctx, f.ID)
	if got.Stats.Completed != 2 || got.StepsStats[2].Reached != 1 || got.StepsStats[3].Reached != 2 {
		t.Errorf("stats %+v %+v", got.Stats, got.StepsStats)
	}
	for _, c := range []struct{ body, field string }{
		{`{"user_id":1,"name":"Bad Name"}`, "name"},
		{`{"name":"x"}`, "user_id"},
		{fmt.Sprintf(`{"user_id":%d,"name":"x","properties":[1]}`, buyer.ID), "properties"},
		{fmt.Sprintf(`{"user_id":%d,"name":"x","properties":{"a":"%s"}}`, buyer.ID, strings.Repeat("x", 8200)), "properties"},
	} {
		msg := wantError(t, hardSend(t, e, "POST", "/api/v1/events", c.body), 422, parley.EValidation)
		if !strings.HasPrefix(msg, c.field+":") {
			t.Errorf("%s: %q does not name %s", c.body, msg, c.field)
		}
	}
	wantError(t, hardSend(t, e, "POST", "/api/v1/events", `{"user_id":999999,"name":"x"}`), 404, parley.EUserNotFound)
}

// TestFlowReentry: a contact enters once when reentry_seconds is null,
// and again only reentry_seconds after its last entry otherwise (D21).
func TestFlowReentry(t *testing.T) {
	e := apitest.New(t)
	once := mustFlow(t, e, "Once", `{"type":"event","name":"visit"}`, `[{"type":"send","body":"a","message_type":"TRANSACTIONAL"}]`)
	daily, err := e.A.CreateFlow(e.Ctx, parley.FlowCreate{Name: parley.Some("Daily"), Trigger: raw(`{"type":"event","name":"visit"}`),
		Steps: raw(`[{"type":"send","body":"b","message_type":"TRANSACTIONAL"}]`), Active: parley.Some(true), ReentrySeconds: parley.Some[int64](86400)})
	if err != nil {
		t.Fatal(err)
	}
	u := consenting(t, e, "+14155557009", yes)
	visit := func() {
		if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(u.ID), Name: parley.Some("visit")}); err != nil {
			t.Fatal(err)
		}
		runFlows(t, e)
	}
	visit()
	e.Advance(time.Hour)
	visit()
	e.Advance(24 * time.Hour)
	visit()
	for _, c := range []struct {
		f    *parley.Flow
		want int64
	}{{once, 1}, {daily, 2}} {
		got, _ := e.A.GetFlow(e.Ctx, c.f.ID)
		if got.Stats.Entered != c.want {
			t.Errorf("%s: entered %d, want %d", c.f.Name, got.Stats.Entered, c.want)
		}
	}
}

// TestFlowRunKeepsItsSteps: a run keeps the steps it entered with after
// the flow's steps change; deleting the flow cancels its active runs (D21).
func TestFlowRunKeepsItsSteps(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "V", `{"type":"event","name":"go"}`,
		`[{"type":"wait","seconds":10},{"type":"send","body":"old","message_type":"TRANSACTIONAL"}]`)
	early := consenting(t, e, "+14155557010", yes)
	if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(early.ID), Name: parley.Some("go")}); err != nil {
		t.Fatal(err)
	}
	runFlows(t, e)
	if _, err := e.A.UpdateFlow(e.Ctx, f.ID, parley.FlowUpdate{Steps: raw(`[{"type":"wait","seconds":10},{"type":"send","body":"new","message_type":"TRANSACTIONAL"}]`)}); err != nil {
		t.Fatal(err)
	}
	late := consenting(t, e, "+14155557011", yes)
	if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(late.ID), Name: parley.Some("go")}); err != nil {
		t.Fatal(err)
	}
	runFlows(t, e)
	waiting := consenting(t, e, "+14155557012", yes)
	e.Advance(10 * time.Second)
	runFlows(t, e)
	if got := flowMessages(t, e, early.ID); !slices.Equal(got, []string{"old"}) {
		t.Errorf("the run entered before the change got %q, want the old steps", got)
	}
	if got := flowMessages(t, e, late.ID); !slices.Equal(got, []string{"new"}) {
		t.Errorf("the run entered after the change got %q", got)
	}
	if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(waiting.ID), Name: parley.Some("go")}); err != nil {
		t.Fatal(err)
	}
	runFlows(t, e)
	if _, err := e.A.DeleteFlow(e.Ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	e.Advance(time.Minute)
	runFlows(t, e)
	if got := flowMessages(t, e, waiting.ID); len(got) != 0 {
		t.Errorf("a deleted flow's run sent %q", got)
	}
	if got := e.Snapshot(t, fmt.Sprintf(`SELECT status, exit_reason FROM flow_runs WHERE user_id = %d`, waiting.ID)); got != "canceled|flow_deleted|\n" {
		t.Errorf("run of the deleted flow: %q; want canceled by the deletion", got)
	}
}

// TestFlowPlaceholders: a flow's messages are filled in per contact, and
// in an event-triggered flow with the event's properties; a placeholder
// the flow cannot fill is refused when saved (D21).
func TestFlowPlaceholders(t *testing.T) {
	e := apitest.New(t)
	order := mustFlow(t, e, "Order", `{"type":"event","name":"order_placed"}`,
		`[{"type":"send","body":"Thanks {{first_name | \"there\"}}, your order of ${{event.total}} is in","message_type":"TRANSACTIONAL"}]`)
	ada := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155557401"),
		UserFields: parley.UserFields{FirstName: parley.Some("Ada")}})
	anon := consenting(t, e, "+14155557402", nil)
	for _, u := range []*parley.User{ada, anon} {
		if _, err := e.A.RecordEvent(e.Ctx, parley.EventCreate{UserID: parley.Some(u.ID), Name: parley.Some("order_placed"),
			Properties: parley.Some(parley.RawMember(`{"total":42.5}`))}); err != nil {
			t.Fatal(err)
		}
	}
	runFlows(t, e)
	if got := flowMessages(t, e, ada.ID); !slices.Equal(got, []string{"Thanks Ada, your order of $42.5 is in"}) {
		t.Errorf("Ada got %q", got)
	}
	if got := flowMessages(t, e, anon.ID); !slices.Equal(got, []string{"Thanks there, your order of $42.5 is in"}) {
		t.Errorf("the contact without a name got %q", got)
	}
	for _, c := range []struct{ trigger, body string }{
		{`{"type":"created"}`, `Your {{event.total}}`},
		{`{"type":"created"}`, `Hi {{custom.no_such_field}}`},
		{`{"type":"created"}`, `Hi {{frist_name}}`},
	} {
		body := fmt.Sprintf(`{"name":"x","trigger":%s,"steps":[{"type":"wait","seconds":1},{"type":"send","body":%q}]}`, c.trigger, c.body)
		if msg := wantError(t, hardSend(t, e, "POST", "/api/v1/flows", body), 422, parley.EValidation); !strings.HasPrefix(msg, "steps[1].body:") {
			t.Errorf("%s: %q does not name steps[1].body", c.body, msg)
		}
	}
	// A trigger that is no event takes {{event.…}} away: refused.
	r := hardSend(t, e, "POST", fmt.Sprintf("/api/v1/flows/%d", order.ID), `{"trigger":{"type":"created"}}`)
	if msg := wantError(t, r, 422, parley.EValidation); !strings.HasPrefix(msg, "steps[0].body:") {
		t.Errorf("changing the trigger: %q does not name steps[0].body", msg)
	}
}

// TestFlowAnswersCarryStepsStats: every answer that is a Flow carries
// steps_stats, one entry per step with the counts so far (D1: no member is
// null or missing; D21): an update with an Idempotency-Key, whose answer is
// rendered in its transaction (D13), and its replay included, and the
// deleted flow answered as it was last.
func TestFlowAnswersCarryStepsStats(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "Counted", `{"type":"created"}`,
		`[{"type":"send","body":"Receipt","message_type":"TRANSACTIONAL"},{"type":"wait","seconds":60},{"type":"send","body":"Later","message_type":"TRANSACTIONAL"}]`)
	consenting(t, e, "+14155557013", nil)
	runFlows(t, e)
	want := `[{"reached":1,"sent":1,"skipped":0},{"reached":1,"sent":0,"skipped":0},{"reached":0,"sent":0,"skipped":0}]`
	stepsStats := func(what string, r authResp, status int) {
		t.Helper()
		if r.status != status {
			t.Fatalf("%s: %d %s", what, r.status, r.body)
		}
		var got struct {
			StepsStats json.RawMessage `json:"steps_stats"`
		}
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		if string(got.StepsStats) != want {
			t.Errorf("%s: steps_stats %s, want %s", what, got.StepsStats, want)
		}
	}
	path := fmt.Sprintf("/api/v1/flows/%d", f.ID)
	stepsStats("GET", hardSend(t, e, "GET", path, ""), 200)
	stepsStats("keyed update", keyed(t, e, "POST", path, `{"name":"Counted too"}`, "flow-update"), 200)
	stepsStats("keyed update replayed", keyed(t, e, "POST", path, `{"name":"Counted too"}`, "flow-update"), 200)
	stepsStats("update", hardSend(t, e, "POST", path, `{"name":"Counted again"}`), 200)
	stepsStats("delete", hardSend(t, e, "DELETE", path, ""), 200)
}
