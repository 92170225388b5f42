package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// The campaign API (D16, issue #21) through signed requests. No worker
// runs in these tests, so a campaign stays as the test leaves it; the
// test plays the engine with store.ResolveCampaign and SQL where it needs
// a campaign that is sending or completed.

// The members of a Campaign and of its stats, exactly (D16, D1).
var (
	campMembers = []string{"id", "name", "segment_id", "body", "media_item_uuids", "type", "status",
		"send_at", "started_at", "completed_at", "date_created", "stats", "cancel_reason"}
	campStatsMembers = []string{"recipients", "skipped_unsubscribed", "skipped_frequency_cap", "queued",
		"sent", "delivered", "undelivered", "failed", "canceled", "held", "held_until", "replies", "opt_outs"}
)

// campEnv is a server whose brand A has a segment of every contact and
// brand B a segment of its own.
type campEnv struct {
	*apitest.Env
	segA, segB *parley.Segment
}

func newCampEnv(t *testing.T) *campEnv {
	t.Helper()
	e := apitest.New(t)
	c := &campEnv{Env: e}
	var err error
	if c.segA, err = e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Everyone")}); err != nil {
		t.Fatal(err)
	}
	if c.segB, err = e.B.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("B's")}); err != nil {
		t.Fatal(err)
	}
	return c
}

// campUsers creates n consenting users of brand A and one who said no.
func campUsers(t *testing.T, e *campEnv, n int) []*parley.User {
	t.Helper()
	var us []*parley.User
	for i := range n + 1 {
		consent := i < n
		us = append(us, e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415556%04d", i)),
			UserFields: parley.UserFields{MessagingConsent: parley.Some(consent)}}))
	}
	return us
}

// campCreate creates a campaign of brand A over seg that is due in an
// hour, so that an engine, were one running, would leave it scheduled.
func campCreate(t *testing.T, e *campEnv, name string) *parley.Campaign {
	t.Helper()
	c, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some(name), SegmentID: parley.Some(e.segA.ID),
		Body: parley.Some("20% off today"), SendAt: parley.Some(e.Now().Add(time.Hour).Format(time.RFC3339))})
	if err != nil {
		t.Fatalf("CreateCampaign %q: %v", name, err)
	}
	return c
}

