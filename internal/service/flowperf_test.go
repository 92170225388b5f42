package service_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/bench"
	"github.com/parleyhq/parley/internal/store"
)

// TestFlowDrainMeasure measures how a flow's messages drain on the
// simulator (D21: at campaign speed): PARLEY_FLOW_PERF=10000 seeds that
// many consenting contacts, enters each in a one-step flow, runs the
// steps (the messages written queued), then starts the workers and
// reports start → all sent, the process CPU and peak RSS. It is skipped
// unless the variable is set; it measures, it asserts nothing about time.
//
//	PARLEY_FLOW_PERF=10000 go test -count=1 -run TestFlowDrainMeasure -v ./internal/service/
func TestFlowDrainMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PARLEY_FLOW_PERF"))
	if n <= 0 {
		t.Skip("PARLEY_FLOW_PERF is not set")
	}
	ctx := t.Context()
	dir := t.TempDir()
	a, err := app.Open(ctx, app.Config{DataDir: dir, DB: apitest.DatabaseURL(t, dir),
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", RateLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	svc := a.Service
	brand, err := svc.CreateBrand(ctx, "Perf", "+14155550100")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.UpdateBrandSettings(ctx, brand.ID, parley.BrandSettingsUpdate{
		SendingWindow: parley.Some(parley.SendingWindow{Start: "00:00", End: "00:00"})}); err != nil {
		t.Fatal(err)
	}
	svc.SetUSSendingRules(false)
	f, err := svc.CreateFlow(ctx, parley.Origin{}, brand.ID, parley.FlowCreate{Name: parley.Some("Perf"),
		Trigger: parley.Some(parley.RawMember(`{"type":"created"}`)),
		Steps:   parley.Some(parley.RawMember(`[{"type":"send","body":"Welcome, {{first_name | \"friend\"}}!"}]`)), Active: parley.Some(true)})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for start := 0; start < n; start += 5000 {
		users := make([]*parley.User, 0, 5000)
		for x := start; x < min(start+5000, n); x++ {
			now := parley.NewTime(time.Now())
			users = append(users, &parley.User{BrandID: brand.ID, PhoneNumber: "+1415" + strconv.Itoa(2000000+x),
				MessagingConsent: &yes, DateCreated: now, DateLastUpdated: now})
		}
		if err := a.DB.WithTx(ctx, func(tx *store.Tx) error {
			if err := tx.InsertUsers(ctx, users); err != nil {
				return err
			}
			ids := make([]int64, len(users))
			for i, u := range users {
				ids[i] = u.ID
			}
			_, err := tx.EnterFlow(ctx, store.FlowEntry{BrandID: brand.ID, FlowID: f.ID, Version: f.Version}, ids, nil)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.DB.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for {
		k, err := svc.RunDueFlowSteps(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	written := time.Since(t0)
	count := func() int64 {
		var k int64
		q := `SELECT count(*) FROM messages WHERE flow_id = ` + strconv.FormatInt(f.ID, 10) + ` AND status IN ('sent', 'delivered')`
		if err := a.DB.Writer().QueryRowContext(ctx, q).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	cpu0 := bench.SelfCPU()
	t1 := time.Now()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for count() < int64(n) {
		if time.Since(t1) > 5*time.Minute {
			t.Fatalf("%d of %d sent after 5 minutes", count(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sent := time.Since(t1)
	cpu := bench.SelfCPU() - cpu0
	t.Logf("%s, %d flow messages: steps run (written) %.2fs; start → all sent %.2fs; process CPU of the drain %.1fs; peak RSS %s; sim sends %d",
		a.DB.Engine(), n, written.Seconds(), sent.Seconds(), cpu.Seconds(), peakRSS(), a.Sim.Sends())
	fmt.Fprintln(os.Stderr, "FLOW-PERF", a.DB.Engine(), n, written.Seconds(), sent.Seconds(), cpu.Seconds(), peakRSS())
}
