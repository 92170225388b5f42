package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
)

// Campaigns safe to send (issue #32): D21 placeholders in campaign
// bodies, editing a scheduled campaign until it starts, and a test send.
// The engine is played by calling the service's scheduler and batches.

// campOpen is 17:00 UTC on a Tuesday: the sending window is open for the
// 415 numbers of campUsers (10:00 in California).
var campOpen = time.Date(2025, 6, 10, 17, 0, 0, 0, time.UTC)

// campSend runs what the worker runs: the scheduler, then the campaign's
// batches until it is done.
func campSend(t *testing.T, e *campEnv, id int64) {
	t.Helper()
	if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		p, err := e.App.Service.SendCampaignBatch(e.Ctx, e.BrandA.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Done {
			return
		}
		if p.Sent == 0 && p.Wait > 0 {
			e.Advance(p.Wait)
		}
	}
	t.Fatalf("campaign %d not done after 100 batches", id)
}

// apiErr returns err as an API error, failing unless it is one of status
// and type.
func apiErr(t *testing.T, err error, status int, typ string) *client.Error {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) || ae.StatusCode != status || ae.Type != typ {
		t.Fatalf("error %v, want %d %s", err, status, typ)
	}
	return ae
}

// D21: a campaign's body is rendered per recipient, with and without
// fallback; num_segments counts the rendered text; an unknown placeholder
// is a 422 on body that stores nothing.
func TestCampaignPlaceholders(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	e.SetNow(campOpen)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "VIP Level", CustomDataType: parley.CustomString})
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Note", CustomDataType: parley.CustomString})
	long := strings.Repeat("x", 170)
	ana := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155550101"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true), FirstName: parley.Some("Ana"),
			CustomData: parley.Some(json.RawMessage(`{"vip_level":"Gold","note":"` + long + `"}`))}})
	anon := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155550102"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})

	before := campState(t, e)
	for _, body := range []string{"Hi {{frist_name}}", "Hi {{custom.vip_levl}}", "Order {{event.order_id}}",
		"Hi {{first_name", `Hi {{first_name | there}}`} {
		_, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("X"), SegmentID: parley.Some(e.segA.ID),
			Body: parley.Some(body)})
		if ae := apiErr(t, err, 422, parley.EValidation); ae.Field != "body" {
			t.Errorf("%q: field %q, want body (%s)", body, ae.Field, ae.Msg)
		}
	}
	if after := campState(t, e); after != before {
		t.Errorf("a refused campaign changed the database:\n%s", after)
	}

	c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("Perks"), SegmentID: parley.Some(e.segA.ID),
		Body: parley.Some(`Hi {{first_name | "there"}}, {{custom.vip_level}} perks{{custom.note}}`)})
	if err != nil {
		t.Fatal(err)
	}
	campSend(t, e, c.ID)
	ms := campMessages(t, e, c.ID, 100)
	if m := ms[ana.ID]; m == nil || m.Body != "Hi Ana, Gold perks"+long || m.NumSegments != 2 || m.Status != parley.StatusSent {
		t.Errorf("Ana's message %+v, want body %q, 2 segments, sent", m, "Hi Ana, Gold perks"+long)
	}
	if m := ms[anon.ID]; m == nil || m.Body != "Hi there,  perks" || m.NumSegments != 1 {
		t.Errorf("the nameless contact's message %+v, want %q, 1 segment", m, "Hi there,  perks")
	}
	got, err := e.A.GetCampaign(e.Ctx, c.ID)
	if err != nil || got.Body != c.Body {
		t.Errorf("the campaign's body %q (%v), want the template %q", got.Body, err, c.Body)
	}
}

