package audience

import (
	"testing"

	"github.com/parleyhq/parley/internal/store"
)

// BenchmarkActivityPage times the memory's part of a contacts list page in
// the order by latest activity over 1,000,000 contacts (every 10th texted
// in): the first page, a page deep in the list, and the state filter.
func BenchmarkActivityPage(b *testing.B) {
	t := benchTable(b, 1_000_000)
	live := newBitmap(t.n)
	live.fill(t.n)
	live.and(t.live)
	deep := &store.ContactKey{ID: 500_000}
	for _, c := range []struct {
		name string
		q    store.ContactQuery
	}{
		{"first", store.ContactQuery{}},
		{"deep", store.ContactQuery{After: deep}},
		{"deep-back", store.ContactQuery{After: deep, Back: true}},
		{"state", store.ContactQuery{StateCode: "MA"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.q.Limit = 50
			for b.Loop() {
				if keys := t.activityPage(live, &c.q); len(keys) != 51 {
					b.Fatalf("%d keys", len(keys))
				}
			}
		})
	}
}
