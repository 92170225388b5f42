package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/service"
)

// D22 on campaigns: held and held_until say how many of a campaign's
// queued messages wait for a sending window and until when; replies and
// opt_outs count the contacts who answered it. The test plays the
// engine (ResolveDueCampaigns, SendCampaignBatch) with the server's clock.

// heldDrain sends batches of the campaign until nothing more can go now.
func heldDrain(t *testing.T, e *apitest.Env, id int64) {
	t.Helper()
	for range 100 {
		p, err := e.App.Service.SendCampaignBatch(e.Ctx, e.BrandA.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Done || p.Wait > time.Minute {
			return
		}
	}
	t.Fatal("the campaign never drains")
}

// heldGet reads the campaign through a signed GET /campaigns/{id} and, as
// it is in the list, through GET /campaigns; both must agree.
func heldGet(t *testing.T, e *apitest.Env, id int64) parley.CampaignStats {
	t.Helper()
	c, err := e.A.GetCampaign(e.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := e.A.ListCampaigns(e.Ctx, parley.CampaignFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range list {
		if l.ID == id {
			a, b := c.Stats, l.Stats
			a.HeldUntil, b.HeldUntil = nil, nil
			if a != b || (c.Stats.HeldUntil == nil) != (l.Stats.HeldUntil == nil) ||
				(c.Stats.HeldUntil != nil && !c.Stats.HeldUntil.Equal(l.Stats.HeldUntil.Time)) {
				t.Errorf("GET /campaigns says %+v, GET /campaigns/%d %+v", l.Stats, id, c.Stats)
			}
			return c.Stats
		}
	}
	t.Fatalf("campaign %d not in GET /campaigns", id)
	return c.Stats
}

// heldInbound is a text from the number to brand A, now.
func heldInbound(t *testing.T, e *apitest.Env, n *int, from, body string) {
	t.Helper()
	*n++
	if _, err := e.App.Service.ReceiveInbound(e.Ctx, delivery.Inbound{ProviderID: fmt.Sprintf("SMheld%d", *n),
		From: from, To: e.BrandA.PhoneNumber, Body: body, At: e.Now()}); err != nil {
		t.Fatal(err)
	}
}

// TestCampaignHeldStats: "Send now" at 04:21 New York time (EST, the US
// rule's 08:00 not reached) holds every message: stats.held = 3 and
// held_until = 08:00 EST, in GET /campaigns/{id} and GET /campaigns, and
// the raw JSON has both members; at 08:00 they go and held is 0 with
// held_until null (D22, D17).
func TestCampaignHeldStats(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ny := winZone(t, "America/New_York")
	e.SetNow(time.Date(2026, 1, 13, 4, 21, 0, 0, ny)) // a Tuesday, EST
	for i := range 3 {
		e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1212555%04d", i)),
			UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
	}
	seg, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Everyone")})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("Dawn sale"), SegmentID: parley.Some(seg.ID),
		Body: parley.Some("20% off today")})
	if err != nil {
		t.Fatal(err)
	}
	if s := heldGet(t, e, c.ID); s.Held != 0 || s.HeldUntil != nil {
		t.Errorf("scheduled campaign: held %d until %v, want 0, null", s.Held, s.HeldUntil)
	}
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	heldDrain(t, e, c.ID)
	opening := time.Date(2026, 1, 13, 8, 0, 0, 0, ny)
	s := heldGet(t, e, c.ID)
	if s.Queued != 3 || s.Held != 3 || s.HeldUntil == nil || !s.HeldUntil.Equal(opening) {
		t.Fatalf("at 04:21 EST: queued %d, held %d until %v; want 3, 3, %v (D22)", s.Queued, s.Held, s.HeldUntil, opening)
	}
	raw := heldRaw(t, e, c.ID)
	if string(raw["held"]) != "3" || string(raw["held_until"]) != `"2026-01-13T13:00:00.000000Z"` {
		t.Errorf("raw stats held %s, held_until %s; want 3, \"2026-01-13T13:00:00.000000Z\"", raw["held"], raw["held_until"])
	}

	e.SetNow(opening)
	heldDrain(t, e, c.ID)
	s = heldGet(t, e, c.ID)
	if s.Queued != 0 || s.Sent+s.Delivered != 3 || s.Held != 0 || s.HeldUntil != nil {
		t.Errorf("at 08:00: %+v; want 3 sent, none held, held_until null", s)
	}
	if raw := heldRaw(t, e, c.ID); string(raw["held_until"]) != "null" {
		t.Errorf("raw held_until %s, want null", raw["held_until"])
	}
}

// heldRaw returns the members of stats in GET /campaigns/{id}'s JSON.
func heldRaw(t *testing.T, e *apitest.Env, id int64) map[string]json.RawMessage {
	t.Helper()
	resp, err := e.A.Do(e.Ctx, http.MethodGet, fmt.Sprintf("/campaigns/%d", id), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Stats map[string]json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal(resp.Body, &c); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET campaign: %d %s", resp.StatusCode, resp.Body)
	}
	return c.Stats
}

// TestCampaignReplies: a text within 72 h after a campaign message was
// sent to the contact is a reply to the latest such campaign, counted
// once per contact; STOP is also an opt-out of it; a text after 72 h, or
// from a contact the campaign did not reach, is nobody's (D22).
func TestCampaignReplies(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ny := winZone(t, "America/New_York")
	e.SetNow(time.Date(2026, 1, 13, 10, 0, 0, 0, ny))
	phones := []string{"+12125550100", "+12125550101", "+12125550102", "+12125550103"}
	for i, p := range phones {
		e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(p),
			UserFields: parley.UserFields{MessagingConsent: parley.Some(i < 3), FirstName: parley.Some(fmt.Sprint("C", i))}})
	}
	all, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Everyone")})
	if err != nil {
		t.Fatal(err)
	}
	send := func(name string, want int64) *parley.Campaign {
		c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some(name), SegmentID: parley.Some(all.ID),
			Body: parley.Some(name)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
			t.Fatal(err)
		}
		heldDrain(t, e, c.ID)
		if s := heldGet(t, e, c.ID); s.Sent+s.Delivered != want {
			t.Fatalf("campaign %q not sent: %+v", name, s)
		}
		return c
	}
	first := send("First", 3)
	var n int
	e.Advance(time.Hour)
	heldInbound(t, e, &n, phones[0], "Is it for shoes too?")
	heldInbound(t, e, &n, phones[0], "Thanks!")      // the same contact: still one reply
	heldInbound(t, e, &n, phones[1], " stop ")       // a D12 opt-out keyword: a reply and an opt-out
	heldInbound(t, e, &n, phones[3], "Who is this?") // never sent the campaign (no consent)
	if s := heldGet(t, e, first.ID); s.Replies != 2 || s.OptOuts != 1 {
		t.Errorf("first campaign: replies %d, opt_outs %d; want 2, 1 (per contact)", s.Replies, s.OptOuts)
	}

	// A second campaign a day later: texts now answer it, the latest.
	e.Advance(24 * time.Hour)
	second := send("Second", 2) // the one who said STOP is skipped
	e.Advance(71 * time.Hour)
	heldInbound(t, e, &n, phones[2], "STOP") // 71 h after the second, 96 h after the first
	if s := heldGet(t, e, second.ID); s.Replies != 1 || s.OptOuts != 1 {
		t.Errorf("second campaign: replies %d, opt_outs %d; want 1, 1", s.Replies, s.OptOuts)
	}
	if s := heldGet(t, e, first.ID); s.Replies != 2 || s.OptOuts != 1 {
		t.Errorf("first campaign after the second: replies %d, opt_outs %d; want 2, 1", s.Replies, s.OptOuts)
	}
	e.Advance(2 * time.Hour) // 73 h after the second: nobody's reply
	heldInbound(t, e, &n, phones[0], "Still on?")
	if s := heldGet(t, e, second.ID); s.Replies != 1 {
		t.Errorf("a text 73 h after the campaign counted: replies %d, want 1 (72 h)", s.Replies)
	}
}

