package httpapi_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestFlowFailingRunHoldsNoOneUp (issue #33): a run whose step fails (here
// its flow's stored steps no longer decode) is put off on its own, and
// the runs beside it in its batch go on; it is tried again later and,
// after ten failures, ends exited with the reason "error".
func TestFlowFailingRunHoldsNoOneUp(t *testing.T) {
	e := apitest.New(t)
	broken := mustFlow(t, e, "Broken", `{"type":"subscribed"}`, `[{"type":"send","body":"Never"}]`)
	mustFlow(t, e, "Fine", `{"type":"subscribed"}`, `[{"type":"send","body":"Hello"}]`)
	u := consenting(t, e, "+14155558101", yes)
	// The run keeps the steps of the version it entered with (D21): those
	// are made not to decode; the flow's newer version, which the API
	// shows, is fine.
	if _, err := e.A.UpdateFlow(e.Ctx, broken.ID, parley.FlowUpdate{Steps: raw(`[{"type":"send","body":"Later"}]`)}); err != nil {
		t.Fatal(err)
	}
	q := `UPDATE flow_versions SET steps = '[{"type":' WHERE flow_id = ? AND version = 1`
	if e.App.DB.Engine() == "postgres" {
		q = strings.Replace(q, "?", "$1", 1)
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, q, broken.ID); err != nil {
		t.Fatal(err)
	}
	runFlows(t, e)
	if got := flowMessages(t, e, u.ID); !slices.Equal(got, []string{"Hello"}) {
		t.Fatalf("the run beside the failing one: messages %q", got)
	}
	run := func() *parley.FlowRun {
		t.Helper()
		runs, _, err := e.A.ListRuns(e.Ctx, broken.ID, parley.RunFilter{UserID: u.ID})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs %v, %v", runs, err)
		}
		return runs[0]
	}
	r := run()
	if r.Status != parley.RunActive || r.NextAt == nil || !r.NextAt.After(e.Now()) {
		t.Fatalf("the failing run: %+v, want active and put off", r)
	}
	for i := range 9 {
		if r := run(); r.Status != parley.RunActive {
			t.Fatalf("after %d failures: %+v, want still active", i+1, r)
		}
		e.Advance(time.Hour)
		runFlows(t, e)
	}
	r = run()
	if r.Status != parley.RunExited || r.ExitReason == nil || *r.ExitReason != "error" {
		t.Fatalf("after ten failures: %+v, want exited with reason error", r)
	}
	f, err := e.A.GetFlow(e.Ctx, broken.ID)
	if err != nil || f.Stats.Exited != 1 || f.Stats.Active != 0 {
		t.Errorf("stats %+v, %v", f.Stats, err)
	}
}
