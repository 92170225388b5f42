package audience

import (
	"container/heap"
	"context"
	"errors"
	"slices"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// ContactList reads a page of the brand's contacts list as
// store.ContactList does. The order by latest activity comes from memory:
// no index on users keeps it (migration 00058), because every text out
// would rewrite the contact's entry in it, and on PostgreSQL it kept the
// contact's activity update from being HOT. The other orders, and this
// one while the brand loads, are SQL's.
func (e *Engine) ContactList(ctx context.Context, brandID int64, q store.ContactQuery) (*store.ContactPage, error) {
	if q.Sort != parley.SortActivity || q.Limit < 1 {
		return e.db.ContactList(ctx, brandID, q)
	}
	page := &store.ContactPage{}
	// Memory holds state codes with ASCII letters folded, and the filter
	// is SQL's exact match (DB.ListedContacts); a contact deleted since
	// the catch-up is gone. So a read may keep fewer than it found, and the
	// next goes on from there, reading twice as many each time (SQL may
	// drop most of the list). A contact whose activity moved between two
	// reads is shown once.
	seen := map[int64]bool{}
	read := q
	for pass := 0; ; pass++ {
		keys, err := e.activityKeys(ctx, brandID, &read)
		if pass == 0 { // one page is one answer, however many passes
			e.answered(err)
		}
		if errors.Is(err, ErrNotLoaded) {
			return e.db.ContactList(ctx, brandID, q)
		}
		if err != nil {
			return nil, err
		}
		users, err := e.db.ListedContacts(ctx, brandID, keyIDs(keys), &q)
		if err != nil {
			return nil, err
		}
		byID := make(map[int64]*parley.User, len(users))
		for _, u := range users {
			byID[u.ID] = u
		}
		for _, k := range keys {
			if u := byID[k.ID]; u != nil && !seen[k.ID] {
				seen[k.ID] = true
				page.Users = append(page.Users, u)
				page.Keys = append(page.Keys, k)
			}
		}
		if len(page.Keys) > q.Limit {
			page.Users, page.Keys, page.More = page.Users[:q.Limit], page.Keys[:q.Limit], true
			break
		}
		if len(keys) <= read.Limit { // the list ends within this read
			break
		}
		read.After = &keys[len(keys)-1]
		read.Limit *= 2
	}
	if q.Back { // read backward: the list's order is the other way
		slices.Reverse(page.Users)
		slices.Reverse(page.Keys)
	}
	return page, nil
}

// activityKeys evaluates q's audience and returns the keys activityPage
// finds for q.
func (e *Engine) activityKeys(ctx context.Context, brandID int64, q *store.ContactQuery) ([]store.ContactKey, error) {
	b, rows, err := e.evaluate(ctx, brandID, q.Audience)
	if err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	return b.t.activityPage(rows, q), nil
}

func keyIDs(keys []store.ContactKey) []int64 {
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = k.ID
	}
	return ids
}

// activityPage returns the keys of up to q.Limit+1 members after q.After
// in the order by latest activity (a text in or out, 0 for none: never
// texted last), then id, both descending; or ascending when q.Back. The
// consent and state filters apply here, the state's with ASCII letters
// folded as the column's; rows are the audience's members.
func (t *table) activityPage(rows bitmap, q *store.ContactQuery) []store.ContactKey {
	var consent int8 = 2 // any
	switch q.Consent {
	case parley.ConsentIn:
		consent = 1
	case parley.ConsentOut:
		consent = 0
	case parley.ConsentNone:
		consent = -1
	}
	if q.StateCode != "" {
		state := string(lowerAppend(nil, []byte(q.StateCode)))
		inState := newBitmap(t.n)
		t.text[cStateCode].match(inState, func(v string) bool { return v == state })
		inState.and(rows)
		rows = inState
	}
	// before: a comes before b in the order read.
	before := func(a, b store.ContactKey) bool {
		if a.Activity != b.Activity {
			return (a.Activity > b.Activity) != q.Back
		}
		return a.ID != b.ID && (a.ID > b.ID) != q.Back
	}
	h := &keyHeap{before: before}
	n := q.Limit + 1
	in, out := t.stamp[sLastInbound], t.stamp[sLastOutbound]
	// Rows are in id order: visited in the order read, a key ties with
	// the kept ones without displacing them, so most rows (never texted,
	// or texted before the page) cost one comparison.
	first, step := func() int { return rows.prev(t.n - 1) }, func(i int) int { return rows.prev(i - 1) }
	if q.Back {
		first, step = func() int { return rows.next(0) }, func(i int) int { return rows.next(i + 1) }
	}
	for i := first(); i >= 0; i = step(i) {
		if consent != 2 && t.consent[i] != consent {
			continue
		}
		k := store.ContactKey{Activity: max(stampOrZero(in[i]), stampOrZero(out[i])), ID: t.ids[i]}
		if len(h.keys) == n && !before(k, h.keys[0]) || q.After != nil && !before(*q.After, k) {
			continue
		}
		if len(h.keys) < n {
			heap.Push(h, k)
		} else {
			h.keys[0] = k
			heap.Fix(h, 0)
		}
	}
	keys := h.keys
	slices.SortFunc(keys, func(a, b store.ContactKey) int {
		if before(a, b) {
			return -1
		}
		return 1
	})
	return keys
}

// stampOrZero is SQL's coalesce(stamp, 0).
func stampOrZero(v int64) int64 {
	if v == noStamp {
		return 0
	}
	return v
}

// keyHeap keeps the first keys in an order: its root is the last kept,
// the one a key before it replaces.
type keyHeap struct {
	keys   []store.ContactKey
	before func(a, b store.ContactKey) bool
}

func (h *keyHeap) Len() int           { return len(h.keys) }
func (h *keyHeap) Less(i, j int) bool { return h.before(h.keys[j], h.keys[i]) }
func (h *keyHeap) Swap(i, j int)      { h.keys[i], h.keys[j] = h.keys[j], h.keys[i] }
func (h *keyHeap) Push(x any)         { h.keys = append(h.keys, x.(store.ContactKey)) }
func (h *keyHeap) Pop() any {
	k := h.keys[len(h.keys)-1]
	h.keys = h.keys[:len(h.keys)-1]
	return k
}
