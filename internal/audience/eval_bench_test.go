package audience

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// benchTable builds the segments bench's contacts (internal/bench: every
// 7th in MA, every 5th gold, age x % 80, a 100-character note, every 10th
// with an inbound text) in memory, without a database, and reports the
// heap they hold.
func benchTable(b *testing.B, n int) *table {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	t := newTable()
	note := strings.Repeat("x", 100)
	for x := range n {
		r := store.AudienceRow{ID: int64(x + 1), Consent: sql.NullBool{Bool: true, Valid: true}, DateCreated: time.Now().UnixMicro()}
		r.Text[cPhone], r.Text[cFirstName] = fmt.Appendf(nil, "+1200%07d", x), fmt.Append(nil, "n", x)
		place := []string{"94105", "San Francisco", "California", "CA", "America/Los_Angeles"}
		if x%7 == 0 {
			place = []string{"02108", "Boston", "Massachusetts", "MA", "America/New_York"}
		}
		for i, c := range []int{cPostalCode, cCity, cState, cStateCode, cTimeZone} {
			r.Text[c] = []byte(place[i])
		}
		tier := "silver"
		if x%5 == 0 {
			tier = "gold"
		}
		if x%10 == 0 {
			r.InboundCount, r.LastInbound = 1, sql.NullInt64{Int64: time.Now().UnixMicro(), Valid: true}
		}
		r.CustomData = []byte(fmt.Sprintf(`{"tier":%q,"age":%d,"note":%q}`, tier, x%80, note))
		t.put(&r)
	}
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.Logf("%d contacts: built in %v, heap %.1f MiB (estimate %.1f MiB)", n, took,
		float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), float64(t.bytes())/(1<<20))
	return t
}

func benchCriteria(b *testing.B, file string) []parley.SegmentCriterion {
	b.Helper()
	raw, err := os.ReadFile("../bench/testdata/" + file)
	if err != nil {
		b.Fatal(err)
	}
	var cs []parley.SegmentCriterion
	if err := json.Unmarshal(raw, &cs); err != nil {
		b.Fatal(err)
	}
	return cs
}

// BenchmarkEvaluate times an evaluation (the count's work) of the
// issue's criteria and of selective ones over 1,000,000 contacts.
func BenchmarkEvaluate(b *testing.B) {
	t := benchTable(b, 1_000_000)
	for _, file := range []string{"issue34_criteria.json", "issue34_selective.json"} {
		cs := benchCriteria(b, file)
		b.Run(file, func(b *testing.B) {
			var n int64
			for b.Loop() {
				e := &evaluator{t: t, today: time.Now().UTC().Truncate(24 * time.Hour), memo: map[int64]bitmap{}}
				rows, err := e.evaluate(&store.ResolvedAudience{Criteria: cs, Today: e.today})
				if err != nil {
					b.Fatal(err)
				}
				n = rows.count()
			}
			b.ReportMetric(float64(n), "members")
		})
	}
}