// Issue #32: a scheduled campaign can be edited, member by member with
// the rules of create, until it starts; a started, completed or canceled
// one is 409 campaign_not_editable; another brand's is 404.
func TestCampaignEdit(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	e.SetNow(campOpen)
	campUsers(t, e, 2)
	c := campCreate(t, e, "Sale")
	at := e.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	got, err := e.A.UpdateCampaign(e.Ctx, c.ID, parley.CampaignCreate{Name: parley.Some("Big sale"),
		Body: parley.Some(`Hi {{first_name | "friend"}}, 30% off`), SendAt: parley.Some(at.Format(time.RFC3339))})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Big sale" || got.Body != `Hi {{first_name | "friend"}}, 30% off` || !got.SendAt.Equal(at) ||
		got.SegmentID != c.SegmentID || got.Status != parley.CampaignScheduled || got.Type != parley.TypeMarketing {
		t.Errorf("updated %+v", got)
	}
	// Bad members are refused as create refuses them, and change nothing.
	before := campState(t, e)
	for _, tc := range []struct {
		in    parley.CampaignCreate
		field string
	}{
		{parley.CampaignCreate{Body: parley.Some("Hi {{nme}}")}, "body"},
		{parley.CampaignCreate{SendAt: parley.Some(e.Now().Add(-time.Hour).Format(time.RFC3339))}, "send_at"},
		{parley.CampaignCreate{Name: parley.Some(" ")}, "name"},
		{parley.CampaignCreate{Type: parley.Some("PROMO")}, "type"},
	} {
		_, err := e.A.UpdateCampaign(e.Ctx, c.ID, tc.in)
		if ae := apiErr(t, err, 422, parley.EValidation); ae.Field != tc.field {
			t.Errorf("field %q, want %q (%s)", ae.Field, tc.field, ae.Msg)
		}
	}
	_, err = e.A.UpdateCampaign(e.Ctx, c.ID, parley.CampaignCreate{SegmentID: parley.Some(e.segB.ID)})
	apiErr(t, err, 404, parley.ESegmentNotFound)
	if after := campState(t, e); after != before {
		t.Errorf("a refused edit changed the database:\n%s\nwant\n%s", after, before)
	}
	_, err = e.B.UpdateCampaign(e.Ctx, c.ID, parley.CampaignCreate{Name: parley.Some("Mine")})
	apiErr(t, err, 404, parley.ECampaignNotFound)

	// The old send_at came; the new one has not: nothing starts.
	e.Advance(2 * time.Hour)
	if n, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil || n != 0 {
		t.Fatalf("started %d (%v) before the edited send_at", n, err)
	}
	e.Advance(time.Hour)
	campSend(t, e, c.ID)
	for _, m := range campMessages(t, e, c.ID, 100) {
		if m.Body != "Hi friend, 30% off" {
			t.Errorf("message body %q, want the edited body rendered", m.Body)
		}
	}
	_, err = e.A.UpdateCampaign(e.Ctx, c.ID, parley.CampaignCreate{Name: parley.Some("Too late")})
	if ae := apiErr(t, err, 409, parley.ECampaignNotEditable); !strings.Contains(ae.Msg, "only a scheduled campaign") {
		t.Errorf("msg %q", ae.Msg)
	}
	canceled := campCreate(t, e, "Gone")
	if _, err := e.A.CancelCampaign(e.Ctx, canceled.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.A.UpdateCampaign(e.Ctx, canceled.ID, parley.CampaignCreate{Name: parley.Some("Back")})
	apiErr(t, err, 409, parley.ECampaignNotEditable)
}

// Issue #32: an edit and the scheduler's start of the same due campaign
// never both happen: every message carries the body of the campaign as
// it is stored, whichever commits first.
func TestCampaignEditRacesStart(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	e.SetNow(campOpen)
	campUsers(t, e, 3)
	edited, refused := 0, 0
	for i := range 12 {
		c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some(fmt.Sprint("Race ", i)),
			SegmentID: parley.Some(e.segA.ID), Body: parley.Some("old")})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var editErr error
		wg.Go(func() {
			_, editErr = e.A.UpdateCampaign(e.Ctx, c.ID, parley.CampaignCreate{Body: parley.Some("new")})
		})
		wg.Go(func() {
			if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		want := "new"
		if editErr != nil {
			apiErr(t, editErr, 409, parley.ECampaignNotEditable)
			want = "old"
			refused++
		} else {
			edited++
			if _, err := e.App.Service.ResolveDueCampaigns(e.Ctx); err != nil {
				t.Fatal(err)
			}
		}
		got, err := e.A.GetCampaign(e.Ctx, c.ID)
		if err != nil || got.Body != want || got.Status != parley.CampaignSending {
			t.Fatalf("campaign %+v (%v), want body %q, sending", got, err, want)
		}
		ms := campMessages(t, e, c.ID, 100)
		if len(ms) != 3 {
			t.Fatalf("%d messages, want 3", len(ms))
		}
		for _, m := range ms {
			if m.Body != want {
				t.Fatalf("race %d: a message says %q, the campaign %q", i, m.Body, want)
			}
		}
	}
	t.Logf("edited first %d, started first %d", edited, refused)
}

// Issue #32: a test send goes to the number typed, rendered for that
// number's contact (or the segment's first consenting member), as a
// TRANSACTIONAL message outside the campaign: not in its stats.
func TestCampaignTestSend(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	e.SetNow(campOpen)
	sample := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155550201"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(true), FirstName: parley.Some("Sam")}})
	me := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155550202"),
		UserFields: parley.UserFields{FirstName: parley.Some("Olga")}})
	c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("T"), SegmentID: parley.Some(e.segA.ID),
		Body: parley.Some(`Hi {{first_name | "there"}}`), SendAt: parley.Some(e.Now().Add(time.Hour).Format(time.RFC3339))})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.A.TestCampaign(e.Ctx, c.ID, "+1 (415) 555-0202")
	if err != nil {
		t.Fatal(err)
	}
	if m.UserID != me.ID || m.Body != "Hi Olga" || m.CampaignID != nil || m.Type != parley.TypeTransactional {
		t.Errorf("test to a contact: %+v, want Olga's, %q, no campaign, TRANSACTIONAL", m, "Hi Olga")
	}
	m, err = e.A.TestCampaign(e.Ctx, c.ID, "+14155550299")
	if err != nil {
		t.Fatal(err)
	}
	if m.Body != "Hi Sam" || m.UserID == sample.ID || m.CampaignID != nil {
		t.Errorf("test to a new number: %+v, want %q (the sample contact's) to a new contact", m, "Hi Sam")
	}
	_, err = e.A.TestCampaign(e.Ctx, c.ID, "not a number")
	apiErr(t, err, 422, parley.EInvalidPhoneNumber)
	_, err = e.B.TestCampaign(e.Ctx, c.ID, "+14155550202")
	apiErr(t, err, 404, parley.ECampaignNotFound)
	got, err := e.A.GetCampaign(e.Ctx, c.ID)
	if err != nil || got.Stats != (parley.CampaignStats{}) || got.Status != parley.CampaignScheduled {
		t.Errorf("after tests the campaign is %+v (%v), want scheduled with zero stats", got, err)
	}
}
