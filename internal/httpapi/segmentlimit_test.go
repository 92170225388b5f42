package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Issue #31 item 1: D14's limit of 200 criteria counts each membership
// criterion with the criteria of the segment it names, recursively, and
// holds wherever a segment is saved or used.

// ladderCriteria is 50 membership criteria naming id: one rung of L1…L4.
func ladderCriteria(id int64) parley.Optional[parley.Criteria] {
	cs := make(parley.Criteria, parley.MaxCriteria)
	for i := range cs {
		cs[i] = segMember(id)
	}
	return parley.Some(cs)
}

// storeCriteria writes a segment's criteria through the store, as a
// database written before the limit held would have them.
func storeCriteria(t *testing.T, e *campEnv, id int64, criteria parley.Optional[parley.Criteria]) {
	t.Helper()
	err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		seg, err := tx.FindSegment(e.Ctx, e.BrandA.ID, id)
		if err != nil {
			return err
		}
		seg.Criteria = criteria.Value
		return tx.UpdateSegment(e.Ctx, seg)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSegmentNestedLimit: the reproduction of issue #31 item 1. L1…L4
// created empty, then, top down, each made of 50 criteria naming the one
// below: the second step already pushes L4 over the limit and is refused
// (D14: an update of a segment others name). With the ladder written as an
// older database would hold it, every use of L4 answers 422: count, users,
// preview, export, campaign create; and a campaign stored before the
// limit ends canceled with its reason, once, instead of crashing the node.
func TestSegmentNestedLimit(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	campUsers(t, e, 2)
	var l [5]*parley.Segment
	for i := 1; i <= 4; i++ {
		l[i] = must(e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("L" + strconv.Itoa(i))}))
	}
	// L4 = 50 × L3 (empty): 100 criteria, within the limit.
	if _, err := e.A.UpdateSegment(e.Ctx, l[4].ID, parley.SegmentUpdate{Criteria: ladderCriteria(l[3].ID)}); err != nil {
		t.Fatalf("L4 := 50 × L3: %v", err)
	}
	// L3 = 50 × L2 would make L4 50 + 50 × 100 = 5,050.
	before := e.State(t)
	_, err := e.A.UpdateSegment(e.Ctx, l[3].ID, parley.SegmentUpdate{Criteria: ladderCriteria(l[2].ID)})
	if apiCode(err) != parley.EValidation || !strings.Contains(err.Error(), "criteria: segment "+strconv.FormatInt(l[4].ID, 10)+" names this segment") {
		t.Errorf("L3 := 50 × L2 under L4: %v, want 422 validation_error on criteria naming segment %d", err, l[4].ID)
	}
	if e.State(t) != before {
		t.Error("a refused update changed the database")
	}
	// A segment that names L3 through a POINT IN TIME segment is not
	// pushed: the frozen one counts 1.
	if _, err := e.A.UpdateSegment(e.Ctx, l[4].ID, parley.SegmentUpdate{Type: parley.Some(parley.SegmentPointInTime)}); err != nil {
		t.Fatalf("L4 frozen: %v", err)
	}
	if _, err := e.A.UpdateSegment(e.Ctx, l[3].ID, parley.SegmentUpdate{Criteria: ladderCriteria(l[2].ID)}); err != nil {
		t.Fatalf("L3 := 50 × L2 with L4 frozen: %v", err)
	}
	// Making L4 STANDARD again would hold 5,050: refused on type.
	_, err = e.A.UpdateSegment(e.Ctx, l[4].ID, parley.SegmentUpdate{Type: parley.Some(parley.SegmentStandard)})
	if apiCode(err) != parley.EValidation || !strings.Contains(err.Error(), "int_field_value") {
		t.Errorf("L4 made STANDARD over 5,050 criteria: %v, want 422 validation_error", err)
	}

	// The ladder as a database written before the limit holds it: L4
	// expands to about 6.4 million criteria.
	storeCriteria(t, e, l[1].ID, parley.Some(parley.Criteria{}))
	for i := 2; i <= 4; i++ {
		storeCriteria(t, e, l[i].ID, ladderCriteria(l[i-1].ID))
	}
	campExec(t, e, `UPDATE segments SET type = 'STANDARD' WHERE id = ?`, l[4].ID)
	want := func(what string, err error) {
		t.Helper()
		if apiCode(err) != parley.EValidation || !strings.Contains(err.Error(), "200 criteria") {
			t.Errorf("%s of L4: %v, want 422 validation_error naming the limit of 200 criteria", what, err)
		}
	}
	_, err = e.A.CountSegment(e.Ctx, l[4].ID)
	want("count", err)
	_, _, err = e.A.SegmentUsers(e.Ctx, l[4].ID, 10, "")
	want("users", err)
	_, err = e.A.PreviewSegment(e.Ctx, []parley.SegmentCriterion{segMember(l[4].ID)})
	want("preview", err)
	resp, err := e.A.Do(e.Ctx, http.MethodGet, "/users/export?segment_id="+strconv.FormatInt(l[4].ID, 10), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want("export", resp.Err())
	before = campState(t, e)
	_, err = e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("Ladder"), SegmentID: parley.Some(l[4].ID),
		Body: parley.Some("hi")})
	want("campaign create", err)
	if err != nil && !strings.Contains(err.Error(), "segment_id: segment "+strconv.FormatInt(l[4].ID, 10)) {
		t.Errorf("campaign create: %v, want the error on segment_id", err)
	}
	if campState(t, e) != before {
		t.Error("a refused campaign changed the database")
	}
	// The store's compiler stops at the limit too, whoever calls it.
	_, err = e.App.DB.CountAudience(e.Ctx, e.BrandA.ID, store.Audience{SegmentID: l[4].ID})
	if parley.ErrorCode(err) != parley.EValidation {
		t.Errorf("store count of L4: %v, want validation_error", err)
	}

	// A campaign stored before the limit held, due now: the scheduler
	// cancels it with the reason, writes no message, and is done with it.
	var c *parley.Campaign
	err = e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		c = &parley.Campaign{BrandID: e.BrandA.ID, Name: "Stored before", SegmentID: l[4].ID, Body: "hi",
			Type: parley.TypeMarketing, SendAt: parley.NewTime(e.Now().Add(-time.Second))}
		return tx.InsertCampaign(e.Ctx, c)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Errorf("ResolveDueCampaigns: %v, want nil: an unresolvable campaign is not a failure to retry", err)
	}
	got := must(e.A.GetCampaign(e.Ctx, c.ID))
	if got.Status != parley.CampaignCanceled || got.CancelReason == nil ||
		!strings.Contains(*got.CancelReason, "could not be resolved") || !strings.Contains(*got.CancelReason, "200 criteria") {
		t.Errorf("campaign %d: status %s, cancel_reason %v; want canceled with the reason", c.ID, got.Status, got.CancelReason)
	}
	if got.StartedAt != nil || got.Stats != (parley.CampaignStats{}) {
		t.Errorf("campaign %d started (%v) or counted (%+v)", c.ID, got.StartedAt, got.Stats)
	}
	if n := e.Count(t, "messages"); n != 0 {
		t.Errorf("%d messages written for an unresolvable campaign", n)
	}
	// It is not picked up again.
	before = campState(t, e)
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Errorf("second ResolveDueCampaigns: %v", err)
	}
	if campState(t, e) != before {
		t.Error("the scheduler touched the canceled campaign again")
	}
	// A campaign canceled through the API has no reason.
	mine := campCreate(t, e, "Mine")
	if got := must(e.A.CancelCampaign(e.Ctx, mine.ID)); got.CancelReason != nil {
		t.Errorf("API cancel: cancel_reason %q, want null", *got.CancelReason)
	}
}
