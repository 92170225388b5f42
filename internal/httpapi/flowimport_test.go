package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestFlowImportEntersTheBatch (D21, issue #33): an import enters its
// batch's contacts into the created and subscribed flows together, a
// statement per flow and chunk, with the rules of one at a time: every
// created contact enters the created flow once, and only those whose
// consent became true enter the subscribed flow — not one created without
// consent, not one whose consent was true already, not one a file names
// twice, and not again when the file is imported a second time. Each run
// started emits flow.entered, and the flow's stats count them all.
func TestFlowImportEntersTheBatch(t *testing.T) {
	e := apitest.New(t)
	impStart(t, e)
	rc := whNewReceiver(t, nil)
	whCreate(t, e.A, rc.URL(), parley.EventFlowEntered)
	subscribed := mustFlow(t, e, "Welcome", `{"type":"subscribed"}`, `[{"type":"wait","seconds":3600}]`)
	created := mustFlow(t, e, "Hello", `{"type":"created"}`, `[{"type":"wait","seconds":3600}]`)

	// Contacts before the import: one who consented already, one who
	// said no and now says yes, one who stays without consent.
	already := consenting(t, e, "+14153000000", yes)
	turned := consenting(t, e, "+14153000001", no)
	consenting(t, e, "+14153000002", nil)
	before := enteredCount(t, e, subscribed.ID) // already entered Welcome when created

	// More new contacts than one entering statement takes (500), across
	// the import's batches: a third consent, a third refuse, a third say
	// nothing.
	const fresh = 1300
	var file strings.Builder
	file.WriteString("phone_number,messaging_consent\n")
	file.WriteString("+14153000000,true\n+14153000001,true\n+14153000002,\n")
	consents := 0
	for i := range fresh {
		c := []string{"true", "false", ""}[i%3]
		if c == "true" {
			consents++
		}
		fmt.Fprintf(&file, "+1415310%04d,%s\n", i, c)
	}
	file.WriteString("+14153100000,true\n") // again: a duplicate row, rejected
	imp := impRun(t, e, e.A, file.String(), map[string]string{"on_duplicate": "update"})
	if imp.Status != parley.ImportCompleted || imp.Created != fresh {
		t.Fatalf("import = %+v, want completed with %d created", imp, fresh)
	}

	wantSubscribed := before + int64(consents) + 1 // and the one who turned
	if got := enteredCount(t, e, subscribed.ID); got != wantSubscribed {
		t.Errorf("Welcome entered %d, want %d", got, wantSubscribed)
	}
	f, err := e.A.GetFlow(e.Ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Stats.Entered != fresh+3 || f.Stats.Active != fresh+3 { // the three made by the API too
		t.Errorf("Hello stats = %+v, want %d entered and active", f.Stats, fresh+3)
	}
	for _, c := range []struct {
		u    *parley.User
		want int
	}{{already, 1}, {turned, 1}, {impUser(t, e, e.A, "+14153000002"), 0},
		{impUser(t, e, e.A, "+14153100000"), 1}, {impUser(t, e, e.A, "+14153100001"), 0}} {
		runs, _, err := e.A.ListRuns(e.Ctx, subscribed.ID, parley.RunFilter{UserID: c.u.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != c.want {
			t.Errorf("%s: %d runs of Welcome, want %d", c.u.PhoneNumber, len(runs), c.want)
		}
	}
	// One event per run, in the outbox as in the database.
	runsInDB := impQueryInt(t, e, `SELECT count(*) FROM flow_runs WHERE brand_id = ?`, e.BrandA.ID)
	if ev := impEvents(t, e, e.BrandA.ID)[parley.EventFlowEntered]; ev != runsInDB || runsInDB != wantSubscribed+fresh+3 {
		t.Errorf("%d flow.entered events and %d runs, want %d of each", ev, runsInDB, wantSubscribed+fresh+3)
	}

	// The same file again changes nobody's consent: nobody enters.
	impRun(t, e, e.A, file.String(), map[string]string{"on_duplicate": "update"})
	if n := impQueryInt(t, e, `SELECT count(*) FROM flow_runs WHERE brand_id = ?`, e.BrandA.ID); n != runsInDB {
		t.Errorf("%d runs after the same import again, want %d", n, runsInDB)
	}
}

func enteredCount(t *testing.T, e *apitest.Env, flowID int64) int64 {
	t.Helper()
	f, err := e.A.GetFlow(e.Ctx, flowID)
	if err != nil {
		t.Fatal(err)
	}
	return f.Stats.Entered
}

// TestFlowEntryIsOncePerContact (D21): one entering statement names a
// contact as often as its callers did and starts one run for it; a contact
// already in the flow does not enter again, and the stats count runs.
func TestFlowEntryIsOncePerContact(t *testing.T) {
	e := apitest.New(t)
	f := mustFlow(t, e, "Later", `{"type":"event","name":"later"}`, `[{"type":"wait","seconds":3600}]`)
	a, b := consenting(t, e, "+14153200001", yes), consenting(t, e, "+14153200002", yes)
	entry := store.FlowEntry{BrandID: e.BrandA.ID, FlowID: f.ID, Version: f.Version}
	enter := func(ids ...int64) int {
		t.Helper()
		var n int
		if err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
			runs, err := tx.EnterFlow(e.Ctx, entry, ids, nil)
			n = len(runs)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := enter(a.ID, a.ID, b.ID, a.ID); n != 2 {
		t.Errorf("%d runs for a, a, b, a; want 2", n)
	}
	if n := enter(b.ID, a.ID); n != 0 {
		t.Errorf("%d runs for contacts in the flow already; want 0", n)
	}
	if got := enteredCount(t, e, f.ID); got != 2 {
		t.Errorf("entered = %d, want 2", got)
	}
}
