package store

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestFlowQueryPlans: the runner's reads of due runs are answered from
// the partial index of active runs (D21: a million waiting runs cost
// nothing while none is due), on SQLite, whose plans do not depend on
// statistics.
func TestFlowQueryPlans(t *testing.T) {
	if os.Getenv("PARLEY_TEST_ENGINE") == "postgres" {
		t.Skip("SQLite's plans")
	}
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+t.TempDir()+"/p.db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, query, index string
		args               []any
	}{
		{"due runs", qDueRuns, "flow_runs_due", []any{1, 250}},
		{"next due", qNextDue, "flow_runs_due", nil},
	} {
		p := queryPlan(t, db, c.query, c.args...)
		if !strings.Contains(p, c.index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want %s and no sort", c.name, p, c.index)
		}
	}
}

// queryPlan returns SQLite's plan of query, its steps joined by "; ".
func queryPlan(t *testing.T, db *DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.read.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("plan of %s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}
