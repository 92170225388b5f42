package store_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// TestAIBudget: a brand may make PerDay extractor calls a UTC day; the
// call over it is refused and not counted; other brands and the next day
// have their own allowance (D20, issue #19).
func TestAIBudget(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand, other := mustBrand(t, db), mustBrand(t, db)
	now := time.Date(2026, 11, 25, 23, 59, 0, 0, time.FixedZone("EST", -5*3600)) // already the 26th in UTC
	db.Now = func() time.Time { return now }
	b := store.AIBudget{DB: db, PerDay: 3}
	for i, want := range []bool{true, true, true, false, false} {
		ok, err := b.Take(t.Context(), brand)
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Errorf("call %d: ok = %v, want %v", i+1, ok, want)
		}
	}
	if n, err := db.AICalls(t.Context(), brand, "2026-11-26"); err != nil || n != 3 {
		t.Errorf("calls on the UTC day 2026-11-26: %d, %v; want 3 (refused calls not counted)", n, err)
	}
	if ok, err := b.Take(t.Context(), other); err != nil || !ok {
		t.Errorf("another brand: %v, %v; want a call of its own allowance", ok, err)
	}
	now = now.Add(24 * time.Hour)
	if ok, err := b.Take(t.Context(), brand); err != nil || !ok {
		t.Errorf("the next day: %v, %v; want a new allowance", ok, err)
	}
	if n, _ := db.AICalls(t.Context(), brand, "2026-11-27"); n != 1 {
		t.Errorf("calls on 2026-11-27: %d, want 1", n)
	}
	if ok, err := (store.AIBudget{DB: db, PerDay: 0}).Take(t.Context(), other); err != nil || ok {
		t.Errorf("PerDay 0: %v, %v; want no call", ok, err)
	}
}

// TestAIBudgetConcurrent: takers racing for the last calls get exactly
// PerDay of them, on either engine (one atomic upsert per call).
func TestAIBudgetConcurrent(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	b := store.AIBudget{DB: db, PerDay: 7}
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			ok, err := b.Take(t.Context(), brand)
			if err != nil {
				t.Error(err)
			}
			if ok {
				granted.Add(1)
			}
		})
	}
	wg.Wait()
	if g := granted.Load(); g != 7 {
		t.Errorf("%d calls granted, want 7", g)
	}
	if n, _ := db.AICalls(t.Context(), brand, db.Now().UTC().Format("2006-01-02")); n != 7 {
		t.Errorf("%d calls counted, want 7", n)
	}
}
