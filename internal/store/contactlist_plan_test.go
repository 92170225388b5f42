package store

import (
	"context"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestContactListPlans (issue #32): each filter and sort of the console's
// contacts list reads its index of migration 00036 (or 00009/00015) in
// order, on SQLite, whose plans do not depend on statistics; a filter no
// index serves reads a window along the sort's index. The PostgreSQL side
// is measured by BenchmarkConsolePages. The order by latest activity has
// no index (00058): the audience engine answers it (audience's Engine.ContactList,
// TestContactListActivityFromMemory), SQL only while a brand loads.
func TestContactListPlans(t *testing.T) {
	t.Parallel()
	db := planDB(t)
	ctx := context.Background()
	crit := []parley.SegmentCriterion{{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionContact,
		FieldName: "city", FieldType: parley.CustomString}, OperatorType: parley.OpEquals, StrFieldValue: new("Brooklyn")}}
	after := &ContactKey{Name: "ada", Activity: 5, ID: 10}
	for _, c := range []struct {
		name   string
		q      ContactQuery
		index  string
		sorted bool // the outer query sorts a window's rows (at most ContactWindow)
	}{
		{"newest", ContactQuery{}, "users_brand_live_id", false},
		{"oldest, after", ContactQuery{Sort: parley.SortOldest, After: after}, "users_brand_live_id", false},
		{"opted out", ContactQuery{Consent: parley.ConsentOut}, "users_brand_consent", false},
		{"not given, back", ContactQuery{Consent: parley.ConsentNone, After: after, Back: true}, "users_brand_consent", false},
		{"state", ContactQuery{StateCode: "CA"}, "users_brand_state", false},
		{"name", ContactQuery{Sort: parley.SortName, After: after}, "users_brand_name_sort", false},
		{"name, opted out", ContactQuery{Sort: parley.SortName, Consent: parley.ConsentOut}, "users_brand_name_sort", true},
		{"criteria, newest", ContactQuery{Audience: Audience{Criteria: crit}}, "users_brand_live_id", true},
	} {
		c.q.Limit = 50
		text, args, err := db.contactListSQL(ctx, 1, &c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		p := db.Plan(ctx, text, args)
		if !strings.Contains(p, c.index) {
			t.Errorf("%s: plan %q, want %s", c.name, p, c.index)
		}
		// A page after a cursor starts at it in the index, not at the top.
		if c.q.After != nil && !c.sorted && !strings.Contains(p, ">?)") && !strings.Contains(p, "<?)") {
			t.Errorf("%s: plan %q reads the index from its start", c.name, p)
		}
		if n := strings.Count(p, "TEMP B-TREE"); (c.sorted && n > 1) || (!c.sorted && n > 0) {
			t.Errorf("%s: plan %q sorts more than a window", c.name, p)
		}
		if c.sorted && !strings.Contains(p, "SCAN u") && !strings.Contains(p, "CO-ROUTINE") && !strings.Contains(p, "MATERIALIZE") {
			t.Errorf("%s: plan %q, want the window read as a subquery", c.name, p)
		}
	}
}
