package bench

import (
	"os"
	"testing"
	"time"
)

// TestRunSegmentsCriteriaFile: the segments scenario imports its contacts
// and counts the segment of a --criteria file (the issue #34 segment) to
// the members its seed data give, on SQLite and, when
// PARLEY_TEST_POSTGRES_URL is set, on PostgreSQL.
func TestRunSegmentsCriteriaFile(t *testing.T) {
	criteria, err := os.ReadFile("testdata/issue34_criteria.json")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1200
	var want int64
	for x := range n {
		// (state MA and tier gold) or (age > 60 and an inbound text)
		if (x%7 == 0 && x%5 == 0) || (x%80 > 60 && x%10 == 0) {
			want++
		}
	}
	dbs := []string{""}
	if pg := os.Getenv("PARLEY_TEST_POSTGRES_URL"); pg != "" {
		dbs = append(dbs, pg)
	}
	for _, db := range dbs {
		res, err := RunSegments(t.Context(), SegmentOptions{DB: db, Users: n, Duration: 50 * time.Millisecond, First: 50 * time.Millisecond, Criteria: criteria})
		if err != nil {
			t.Fatal(err)
		}
		if res.EngineAnswerS < 0 || res.FirstCounts == 0 || res.LoadS == 0 {
			t.Errorf("%s: the engine answered after %v s, %d counts in the first window, a node's load %v s; want an answer, counts and a load",
				res.Engine, res.EngineAnswerS, res.FirstCounts, res.LoadS)
		}
		if res.Members != want || res.Messages != n/10 || res.Counts == 0 || res.Previews == 0 || res.Pages == 0 {
			t.Errorf("%s: %d members, %d messages, %d/%d/%d counts/previews/pages; want %d members, %d messages, each measured",
				res.Engine, res.Members, res.Messages, res.Counts, res.Previews, res.Pages, want, n/10)
		}
	}
}