// campExec runs a statement written with ? placeholders on either engine.
func campExec(t *testing.T, e *campEnv, q string, args ...any) {
	t.Helper()
	if e.App.DB.Engine() == "postgres" {
		var b strings.Builder
		n := 0
		for _, r := range q {
			if r == '?' {
				n++
				b.WriteString("$" + strconv.Itoa(n))
				continue
			}
			b.WriteRune(r)
		}
		q = b.String()
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// campResolve does what the engine does at send_at: the segment is
// resolved once and the campaign is sending (D16).
func campResolve(t *testing.T, e *campEnv, id int64) {
	t.Helper()
	c, err := e.App.DB.FindCampaign(e.Ctx, e.BrandA.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	err = e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		_, err := tx.ResolveCampaign(e.Ctx, c, store.Audience{SegmentID: c.SegmentID})
		return err
	})
	if err != nil {
		t.Fatalf("resolve campaign %d: %v", id, err)
	}
}

// campMessages reads every page of GET /messages?campaign_id=, limit at a
// time, and returns the messages by user id.
func campMessages(t *testing.T, e *campEnv, id int64, limit int) map[int64]*parley.Message {
	t.Helper()
	out := map[int64]*parley.Message{}
	cursor := ""
	for range 100 {
		ms, next, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{CampaignID: id, Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListMessages campaign %d: %v", id, err)
		}
		for i, m := range ms {
			if m.CampaignID == nil || *m.CampaignID != id {
				t.Fatalf("message %d of campaign %v in the list of campaign %d", m.ID, m.CampaignID, id)
			}
			if i > 0 && m.ID >= ms[i-1].ID {
				t.Fatalf("messages not newest first: %d after %d", m.ID, ms[i-1].ID)
			}
			if _, dup := out[m.UserID]; dup {
				t.Fatalf("user %d twice in the campaign's messages", m.UserID)
			}
			out[m.UserID] = m
		}
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatal("pages never end")
	return nil
}

// campState is what a refused write must leave as it was.
func campState(t *testing.T, e *campEnv) string {
	t.Helper()
	return e.Snapshot(t, `SELECT id, brand_id, name, segment_id, body, media_item_uuids, type, status, send_at,
	started_at, completed_at FROM campaigns ORDER BY id`) +
		e.Snapshot(t, `SELECT id, status, error_code, error_message, sending_at FROM messages ORDER BY id`)
}

func campWantStats(t *testing.T, got, want parley.CampaignStats) {
	t.Helper()
	if got != want {
		t.Errorf("stats %+v, want %+v", got, want)
	}
	if sum := got.SkippedUnsubscribed + got.SkippedFrequencyCap + got.Queued + got.Sent + got.Delivered +
		got.Undelivered + got.Failed + got.Canceled; sum != got.Recipients {
		t.Errorf("stats %+v add up to %d, not recipients (D16)", got, sum)
	}
}

// TestCampaignCreate: 201 with exactly D16's members, scheduled, with
// zero stats; type MARKETING and send_at now by default; a send_at 30 s
// in the past is accepted as it is.
func TestCampaignCreate(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	now := e.Now()

	r := hardSend(t, e.Env, "POST", "/api/v1/campaigns", fmt.Sprintf(`{"name":"  Black Friday ","segment_id":%d,"body":"20%% off"}`, e.segA.ID))
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s, want 201 (D16)", r.status, r.body)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	msgWantMembers(t, raw, campMembers)
	stats, _ := raw["stats"].(map[string]any)
	msgWantMembers(t, stats, campStatsMembers)
	for k, v := range stats {
		if k == "held_until" && v == nil {
			continue // nothing held (D22)
		}
		if v != float64(0) {
			t.Errorf("stats.%s = %v, want 0 on creation", k, v)
		}
	}
	for _, k := range []string{"started_at", "completed_at"} {
		if raw[k] != nil {
			t.Errorf("%s = %v, want null", k, raw[k])
		}
	}
	var c parley.Campaign
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatal(err)
	}
	if c.ID < 1 || c.Name != "Black Friday" || c.SegmentID != e.segA.ID || c.Body != "20% off" || c.Type != parley.TypeMarketing ||
		c.Status != parley.CampaignScheduled || c.MediaItemUUIDs == nil || len(c.MediaItemUUIDs) != 0 {
		t.Errorf("created %+v", c)
	}
	if want := parley.NewTime(now); !c.SendAt.Equal(want.Time) || !c.DateCreated.Equal(want.Time) {
		t.Errorf("send_at %v, date_created %v; want both now (%v): send_at absent means now", c.SendAt, c.DateCreated, want)
	}
	got, err := e.A.GetCampaign(e.Ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := json.Marshal(got); !bytes.Equal(g, r.body) {
		t.Errorf("GET answers %s, POST answered %s", g, r.body)
	}

	// 30 s in the past is inside the minute of grace; TRANSACTIONAL in any
	// case; media only; send_at null means now.
	f, err := e.A.UploadFile(e.Ctx, "pic.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatal(err)
	}
	past := now.Add(-30 * time.Second)
	c2, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("Receipt"), SegmentID: parley.Some(e.segA.ID),
		MediaItemUUIDs: parley.Some([]string{f.ID}), Type: parley.Some("transactional"),
		SendAt: parley.Some(past.In(winZone(t, "America/Chicago")).Format(time.RFC3339Nano))})
	if err != nil {
		t.Fatalf("send_at 30 s in the past: %v, want 201 (D16)", err)
	}
	if !c2.SendAt.Equal(past.Truncate(time.Microsecond)) || c2.Type != parley.TypeTransactional || c2.Body != "" ||
		!slices.Equal(c2.MediaItemUUIDs, []string{f.ID}) {
		t.Errorf("created %+v; want send_at %v in UTC", c2, past)
	}
	c3, err := e.A.CreateCampaign(e.Ctx, parley.CampaignCreate{Name: parley.Some("Now"), SegmentID: parley.Some(e.segA.ID),
		Body: parley.Some("Hi"), SendAt: parley.Null[string]()})
	if err != nil || !c3.SendAt.Equal(parley.NewTime(now).Time) {
		t.Errorf("send_at null: %+v, %v; want now", c3, err)
	}

	// Idempotency-Key replays the first answer and creates nothing more (D13).
	body := fmt.Sprintf(`{"name":"Keyed","segment_id":%d,"body":"Hi"}`, e.segA.ID)
	first := keyed(t, e.Env, "POST", "/api/v1/campaigns", body, "camp-key-1")
	again := keyed(t, e.Env, "POST", "/api/v1/campaigns", body, "camp-key-1")
	if first.status != http.StatusCreated || again.status != http.StatusCreated || !bytes.Equal(first.body, again.body) ||
		again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("keyed create: %d %s, then %d %s", first.status, first.body, again.status, again.body)
	}
	if n := e.Count(t, "campaigns"); n != 4 {
		t.Errorf("%d campaigns, want 4", n)
	}
}

