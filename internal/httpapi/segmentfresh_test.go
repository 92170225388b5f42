package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestSegmentCountFreshOnEveryNode: segment answers come from each node's
// audience engine (issue #34), which catches up every write committed
// before a request: a new member counts at once, on the node that wrote
// it and on another node of the same database; a changed or deleted one
// leaves at once (D14: "fresh after every write").
func TestSegmentCountFreshOnEveryNode(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	other := apitest.Attach(t, e)
	for i := range 3 {
		segUser(t, e, 300+i, "gold")
	}
	seg, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Gold"), Criteria: parley.Some(parley.Criteria{segTier("gold")})})
	if err != nil {
		t.Fatal(err)
	}
	count := func(env *apitest.Env) int64 {
		t.Helper()
		c, err := env.A.CountSegment(env.Ctx, seg.ID)
		if err != nil {
			t.Fatal(err)
		}
		return c.Count
	}
	// Both nodes have loaded the brand.
	if a, b := count(e), count(other); a != 3 || b != 3 {
		t.Fatalf("counts %d, %d; want 3 on both nodes", a, b)
	}

	u := segUser(t, e, 310, "GOLD")
	if a, b := count(e), count(other); a != 4 || b != 4 {
		t.Fatalf("after a new member: counts %d, %d; want 4 on both nodes", a, b)
	}
	p, err := other.A.PreviewSegment(other.Ctx, []parley.SegmentCriterion{segTier("gold")})
	if err != nil || p.Count != 4 || len(p.Sample) != 4 || p.Sample[3].ID != u.ID {
		t.Fatalf("preview on the other node = %+v, %v", p, err)
	}

	// A change made on the other node leaves the segment on the first.
	if _, err := other.A.UpdateUser(other.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
		CustomData: parley.Some(json.RawMessage(`{"tier":"silver"}`))}}); err != nil {
		t.Fatal(err)
	}
	if a, b := count(e), count(other); a != 3 || b != 3 {
		t.Fatalf("after a change: counts %d, %d; want 3 on both nodes", a, b)
	}
	users, _, err := e.A.SegmentUsers(e.Ctx, seg.ID, 10, "")
	if err != nil || len(users) != 3 {
		t.Fatalf("members = %d, %v; want 3", len(users), err)
	}
	if _, err := e.A.DeleteUser(e.Ctx, users[0].ID); err != nil {
		t.Fatal(err)
	}
	if a, b := count(e), count(other); a != 2 || b != 2 {
		t.Fatalf("after a delete: counts %d, %d; want 2 on both nodes", a, b)
	}
	if n, _, _ := e.App.Service.Audience().Stats(e.BrandA.ID); n == 0 {
		t.Error("the engine did not answer: brand A is not in memory")
	}
}
