package console_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley"
)

// TestBrowserCampaignHeld: "Send now" at 04:21 New York time (EST) to New
// York numbers: the campaign page and the list say how many messages are
// held, for quiet hours, until 08:00 EST, in 3 h 39 min, and why (D22), at
// desktop and phone width.
func TestBrowserCampaignHeld(t *testing.T) {
	t.Parallel()
	e := startedEnv(t)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	e.SetNow(time.Date(2026, 1, 13, 4, 21, 0, 0, ny)) // a Tuesday
	const members = 3
	for i := range members {
		e.contact(t, false, fmt.Sprintf("+1212555%04d", i), fmt.Sprintf("Member%d", i), "", "", ptr(true))
	}
	seg := e.mustSegment(t, false, "Everyone", nil)
	camp, err := e.App.Service.CreateCampaign(e.Ctx, parley.Origin{Source: parley.SourceConsole}, e.BrandA.ID,
		parley.CampaignCreate{Name: parley.Some("Dawn sale"), SegmentID: parley.Some(seg.ID), Body: parley.Some("20% off today")})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := e.App.Service.FindCampaign(e.Ctx, e.BrandA.ID, camp.ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Stats.Held == members {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the campaign's messages were never all held: %+v", c.Stats)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b := newBrowser(t, e.Server.URL)
	b.signIn("admin@a.example", password)
	for _, phone := range []bool{false, true} {
		if phone {
			b.Phone()
		}
		b.Go(fmt.Sprintf("/console/campaigns/%d", camp.ID))
		b.WaitText("3 messages held for quiet hours until 08:00 EST, in 3 h 39 min.")
		b.WaitText("Why: marketing texts go only inside your sending window (08:00–21:00) and the US quiet-hours rule (texts only 08:00–21:00)")
		b.WaitText("--us-sending-rules=false")
		b.checkPage()
		b.shot("campaign-held", phone)
		b.Go("/console/campaigns")
		b.WaitText("3 held for quiet hours until 08:00 EST")
		b.checkPage()
		b.shot("campaigns-held", phone)
		b.Go("/console/")
		b.WaitText("Last campaigns")
		b.checkPage()
		b.shot("dashboard", phone)
	}
}
