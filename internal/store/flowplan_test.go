package store

import (
	"context"
	"strings"
	"testing"
)

// TestFlowQueryPlans: the runner's reads of due runs are answered from
// the partial index of active runs (D21: a million waiting runs cost
// nothing while none is due).
func TestFlowQueryPlans(t *testing.T) {
	t.Parallel()
	db := planDB(t)
	for _, c := range []struct {
		name, query, index string
		args               []any
	}{
		{"due runs", qDueRuns, "flow_runs_due", []any{1, 250}},
		{"next due", qNextDue, "flow_runs_due", nil},
	} {
		p := db.Plan(context.Background(), c.query, c.args)
		if !strings.Contains(p, c.index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want %s and no sort", c.name, p, c.index)
		}
	}
}
