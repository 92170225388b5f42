package service_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

// TestCampaignHeldMeasure measures reading a campaign whose messages are
// all held for their sending window (D22's held and held_until):
// PARLEY_HELD_PERF=100000 seeds that many contacts, resolves a campaign to
// them, holds every message, then logs the median of 20 reads of GET
// /campaigns/{id}'s query and the plan of held_until's (held is a count
// that migration 00031's triggers keep). Skipped unless
// the variable is set; it measures, it asserts nothing about time.
//
//	PARLEY_HELD_PERF=100000 go test -count=1 -run TestCampaignHeldMeasure -v ./internal/service/
func TestCampaignHeldMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PARLEY_HELD_PERF"))
	if n <= 0 {
		t.Skip("PARLEY_HELD_PERF is not set")
	}
	ctx := t.Context()
	dir := t.TempDir()
	a, err := app.Open(ctx, app.Config{DataDir: dir, DB: apitest.DatabaseURL(t, dir),
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	brand, err := a.Service.CreateBrand(ctx, "Perf", "+14155550100")
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for start := 0; start < n; start += 10000 {
		users := make([]*parley.User, 0, 10000)
		for x := start; x < min(start+10000, n); x++ {
			now := parley.NewTime(time.Now())
			users = append(users, &parley.User{BrandID: brand.ID, PhoneNumber: "+1415" + strconv.Itoa(2000000+x),
				MessagingConsent: &yes, DateCreated: now, DateLastUpdated: now})
		}
		if err := a.DB.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertUsers(ctx, users) }); err != nil {
			t.Fatal(err)
		}
	}
	seg := &parley.Segment{BrandID: brand.ID, Name: "All", Type: parley.SegmentStandard}
	if _, err := a.Service.CreateSegment(ctx, parley.Origin{}, brand.ID, seg); err != nil {
		t.Fatal(err)
	}
	c := &parley.Campaign{BrandID: brand.ID, Name: "Perf", SegmentID: seg.ID, Body: "Sale today", Type: parley.TypeMarketing,
		SendAt: parley.NewTime(time.Now())}
	err = a.DB.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertCampaign(ctx, c); err != nil {
			return err
		}
		_, err := tx.ResolveCampaign(ctx, c, store.Audience{SegmentID: seg.ID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(3 * time.Hour).UnixMicro()
	q := fmt.Sprintf(`UPDATE messages SET scheduled_at = %d + (id %% 7) WHERE campaign_id = %d`, until, c.ID)
	if _, err := a.DB.Writer().ExecContext(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := a.DB.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	var took []time.Duration
	for range 20 {
		t0 := time.Now()
		got, err := a.DB.FindCampaign(ctx, brand.ID, c.ID)
		took = append(took, time.Since(t0))
		if err != nil || got.Stats.Held != int64(n) || got.Stats.HeldUntil == nil {
			t.Fatalf("campaign %+v: %v", got, err)
		}
	}
	slices.Sort(took)
	first := fmt.Sprintf(`SELECT min(h.scheduled_at) FROM messages h WHERE h.campaign_id = %d AND h.status = 'queued' AND h.scheduled_at IS NOT NULL`, c.ID)
	pre := "EXPLAIN QUERY PLAN "
	if a.DB.Engine() == "postgres" {
		pre = "EXPLAIN (ANALYZE) "
	}
	for _, s := range []string{first} {
		rows, err := a.DB.Writer().QueryContext(ctx, pre+s)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		var plan []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
		}
		rows.Close()
		t.Logf("%s plan:\n%s", a.DB.Engine(), strings.Join(plan, "\n"))
	}
	t.Logf("%s: %d held messages: GET /campaigns/{id} query median %v, max %v", a.DB.Engine(), n, took[len(took)/2], took[len(took)-1])
}