// TestCampaignHoldWhy: the service says which rule holds a campaign's
// first messages, at the injected clock (D22): the brand's window and the
// US rule at 04:21, the US rule alone once the brand's window is always
// open, Florida's own rule at 20:30 for a Florida number; and that the
// hold is due once its time has come.
func TestCampaignHoldWhy(t *testing.T) {
	t.Parallel()
	ny := winZone(t, "America/New_York")
	// hold sends a campaign to one contact at at and explains its hold.
	hold := func(at time.Time, phone string, alwaysOpen bool) (*apitest.Env, *parley.Campaign, *service.CampaignHold) {
		t.Helper()
		e := apitest.New(t)
		e.SetNow(at)
		if alwaysOpen {
			winSettings(t, e, parley.BrandSettingsUpdate{SendingWindow: parley.Some(parley.SendingWindow{Start: "00:00", End: "00:00"})})
		}
		e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(phone),
			UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
		seg, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Everyone")})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("Sale"), SegmentID: parley.Some(seg.ID),
			Body: parley.Some("20% off today")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
			t.Fatal(err)
		}
		heldDrain(t, e, c.ID)
		if c, err = e.App.Service.FindCampaign(e.Ctx, e.BrandA.ID, c.ID); err != nil {
			t.Fatal(err)
		}
		h, err := e.App.Service.HoldOf(e.Ctx, e.BrandA.ID, c)
		if err != nil || h == nil {
			t.Fatalf("HoldOf %+v: %v %v", c.Stats, h, err)
		}
		return e, c, h
	}
	_, _, h := hold(time.Date(2026, 1, 13, 4, 21, 0, 0, ny), "+12125550100", false)
	if !h.Closed.Brand || !h.Closed.US || h.Closed.State != "" || h.Due || !h.USRules || h.Held != 1 ||
		!h.Until.Equal(time.Date(2026, 1, 13, 8, 0, 0, 0, ny)) {
		t.Errorf("04:21: %+v; want brand window and US rule, until 08:00", h)
	}
	if _, _, h := hold(time.Date(2026, 1, 13, 4, 30, 0, 0, ny), "+12125550101", true); h.Closed.Brand || !h.Closed.US {
		t.Errorf("04:30, window always open: %+v; want the US rule alone", h)
	}
	e, c, h := hold(time.Date(2026, 1, 13, 20, 30, 0, 0, ny), "+13055550102", false) // Miami
	if h.Closed.Brand || h.Closed.US || h.Closed.State != "FL" || h.Closed.StateName != "Florida" ||
		!h.Until.Equal(time.Date(2026, 1, 14, 8, 0, 0, 0, ny)) {
		t.Errorf("20:30 in Florida: %+v; want Florida's rule, until 08:00 the next day", h)
	}
	e.SetNow(time.Date(2026, 1, 14, 8, 0, 0, 0, ny))
	if h, err := e.App.Service.HoldOf(e.Ctx, e.BrandA.ID, c); err != nil || h == nil || !h.Due {
		t.Errorf("at 08:00 the next day: %+v %v; want due", h, err)
	}
	// A cancel fails the held message: nothing is held any more.
	if c, err := e.A.CancelCampaign(e.Ctx, c.ID); err != nil || c.Stats.Held != 0 || c.Stats.HeldUntil != nil || c.Stats.Canceled != 1 {
		t.Errorf("after cancel: %+v %v; want none held, 1 canceled", c, err)
	}
}