// TestCampaignCreateBadInput: each bad body gets D16's documented error
// and leaves no campaign behind.
func TestCampaignCreateBadInput(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	archived, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Old")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.A.ArchiveSegment(e.Ctx, archived.ID); err != nil {
		t.Fatal(err)
	}
	seg := e.segA.ID
	at := func(d time.Duration) string { return e.Now().Add(d).Format(time.RFC3339) }
	media := make([]string, 11)
	for i := range media {
		media[i] = fmt.Sprintf(`"%08d-0000-4000-8000-000000000000"`, i)
	}
	cases := []struct {
		name, body  string
		status      int
		typ, field  string
		msgContains string
	}{
		{"other brand's segment", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi"}`, e.segB.ID),
			404, parley.ESegmentNotFound, "", fmt.Sprintf("Segment with ID [%d] not found.", e.segB.ID)},
		{"missing segment", `{"name":"X","segment_id":999999,"body":"Hi"}`, 404, parley.ESegmentNotFound, "", "[999999]"},
		{"archived segment", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi"}`, archived.ID),
			422, parley.EValidation, "segment_id", "archived"},
		{"send_at 2 min in the past", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","send_at":%q}`, seg, at(-2*time.Minute)),
			422, parley.EValidation, "send_at", "in the past"},
		{"send_at 61 s in the past", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","send_at":%q}`, seg, at(-61*time.Second)),
			422, parley.EValidation, "send_at", "in the past"},
		{"send_at without a zone", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","send_at":"2030-01-02T10:00:00"}`, seg),
			422, parley.EValidation, "send_at", "RFC 3339"},
		{"send_at a number", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","send_at":1700000000}`, seg),
			422, parley.EValidation, "send_at", ""},
		{"type CONVERSATIONAL", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","type":"CONVERSATIONAL"}`, seg),
			422, parley.EValidation, "type", "MARKETING, TRANSACTIONAL"},
		{"type unknown", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","type":"PROMO"}`, seg),
			422, parley.EValidation, "type", ""},
		{"type null", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","type":null}`, seg),
			422, parley.EValidation, "type", ""},
		{"body too long", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":%q}`, seg, strings.Repeat("é", parley.MaxMessageBody+1)),
			422, parley.EValidation, "body", "at most 1600 characters"},
		{"neither body nor media", fmt.Sprintf(`{"name":"X","segment_id":%d}`, seg), 422, parley.EValidation, "body", "required"},
		{"media not the brand's", fmt.Sprintf(`{"name":"X","segment_id":%d,"media_item_uuids":["6f1c8a52-2f0e-4b8e-9a51-3c1d2e4f5a6b"]}`, seg),
			422, parley.EInvalidMediaItem, "media_item_uuids[0]", "not a file uploaded by this brand"},
		{"media not a uuid", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","media_item_uuids":["nope"]}`, seg),
			422, parley.EInvalidMediaItem, "media_item_uuids[0]", ""},
		{"eleven media", fmt.Sprintf(`{"name":"X","segment_id":%d,"media_item_uuids":[%s]}`, seg, strings.Join(media, ",")),
			422, parley.EValidation, "media_item_uuids", "at most 10"},
		{"unknown member", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","audience":"all"}`, seg),
			422, parley.EValidation, "audience", "unknown field"},
		{"read-only member", fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","status":"sending"}`, seg),
			422, parley.EValidation, "status", "set by the server"},
		{"name missing", fmt.Sprintf(`{"segment_id":%d,"body":"Hi"}`, seg), 422, parley.EValidation, "name", "required"},
		{"name blank", fmt.Sprintf(`{"name":"  ","segment_id":%d,"body":"Hi"}`, seg), 422, parley.EValidation, "name", "required"},
		{"name too long", fmt.Sprintf(`{"name":%q,"segment_id":%d,"body":"Hi"}`, strings.Repeat("n", 101), seg),
			422, parley.EValidation, "name", "at most 100"},
		{"segment_id missing", `{"name":"X","body":"Hi"}`, 422, parley.EValidation, "segment_id", "required"},
		{"segment_id null", `{"name":"X","segment_id":null,"body":"Hi"}`, 422, parley.EValidation, "segment_id", "required"},
		{"segment_id 0", `{"name":"X","segment_id":0,"body":"Hi"}`, 422, parley.EValidation, "segment_id", "≥ 1"},
		{"segment_id a string", `{"name":"X","segment_id":"1","body":"Hi"}`, 422, parley.EValidation, "segment_id", "integer"},
		{"not an object", `[]`, 400, parley.EInvalidRequest, "", ""},
	}
	before := campState(t, e)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := hardSend(t, e.Env, "POST", "/api/v1/campaigns", c.body)
			msg := wantError(t, r, c.status, c.typ)
			if _, _, field := authEnvelope(t, r.body); field != c.field {
				t.Errorf("field %q, want %q (%s)", field, c.field, msg)
			}
			if !strings.Contains(msg, c.msgContains) {
				t.Errorf("msg %q, want it to say %q", msg, c.msgContains)
			}
			if after := campState(t, e); after != before {
				t.Errorf("a refused create changed the database:\n%s\nwant\n%s", after, before)
			}
		})
	}
}

