package service_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/bench"
	"github.com/parleyhq/parley/internal/store"
)

// TestCampaignDrainMeasure measures a whole campaign on the simulator
// (issue #21's targets): PARLEY_CAMPAIGN_PERF=100000 seeds that many
// consenting contacts in bulk, inserts a campaign due now and reports
// send_at → all messages written, → all sent (completed), → all
// delivered, and the peak RSS of the drain. It is skipped unless the
// variable is set; it measures, it asserts nothing about time.
//
//	PARLEY_CAMPAIGN_PERF=100000 go test -count=1 -run TestCampaignDrainMeasure -v ./internal/service/
//	PARLEY_CAMPAIGN_PROFILE=/tmp/camp.pprof adds a CPU profile of the drain.
func TestCampaignDrainMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PARLEY_CAMPAIGN_PERF"))
	if n <= 0 {
		t.Skip("PARLEY_CAMPAIGN_PERF is not set")
	}
	ctx := t.Context()
	dir := t.TempDir()
	cfg := app.Config{DataDir: dir, DB: apitest.DatabaseURL(t, dir),
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", RateLimit: -1}
	if b, _ := strconv.Atoi(os.Getenv("PARLEY_CAMPAIGN_BATCH")); b > 0 {
		cfg.CampaignBatch = b
	}
	a, err := app.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	svc := a.Service
	brand, err := svc.CreateBrand(ctx, "Perf", "+14155550100")
	if err != nil {
		t.Fatal(err)
	}
	// Always open, so the window holds nobody whatever the hour.
	if _, err := svc.UpdateBrandSettings(ctx, brand.ID, parley.BrandSettingsUpdate{
		SendingWindow: parley.Some(parley.SendingWindow{Start: "00:00", End: "00:00"})}); err != nil {
		t.Fatal(err)
	}
	a.Service.SetUSSendingRules(false)
	seed := time.Now()
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
	if err := a.DB.Analyze(ctx); err != nil {
		t.Fatal(err)
	}
	seg := &parley.Segment{BrandID: brand.ID, Name: "All", Type: parley.SegmentStandard}
	if _, err := svc.CreateSegment(ctx, parley.Origin{}, brand.ID, seg); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: seeded %d contacts in %.1fs", a.DB.Engine(), n, time.Since(seed).Seconds())
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // peak RSS from here on (Linux)

	cpu0 := bench.SelfCPU()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("PARLEY_CAMPAIGN_PROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	c := &parley.Campaign{BrandID: brand.ID, Name: "Perf", SegmentID: seg.ID, Body: "Sale today", Type: parley.TypeMarketing,
		SendAt: parley.NewTime(time.Now())}
	if err := a.DB.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertCampaign(ctx, c) }); err != nil {
		t.Fatal(err)
	}
	t0 := c.SendAt.Time
	var written, sent time.Duration
	for {
		got, err := a.DB.FindCampaign(ctx, brand.ID, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if written == 0 && got.Status != parley.CampaignScheduled {
			written = time.Since(t0)
		}
		if sent == 0 && got.Status == parley.CampaignCompleted {
			sent = time.Since(t0)
		}
		if sent != 0 {
			s, err := a.DB.CampaignStats(ctx, brand.ID, c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if s.Delivered == int64(n) {
				break
			}
		}
		if time.Since(t0) > 3*time.Minute {
			s, _ := a.DB.CampaignStats(ctx, brand.ID, c.ID)
			t.Fatalf("not delivered after 3 minutes: %s %+v", got.Status, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	delivered := time.Since(t0)
	cpu := bench.SelfCPU() - cpu0
	s, _ := a.DB.CampaignStats(ctx, brand.ID, c.ID)
	t.Logf("%s, %d recipients, batch %d: send_at → written %.2fs, → all sent (completed) %.2fs, → all delivered %.2fs; process CPU %.1fs; peak RSS %s; sim sends %d; stats %+v",
		a.DB.Engine(), n, cfg.CampaignBatch, written.Seconds(), sent.Seconds(), delivered.Seconds(), cpu.Seconds(), peakRSS(), a.Sim.Sends(), *s)
	fmt.Fprintln(os.Stderr, "CAMPAIGN-PERF", a.DB.Engine(), n, written.Seconds(), sent.Seconds(), delivered.Seconds(), cpu.Seconds(), peakRSS())
}

func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		if s := string(l); strings.HasPrefix(s, "VmHWM:") {
			return strings.TrimSpace(strings.TrimPrefix(s, "VmHWM:"))
		}
	}
	return "?"
}
