package store

import "testing"

// TestKeyIndexKeepsTheNewerRow: the index keeps a key's row of the higher
// id, whatever order it learns them in (a commit's own rows may reach it
// after the next transaction read them from the log), and forgets a key
// only once the row it holds has expired: a key taken over since, with a
// later expiry, stays (issue #35, D13).
func TestKeyIndexKeepsTheNewerRow(t *testing.T) {
	x := newKeyIndex()
	k, other := nameOf(1, "k"), nameOf(2, "k")
	const minute = purgeEvery
	x.learnLocked(k, keyRef{id: 5, expires: 10 * minute})
	x.learnLocked(k, keyRef{id: 3, expires: 10 * minute})
	if got := x.rows[k].id; got != 5 {
		t.Fatalf("after learning rows 5 then 3: row %d, want 5", got)
	}
	x.learnLocked(other, keyRef{id: 6, expires: 10 * minute})
	if x.rows[other].id != 6 || x.lastID != 6 {
		t.Fatalf("another brand's key: %+v, last id %d; want row 6 apart", x.rows[other], x.lastID)
	}
	// k taken over: a new row, expiring an hour later.
	x.learnLocked(k, keyRef{id: 9, expires: 70 * minute})

	x.forgetLocked(10*minute - 1)
	if len(x.rows) != 2 {
		t.Fatalf("before any expiry: %d keys, want 2", len(x.rows))
	}
	x.forgetLocked(12 * minute)
	if _, ok := x.rows[other]; ok {
		t.Error("an expired key is still indexed")
	}
	if got := x.rows[k].id; got != 9 {
		t.Fatalf("the key taken over: row %d, want 9 (its old row expired, not it)", got)
	}
	x.forgetLocked(12*minute + minute/2) // within a minute of the last: not yet again
	x.forgetLocked(72 * minute)
	if len(x.rows) != 0 || len(x.expiring) != 0 {
		t.Errorf("after every expiry: %d keys and %d minutes left, want none", len(x.rows), len(x.expiring))
	}
}