// TestCampaignReadAndList: GET one, pages newest first with stats, and
// another brand's campaign is 404 campaign_not_found everywhere.
func TestCampaignReadAndList(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	var ids []int64
	for i := range 5 {
		ids = append(ids, campCreate(t, e, fmt.Sprintf("C%d", i)).ID)
	}
	slices.Reverse(ids)
	var got []int64
	cursor := ""
	for page := 0; ; page++ {
		cs, next, err := e.A.ListCampaigns(e.Ctx, parley.CampaignFilter{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) > 2 || page > 3 {
			t.Fatalf("page %d of %d campaigns", page, len(cs))
		}
		for _, c := range cs {
			got = append(got, c.ID)
			if c.Status != parley.CampaignScheduled || c.Stats != (parley.CampaignStats{}) {
				t.Errorf("listed %+v", c)
			}
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(got, ids) {
		t.Errorf("listed %v, want %v (newest first)", got, ids)
	}
	if cs, next, err := e.B.ListCampaigns(e.Ctx, parley.CampaignFilter{}); err != nil || len(cs) != 0 || next != "" {
		t.Errorf("brand B lists %d campaigns (%v), want none", len(cs), err)
	}
	r := hardSend(t, e.Env, "GET", "/api/v1/campaigns", "")
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"next_cursor":null`) {
		t.Errorf("GET /campaigns: %d %s, want a page with next_cursor null", r.status, r.body)
	}

	for _, bad := range []string{"?limit=0", "?limit=101", "?limit=x", "?cursor=bogus"} {
		wantError(t, hardSend(t, e.Env, "GET", "/api/v1/campaigns"+bad, ""), 422, parley.EValidation)
	}
	wantError(t, hardSend(t, e.Env, "GET", "/api/v1/campaigns/0", ""), 422, parley.EValidation)
	wantError(t, hardSend(t, e.Env, "POST", "/api/v1/campaigns/abc/cancel", ""), 422, parley.EValidation)
	msg := wantError(t, hardSend(t, e.Env, "GET", "/api/v1/campaigns/999999", ""), 404, parley.ECampaignNotFound)
	if msg != "Campaign with ID [999999] not found." {
		t.Errorf("msg %q", msg)
	}

	// Brand B sees none of A's: read, cancel and the messages filter.
	before := campState(t, e)
	bc := e.Client(e.CredB.Username, e.CredB.Secret)
	if _, err := bc.GetCampaign(e.Ctx, ids[0]); !isAPIError(err, 404, parley.ECampaignNotFound) {
		t.Errorf("B reads A's campaign: %v, want 404 campaign_not_found", err)
	}
	if _, err := bc.CancelCampaign(e.Ctx, ids[0]); !isAPIError(err, 404, parley.ECampaignNotFound) {
		t.Errorf("B cancels A's campaign: %v, want 404 campaign_not_found", err)
	}
	if _, _, err := bc.ListMessages(e.Ctx, parley.MessageFilter{CampaignID: ids[0]}); !isAPIError(err, 404, parley.ECampaignNotFound) {
		t.Errorf("B lists A's campaign's messages: %v, want 404 campaign_not_found", err)
	}
	if after := campState(t, e); after != before {
		t.Errorf("brand B changed brand A's campaign:\n%s", after)
	}
}

// TestCampaignCancelScheduled: a scheduled campaign becomes canceled;
// canceling it again answers 200 with the same campaign and changes
// nothing; the engine would then never resolve it (ResolveCampaign
// refuses anything not scheduled).
func TestCampaignCancelScheduled(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	campUsers(t, e, 2)
	c := campCreate(t, e, "Later")
	r := hardSend(t, e.Env, "POST", fmt.Sprintf("/api/v1/campaigns/%d/cancel", c.ID), "")
	if r.status != http.StatusOK {
		t.Fatalf("cancel: %d %s, want 200", r.status, r.body)
	}
	var got parley.Campaign
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	want := *c
	want.Status = parley.CampaignCanceled
	if g, _ := json.Marshal(got); string(g) != string(must(json.Marshal(want))) {
		t.Errorf("canceled %s, want %s", g, must(json.Marshal(want)))
	}
	state := campState(t, e)
	again := hardSend(t, e.Env, "POST", fmt.Sprintf("/api/v1/campaigns/%d/cancel", c.ID), "")
	if again.status != http.StatusOK || !bytes.Equal(again.body, r.body) {
		t.Errorf("second cancel: %d %s, want 200 %s", again.status, again.body, r.body)
	}
	if after := campState(t, e); after != state {
		t.Errorf("a second cancel changed the database:\n%s\nwant\n%s", after, state)
	}
	stored, err := e.App.DB.FindCampaign(e.Ctx, e.BrandA.ID, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	err = e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		_, err := tx.ResolveCampaign(e.Ctx, stored, store.Audience{SegmentID: stored.SegmentID})
		return err
	})
	if err != store.ErrCampaignNotScheduled {
		t.Errorf("resolving a canceled campaign: %v, want ErrCampaignNotScheduled", err)
	}
	if n := e.Count(t, "messages"); n != 0 {
		t.Errorf("%d messages after a canceled campaign, want none", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestCampaignCancelSending: canceling a sending campaign fails, with
// error_code canceled, exactly its messages that no sender has claimed
// (queued, sending_at null; held ones too); claimed, sent and delivered
// ones are untouched, other campaigns' and API messages too; the stats
// add up. With an endpoint subscribed to message.failed each canceled
// message has its event, in the same transaction; without one, none.
func TestCampaignCancelSending(t *testing.T) {
	t.Parallel()
	for _, hooked := range []bool{false, true} {
		t.Run(fmt.Sprintf("endpoint=%v", hooked), func(t *testing.T) {
			t.Parallel()
			e := newCampEnv(t)
			us := campUsers(t, e, 6) // 6 consenting, 1 not
			if hooked {
				whCreate(t, e.A, "http://127.0.0.1:9/hook", parley.EventMessageFailed)
			}
			c := campCreate(t, e, "Now")
			other := campCreate(t, e, "Other")
			campResolve(t, e, c.ID)
			campResolve(t, e, other.ID)
			api := msgSend(t, e.Env, e.A, parley.MessageCreate{UserID: parley.Some(us[0].ID), Body: parley.Some("Hi")})

			ms := campMessages(t, e, c.ID, 100)
			if len(ms) != 6 {
				t.Fatalf("%d messages after resolution, want 6", len(ms))
			}
			now := e.Now().UnixMicro()
			sent, delivered, claimed, held := ms[us[0].ID].ID, ms[us[1].ID].ID, ms[us[2].ID].ID, ms[us[3].ID].ID
			campExec(t, e, `UPDATE messages SET status = 'sent', date_sent = ?, sending_at = ? WHERE id = ?`, now, now, sent)
			campExec(t, e, `UPDATE messages SET status = 'delivered', date_sent = ?, date_delivered = ?, sending_at = ? WHERE id = ?`,
				now, now, now, delivered)
			campExec(t, e, `UPDATE messages SET sending_at = ? WHERE id = ?`, now, claimed)
			campExec(t, e, `UPDATE messages SET scheduled_at = ? WHERE id = ?`, now+3600e6, held)
			eventsBefore := whCountEvents(t, e.Env, e.BrandA.ID)
			otherBefore := e.Snapshot(t, fmt.Sprintf(`SELECT id, status, error_code FROM messages WHERE campaign_id = %d OR id = %d ORDER BY id`,
				other.ID, api.ID))

			got, err := e.A.CancelCampaign(e.Ctx, c.ID)
			if err != nil {
				t.Fatalf("cancel: %v", err)
			}
			if got.Status != parley.CampaignCanceled || got.StartedAt == nil || got.CompletedAt != nil {
				t.Errorf("canceled %+v", got)
			}
			want := parley.CampaignStats{Recipients: 7, SkippedUnsubscribed: 1, Queued: 1, Sent: 1, Delivered: 1, Canceled: 3}
			campWantStats(t, got.Stats, want)
			if read, err := e.A.GetCampaign(e.Ctx, c.ID); err != nil || read.Stats != want || read.Status != parley.CampaignCanceled {
				t.Errorf("GET after cancel: %+v, %v", read, err)
			}

			after := campMessages(t, e, c.ID, 2)
			var canceled []int64
			for uid, m := range after {
				switch m.ID {
				case sent, delivered, claimed:
					if m.Status == parley.StatusFailed || m.ErrorCode != nil {
						t.Errorf("message %d (claimed or handed over) is %s %v, want untouched", m.ID, m.Status, strOf(m.ErrorCode))
					}
				default:
					canceled = append(canceled, m.ID)
					if m.Status != parley.StatusFailed || strOf(m.ErrorCode) != parley.ErrorCodeCanceled ||
						!strings.Contains(strOf(m.ErrorMessage), "canceled") || m.DateSent != nil {
						t.Errorf("message %d to user %d: %s %s %q, want failed canceled", m.ID, uid, m.Status,
							strOf(m.ErrorCode), strOf(m.ErrorMessage))
					}
				}
			}
			if len(canceled) != 3 {
				t.Errorf("%d messages canceled, want 3", len(canceled))
			}
			if s := e.Snapshot(t, fmt.Sprintf(`SELECT id, status, error_code FROM messages WHERE campaign_id = %d OR id = %d ORDER BY id`,
				other.ID, api.ID)); s != otherBefore {
				t.Errorf("cancel touched another campaign's or an API message:\n%s\nwant\n%s", s, otherBefore)
			}

			// message.failed events: one per canceled message, carrying it.
			rows, err := e.App.DB.Writer().QueryContext(e.Ctx, `SELECT type, payload FROM events WHERE brand_id = `+
				itoa(e.BrandA.ID)+` ORDER BY date_created, id`)
			if err != nil {
				t.Fatal(err)
			}
			var failed []int64
			for rows.Next() {
				var typ, payload string
				if err := rows.Scan(&typ, &payload); err != nil {
					t.Fatal(err)
				}
				if typ != parley.EventMessageFailed {
					continue
				}
				var ev struct{ Data parley.Message }
				if err := json.Unmarshal([]byte(payload), &ev); err != nil {
					t.Fatal(err)
				}
				if ev.Data.Status != parley.StatusFailed || strOf(ev.Data.ErrorCode) != parley.ErrorCodeCanceled {
					t.Errorf("event data %+v", ev.Data)
				}
				failed = append(failed, ev.Data.ID)
			}
			rows.Close()
			slices.Sort(failed)
			slices.Sort(canceled)
			if hooked && !slices.Equal(failed, canceled) {
				t.Errorf("message.failed events for %v, want %v", failed, canceled)
			}
			if !hooked && (len(failed) != 0 || whCountEvents(t, e.Env, e.BrandA.ID) != eventsBefore) {
				t.Errorf("events written without a subscribed endpoint: %v", failed)
			}

			// A second cancel changes nothing and answers the same.
			state := campState(t, e)
			again, err := e.A.CancelCampaign(e.Ctx, c.ID)
			if err != nil || again.Stats != want || again.Status != parley.CampaignCanceled {
				t.Errorf("second cancel: %+v, %v", again, err)
			}
			if s := campState(t, e); s != state {
				t.Errorf("a second cancel changed the database:\n%s\nwant\n%s", s, state)
			}
		})
	}
}

// TestCampaignCancelCompleted: a completed campaign cannot be canceled:
// 409 campaign_not_cancelable, and nothing changes.
func TestCampaignCancelCompleted(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	campUsers(t, e, 2)
	c := campCreate(t, e, "Done")
	campResolve(t, e, c.ID)
	now := e.Now().UnixMicro()
	campExec(t, e, `UPDATE messages SET status = 'delivered', date_sent = ?, date_delivered = ?, sending_at = ? WHERE campaign_id = ?`,
		now, now, now, c.ID)
	campExec(t, e, `UPDATE campaigns SET status = 'completed', completed_at = ? WHERE id = ?`, now, c.ID)
	before := campState(t, e)
	r := hardSend(t, e.Env, "POST", fmt.Sprintf("/api/v1/campaigns/%d/cancel", c.ID), "")
	msg := wantError(t, r, http.StatusConflict, parley.ECampaignNotCancelable)
	if !strings.Contains(msg, "completed") {
		t.Errorf("msg %q", msg)
	}
	if after := campState(t, e); after != before {
		t.Errorf("cancel of a completed campaign changed the database:\n%s\nwant\n%s", after, before)
	}
	got, err := e.A.GetCampaign(e.Ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != parley.CampaignCompleted || got.CompletedAt == nil {
		t.Errorf("campaign %+v", got)
	}
	campWantStats(t, got.Stats, parley.CampaignStats{Recipients: 3, SkippedUnsubscribed: 1, Delivered: 2})
}

// TestCampaignMessagesFilter: GET /messages?campaign_id= answers exactly
// the campaign's messages, page by page, newest first; other campaigns'
// and API messages to the same users stay out; a campaign of none or
// another brand is 404 campaign_not_found; a bad id 422.
func TestCampaignMessagesFilter(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	us := campUsers(t, e, 5)
	c := campCreate(t, e, "One")
	other := campCreate(t, e, "Two")
	msgSend(t, e.Env, e.A, parley.MessageCreate{UserID: parley.Some(us[0].ID), Body: parley.Some("Hi")})
	campResolve(t, e, c.ID)
	msgSend(t, e.Env, e.A, parley.MessageCreate{UserID: parley.Some(us[1].ID), Body: parley.Some("Hi")})
	campResolve(t, e, other.ID)

	for _, limit := range []int{1, 2, 100} {
		got := campMessages(t, e, c.ID, limit)
		var users []int64
		for uid := range got {
			users = append(users, uid)
		}
		slices.Sort(users)
		var want []int64
		for _, u := range us[:5] {
			want = append(want, u.ID)
		}
		if !slices.Equal(users, want) {
			t.Errorf("limit %d: messages to %v, want %v (the consenting members, once each)", limit, users, want)
		}
	}
	// With user_id too: that user's message of the campaign only.
	ms, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{CampaignID: c.ID, UserID: us[0].ID})
	if err != nil || len(ms) != 1 || *ms[0].CampaignID != c.ID || ms[0].UserID != us[0].ID {
		t.Errorf("campaign and user: %d messages, %v", len(ms), err)
	}
	// A campaign without messages yet: an empty page, not 404.
	fresh := campCreate(t, e, "Three")
	if ms, next, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{CampaignID: fresh.ID}); err != nil || len(ms) != 0 || next != "" {
		t.Errorf("scheduled campaign: %d messages, %v", len(ms), err)
	}

	wantError(t, hardSend(t, e.Env, "GET", "/api/v1/messages?campaign_id=999999", ""), 404, parley.ECampaignNotFound)
	for _, bad := range []string{"0", "-1", "x", "1.5"} {
		r := hardSend(t, e.Env, "GET", "/api/v1/messages?campaign_id="+bad, "")
		wantError(t, r, 422, parley.EValidation)
		if _, _, field := authEnvelope(t, r.body); field != "campaign_id" {
			t.Errorf("campaign_id=%s: field %q", bad, field)
		}
	}
}
