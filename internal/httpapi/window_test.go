package httpapi_test

import (
	"errors"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/jobs"
)

// D17 on API messages: tests call Deliver themselves with the server's
// clock set, as the worker would at that instant.

// winEnv is an env without workers whose provider accepts every message.
func winEnv(t *testing.T, opts ...apitest.Option) (*apitest.Env, *dlvProvider) {
	t.Helper()
	p := &dlvProvider{result: func(int64) error { return nil }}
	e := apitest.New(t, opts...)
	e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
	return e, p
}

func winZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func winUser(t *testing.T, e *apitest.Env, phone, zip string) *parley.User {
	t.Helper()
	in := parley.UserCreate{PhoneNumber: parley.Some(phone)}
	if zip != "" {
		in.PostalCode = parley.Some(zip)
	}
	return e.MustCreateUser(t, e.A, in)
}

func winSend(t *testing.T, e *apitest.Env, userID int64, typ string) *parley.Message {
	t.Helper()
	m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(userID), Body: parley.Some("Sale today"), Type: parley.Some(typ)})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// winDeliver makes one attempt and returns the hold it asked for, if any.
func winDeliver(t *testing.T, e *apitest.Env, id int64) *jobs.Held {
	t.Helper()
	err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, id, 1, false)
	var h *jobs.Held
	if errors.As(err, &h) {
		return h
	}
	if err != nil {
		t.Fatalf("deliver %d: %v", id, err)
	}
	return nil
}

