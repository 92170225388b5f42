package store

import (
	"context"
	"strings"
	"testing"
)

// TestConsoleQueryPlans: each console read is answered from its index
// (D19: search over a million contacts answers fast because of them), on
// SQLite, whose plans do not depend on statistics. The PostgreSQL side is
// measured by BenchmarkConsolePages.
func TestConsoleQueryPlans(t *testing.T) {
	t.Parallel()
	db := planDB(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, query, index string
		args               []any
	}{
		{"newest", qRecentUsers, "users_brand_live_id", []any{1, 50}},
		{"phone prefix", qUsersPhoneRange, "users_brand_phone_live", []any{1, "+1415", "+1416", 50}},
		{"email", qUsersByEmail, "users_brand_email", []any{1, "a@b.c", 50}},
		{"first name", db.qUsersNameRange("first_name", false), "users_brand_first_name", []any{1, "ad", "ae", 50}},
		{"last name", db.qUsersNameRange("last_name", false), "users_brand_last_name", []any{1, "lo", "lp", 50}},
		{"first and last", db.qUsersNameRange("last_name", true), "users_brand_last_name", []any{1, "lo", "lp", "ada", 50}},
		// The inbox's views (issue #32): each a range of its index, in order.
		{"inbox, all", qConversations(0, true), "conversations_brand_view", []any{1, "open", 5, 9, 51}},
		{"inbox, mine", qConversations(3, false), "conversations_brand_assignee", []any{1, "open", 3, 51}},
		{"inbox, unassigned", qConversations(-1, true), "conversations_brand_assignee", []any{1, "open", 5, 9, 51}},
		{"contacts by consent", qCountContacts, "COVERING INDEX users_brand_consent", []any{1}},
	} {
		p := db.Plan(ctx, c.query, c.args)
		if !strings.Contains(p, c.index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want %s and no sort", c.name, p, c.index)
		}
	}
}