func winGet(t *testing.T, e *apitest.Env, id int64) *parley.Message {
	t.Helper()
	m, err := e.A.GetMessage(e.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func winSettings(t *testing.T, e *apitest.Env, u parley.BrandSettingsUpdate) {
	t.Helper()
	if _, err := e.App.Service.UpdateBrandSettings(e.Ctx, e.BrandA.ID, u); err != nil {
		t.Fatal(err)
	}
}

// wantHeld checks that a MARKETING message was held until want: queued,
// scheduled_at set, the provider not called, the job snoozed until then.
func wantHeld(t *testing.T, e *apitest.Env, p *dlvProvider, id int64, want time.Time) {
	t.Helper()
	h := winDeliver(t, e, id)
	if h == nil || !h.Until.Equal(want) || h.Wait != want.Sub(e.Now()) {
		t.Fatalf("deliver returned hold %+v, want until %v (D17)", h, want)
	}
	m := winGet(t, e, id)
	if m.Status != parley.StatusQueued || m.ScheduledAt == nil || !m.ScheduledAt.Equal(want) {
		t.Errorf("held message: status %s, scheduled_at %v; want queued, %v (D17)", m.Status, m.ScheduledAt, want)
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("provider called %d times for a held message", n)
	}
}

func TestSendingWindowHoldsMarketing(t *testing.T) {
	t.Parallel()
	e, p := winEnv(t)
	la := winZone(t, "America/Los_Angeles")
	e.SetNow(time.Date(2025, 6, 10, 6, 0, 0, 0, la)) // a Tuesday, 06:00 in California
	u := winUser(t, e, "+13105550123", "90210")
	m := winSend(t, e, u.ID, parley.TypeMarketing)
	if m.ScheduledAt != nil || m.CampaignID != nil {
		t.Errorf("new message: scheduled_at %v, campaign_id %v; want null (D16)", m.ScheduledAt, m.CampaignID)
	}
	opening := time.Date(2025, 6, 10, 8, 0, 0, 0, la)
	wantHeld(t, e, p, m.ID, opening)

	// A transactional message goes at once, also at 06:00.
	tm := winSend(t, e, u.ID, parley.TypeTransactional)
	if h := winDeliver(t, e, tm.ID); h != nil {
		t.Fatalf("TRANSACTIONAL message held until %v (D17: only MARKETING)", h.Until)
	}
	if got := winGet(t, e, tm.ID); got.Status != parley.StatusSent || got.ScheduledAt != nil {
		t.Errorf("TRANSACTIONAL at 06:00: status %s, scheduled_at %v; want sent, null", got.Status, got.ScheduledAt)
	}

	// At the opening the held message goes; scheduled_at records the hold.
	e.SetNow(opening)
	if h := winDeliver(t, e, m.ID); h != nil {
		t.Fatalf("held again until %v at the opening", h.Until)
	}
	got := winGet(t, e, m.ID)
	if got.Status != parley.StatusSent || got.ScheduledAt == nil || !got.ScheduledAt.Equal(opening) {
		t.Errorf("at 08:00: status %s, scheduled_at %v; want sent, %v", got.Status, got.ScheduledAt, opening)
	}
	if n := p.calls.Load(); n != 2 {
		t.Errorf("provider calls = %d, want 2", n)
	}
}

func TestSendingWindowStateRules(t *testing.T) {
	t.Parallel()
	e, p := winEnv(t)
	ny := winZone(t, "America/New_York")
	// 20:30 in Miami: inside the 08:00–21:00 baseline, outside Florida's 20:00.
	e.SetNow(time.Date(2025, 6, 10, 20, 30, 0, 0, ny))
	u := winUser(t, e, "+13055550123", "") // no ZIP: zone and state from the area code
	m := winSend(t, e, u.ID, parley.TypeMarketing)
	wantHeld(t, e, p, m.ID, time.Date(2025, 6, 11, 8, 0, 0, 0, ny))
}

func TestSendingWindowNeverOpens(t *testing.T) {
	t.Parallel()
	e, p := winEnv(t)
	winSettings(t, e, parley.BrandSettingsUpdate{SendingWindow: parley.Some(parley.SendingWindow{Start: "22:00", End: "02:00"})})
	e.SetNow(time.Date(2025, 6, 10, 12, 0, 0, 0, winZone(t, "America/Los_Angeles")))
	m := winSend(t, e, winUser(t, e, "+13105550123", "90210").ID, parley.TypeMarketing)
	if h := winDeliver(t, e, m.ID); h != nil {
		t.Fatalf("held until %v; want failed: the window never opens", h.Until)
	}
	got := winGet(t, e, m.ID)
	if got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "outside_sending_window" || got.ErrorMessage == nil {
		t.Errorf("got %s %s, want failed outside_sending_window", got.Status, strOf(got.ErrorCode))
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("provider calls = %d, want 0", n)
	}
}

func TestSendingWindowUSRulesOff(t *testing.T) {
	t.Parallel()
	e, p := winEnv(t, func(c *app.Config) { c.NoUSSendingRules = true })
	winSettings(t, e, parley.BrandSettingsUpdate{SendingWindow: parley.Some(parley.SendingWindow{Start: "06:00", End: "23:00"})})
	la := winZone(t, "America/Los_Angeles")
	u := winUser(t, e, "+13105550123", "90210")

	// 22:00 is outside the US rules but inside the brand's window: it goes.
	e.SetNow(time.Date(2025, 6, 10, 22, 0, 0, 0, la))
	late := winSend(t, e, u.ID, parley.TypeMarketing)
	if h := winDeliver(t, e, late.ID); h != nil {
		t.Fatalf("held until %v with US rules off, inside the brand window", h.Until)
	}
	if got := winGet(t, e, late.ID); got.Status != parley.StatusSent {
		t.Errorf("at 22:00 with US rules off: %s, want sent", got.Status)
	}
	// The brand's window still holds: 05:00 waits for its 06:00.
	e.SetNow(time.Date(2025, 6, 11, 5, 0, 0, 0, la))
	early := winSend(t, e, u.ID, parley.TypeMarketing)
	p.calls.Store(0)
	wantHeld(t, e, p, early.ID, time.Date(2025, 6, 11, 6, 0, 0, 0, la))
}

func TestFrequencyCap(t *testing.T) {
	t.Parallel()
	e, _ := winEnv(t)
	winSettings(t, e, parley.BrandSettingsUpdate{FrequencyCap: parley.Some(parley.FrequencyCap{MaxMessages: 1, PerHours: 24})})
	e.SetNow(time.Date(2025, 6, 10, 12, 0, 0, 0, winZone(t, "America/Los_Angeles")))
	u := winUser(t, e, "+13105550123", "90210")
	send := func(typ string) *parley.Message {
		t.Helper()
		m := winSend(t, e, u.ID, typ)
		if h := winDeliver(t, e, m.ID); h != nil {
			t.Fatalf("held until %v at noon", h.Until)
		}
		return winGet(t, e, m.ID)
	}
	if got := send(parley.TypeMarketing); got.Status != parley.StatusSent {
		t.Fatalf("first MARKETING message: %s %s, want sent", got.Status, strOf(got.ErrorCode))
	}
	e.Advance(23 * time.Hour)
	if got := send(parley.TypeMarketing); got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "frequency_capped" || got.ErrorMessage == nil {
		t.Errorf("second MARKETING message within 24 h: %s %s, want failed frequency_capped (D17)", got.Status, strOf(got.ErrorCode))
	}
	if got := send(parley.TypeConversational); got.Status != parley.StatusSent {
		t.Errorf("CONVERSATIONAL message at the cap: %s %s, want sent", got.Status, strOf(got.ErrorCode))
	}
	e.Advance(2 * time.Hour) // the first one is now 25 h old
	if got := send(parley.TypeMarketing); got.Status != parley.StatusSent {
		t.Errorf("MARKETING message after per_hours: %s %s, want sent", got.Status, strOf(got.ErrorCode))
	}
}
