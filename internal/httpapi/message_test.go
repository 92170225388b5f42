package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// msgMembers are the members of a Message, exactly (D8: the spec's members
// plus error_code and error_message; D1: nullable members are present;
// body_truncated, #31; flow_id, D21).
var msgMembers = []string{"id", "user_id", "direction", "status", "date_created", "body",
	"media_item_uuids", "type", "date_sent", "date_delivered", "error_code", "error_message",
	"encoding", "num_segments", "campaign_id", "scheduled_at", "body_truncated", "flow_id"}

// msgUser creates a user of c's brand with a distinct valid number.
func msgUser(t *testing.T, e *apitest.Env, c *client.Client, n int) *parley.User {
	t.Helper()
	return e.MustCreateUser(t, c, parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555%04d", 2600+n))})
}

// msgPost sends a raw JSON body to POST /messages as c.
func msgPost(t *testing.T, e *apitest.Env, c *client.Client, body string) *client.Response {
	t.Helper()
	resp, err := c.Do(e.Ctx, "POST", "/messages", []byte(body), "application/json")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// msgObject decodes a JSON object answer.
func msgObject(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("answer %q is not a JSON object: %v", body, err)
	}
	return m
}

// msgWantMembers fails unless m has exactly the members want.
func msgWantMembers(t *testing.T, m map[string]any, want []string) {
	t.Helper()
	got := keys(m)
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	if !slices.Equal(got, w) {
		t.Errorf("members = %v, want exactly %v (D1, D8)", got, w)
	}
}

// msgSend queues a message through the typed client or fails the test.
func msgSend(t *testing.T, e *apitest.Env, c *client.Client, in parley.MessageCreate) *parley.Message {
	t.Helper()
	m, err := c.SendMessage(e.Ctx, in)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return m
}

// msgJobMessageIDs returns the message_id of every delivery job, in job order.
func msgJobMessageIDs(t *testing.T, e *apitest.Env) []int64 {
	t.Helper()
	rows, err := e.App.DB.Writer().QueryContext(e.Ctx, "SELECT kind, args FROM river_job WHERE kind <> 'extraction_sweep' ORDER BY id")
	if err != nil {
		t.Fatalf("river_job: %v", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var kind string
		var args []byte
		if err := rows.Scan(&kind, &args); err != nil {
			t.Fatalf("river_job: %v", err)
		}
		var a struct {
			MessageID int64 `json:"message_id"`
			BrandID   int64 `json:"brand_id"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			t.Fatalf("river_job args %q: %v", args, err)
		}
		if kind != "deliver_message" {
			t.Errorf("job kind = %q, want deliver_message (D8)", kind)
		}
		out = append(out, a.MessageID)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// msgUpload uploads a small PNG as c and returns its id.
func msgUpload(t *testing.T, e *apitest.Env, c *client.Client) string {
	t.Helper()
	f, err := c.UploadFile(e.Ctx, "pic.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatalf("UploadFile: %v", err)
	}
	return f.ID
}

func TestSendMessageQueuedWithAllMembers(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	resp := msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"body":"Hello there"}`, u.ID))
	if resp.StatusCode != 201 {
		t.Fatalf("status = %d (%s), want 201 (D3)", resp.StatusCode, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q (D1)", ct)
	}
	got := msgObject(t, resp.Body)
	msgWantMembers(t, got, msgMembers)
	want := map[string]any{
		"user_id":      float64(u.ID),
		"status":       "queued",
		"direction":    "outbound",
		"body":         "Hello there",
		"type":         "CONVERSATIONAL",
		"encoding":     "GSM-7",
		"num_segments": float64(1),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v (D8)", k, got[k], v)
		}
	}
	for _, k := range []string{"date_sent", "date_delivered", "error_code", "error_message"} {
		if v, ok := got[k]; !ok || v != nil {
			t.Errorf("%s = %#v, want present and null on a queued message (D8)", k, v)
		}
	}
	if media, ok := got["media_item_uuids"].([]any); !ok || len(media) != 0 {
		t.Errorf("media_item_uuids = %#v, want [] when none were sent (D8)", got["media_item_uuids"])
	}
	if id, _ := got["id"].(float64); id < 1 {
		t.Errorf("id = %#v, want an integer ≥ 1", got["id"])
	}
	created, _ := got["date_created"].(string)
	if _, err := time.Parse(parley.TimeFormat, created); err != nil {
		t.Errorf("date_created %q is not RFC 3339 UTC with microseconds (D1)", created)
	}

	// D8: the message and its delivery job are written together.
	if n := e.Count(t, "messages"); n != 1 {
		t.Errorf("messages rows = %d, want 1", n)
	}
	id := int64(got["id"].(float64))
	if jobs := msgJobMessageIDs(t, e); !slices.Equal(jobs, []int64{id}) {
		t.Errorf("delivery jobs for messages %v, want exactly one for message %d (D8 transactional enqueue)", jobs, id)
	}
}

func TestSendMessageTypes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	for _, typ := range []string{"CONVERSATIONAL", "MARKETING", "TRANSACTIONAL"} {
		t.Run(typ+"Accepted", func(t *testing.T) {
			resp := msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"body":"hi","type":%q}`, u.ID, typ))
			if resp.StatusCode != 201 {
				t.Fatalf("status = %d (%s), want 201: %s is an allowed type (D8)", resp.StatusCode, resp.Body, typ)
			}
			if got := msgObject(t, resp.Body)["type"]; got != typ {
				t.Errorf("type = %#v, want %q (D8)", got, typ)
			}
		})
	}
	before := e.State(t)
	for _, tc := range []struct{ name, typ string }{
		{"UnknownTypeRejected", `"PROMOTIONAL"`},
		{"EmptyTypeRejected", `""`},
		{"NumericTypeRejected", `1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"body":"hi","type":%s}`, u.ID, tc.typ))
			ae := wantAPIError(t, resp.Err(), 422, parley.EValidation)
			if !strings.HasPrefix(ae.Msg, "type:") {
				t.Errorf("msg = %q, want it to name type (D3)", ae.Msg)
			}
		})
	}
	if e.State(t) != before {
		t.Error("a rejected message changed the database (D8)")
	}
}

func TestSendMessageUserIDValidation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	msgUser(t, e, e.A, 1) // user 1 exists, so "1" and 1.5 fail on their type, not on lookup
	before := e.State(t)
	for _, tc := range []struct{ name, body string }{
		{"MissingRejected", `{"body":"hi"}`},
		{"NullRejected", `{"user_id":null,"body":"hi"}`},
		{"ZeroRejected", `{"user_id":0,"body":"hi"}`},
		{"NegativeRejected", `{"user_id":-1,"body":"hi"}`},
		{"StringRejected", `{"user_id":"1","body":"hi"}`},
		{"FractionRejected", `{"user_id":1.5,"body":"hi"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := msgPost(t, e, e.A, tc.body)
			ae := wantAPIError(t, resp.Err(), 422, parley.EValidation)
			if !strings.HasPrefix(ae.Msg, "user_id:") {
				t.Errorf("msg = %q, want it to name user_id (D3, D8)", ae.Msg)
			}
		})
	}
	if e.State(t) != before {
		t.Error("a rejected message changed the database (no message, no job; D8)")
	}
}

func TestSendMessageUnknownRecipient(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	deleted := msgUser(t, e, e.A, 1)
	if _, err := e.A.DeleteUser(e.Ctx, deleted.ID); err != nil {
		t.Fatal(err)
	}
	other := msgUser(t, e, e.B, 2)
	before := e.State(t)
	for _, tc := range []struct {
		name string
		id   int64
	}{
		{"UnknownUserNotFound", 999999},
		{"DeletedUserNotFound", deleted.ID},
		{"OtherBrandsUserNotFound", other.ID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"body":"hi"}`, tc.id))
			ae := wantAPIError(t, resp.Err(), 404, parley.EUserNotFound)
			if want := fmt.Sprintf("User with ID [%d] not found.", tc.id); ae.Msg != want {
				t.Errorf("msg = %q, want %q (D5, D8)", ae.Msg, want)
			}
			// The recipient is checked before the media, whose id is no file here.
			resp = msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"media_item_uuids":["3f1c2e4a-5b6d-4e7f-8a9b-0c1d2e3f4a5b"]}`, tc.id))
			wantAPIError(t, resp.Err(), 404, parley.EUserNotFound)
		})
	}
	if e.State(t) != before {
		t.Error("a message to a missing recipient changed the database (D8)")
	}
}

func TestSendMessageBodyLength(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)

	t.Run("1600RunesAccepted", func(t *testing.T) {
		body := strings.Repeat("é", parley.MaxMessageBody) // 1600 runes, 3200 bytes: the limit counts characters (D8)
		m := msgSend(t, e, e.A, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some(body)})
		if m.Body != body {
			t.Errorf("body came back with %d runes, want the 1600 sent", len([]rune(m.Body)))
		}
	})
	t.Run("1601RunesRejected", func(t *testing.T) {
		before := e.State(t)
		body := strings.Repeat("a", parley.MaxMessageBody+1)
		_, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some(body)})
		ae := wantAPIError(t, err, 422, parley.EValidation)
		if ae.Msg != "body: at most 1600 characters" {
			t.Errorf("msg = %q, want %q (D3, D8)", ae.Msg, "body: at most 1600 characters")
		}
		if e.State(t) != before {
			t.Error("a rejected message changed the database (D8)")
		}
	})
}

func TestSendMessageRequiresBodyOrMedia(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	before := e.State(t)
	for _, tc := range []struct{ name, body string }{
		{"NeitherRejected", fmt.Sprintf(`{"user_id":%d}`, u.ID)},
		{"EmptyBodyRejected", fmt.Sprintf(`{"user_id":%d,"body":""}`, u.ID)},
		{"EmptyBodyAndNoMediaRejected", fmt.Sprintf(`{"user_id":%d,"body":"","media_item_uuids":[]}`, u.ID)},
		{"NullBodyRejected", fmt.Sprintf(`{"user_id":%d,"body":null}`, u.ID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantAPIError(t, msgPost(t, e, e.A, tc.body).Err(), 422, parley.EValidation)
		})
	}
	if e.State(t) != before {
		t.Error("a rejected message changed the database (D8)")
	}
}

func TestSendMessageMediaOnly(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	f1, f2 := msgUpload(t, e, e.A), msgUpload(t, e, e.A)
	resp := msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"media_item_uuids":[%q,%q]}`, u.ID, f1, f2))
	if resp.StatusCode != 201 {
		t.Fatalf("status = %d (%s), want 201: a media-only message is allowed (D8)", resp.StatusCode, resp.Body)
	}
	got := msgObject(t, resp.Body)
	msgWantMembers(t, got, msgMembers)
	if v, ok := got["body"]; !ok || v != "" {
		t.Errorf("body = %#v, want \"\" on a media-only message (D8)", v)
	}
	media, _ := got["media_item_uuids"].([]any)
	if len(media) != 2 || media[0] != f1 || media[1] != f2 {
		t.Errorf("media_item_uuids = %#v, want [%s %s] in the order sent (D8)", got["media_item_uuids"], f1, f2)
	}
	id := int64(got["id"].(float64))
	m, err := e.A.GetMessage(e.Ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.MediaItemUUIDs, []string{f1, f2}) || m.Body != "" {
		t.Errorf("stored message = %+v, want the media and empty body (D8)", m)
	}
}

func TestSendMessageMediaValidation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	var own []string
	for range parley.MaxMediaItems + 1 {
		own = append(own, msgUpload(t, e, e.A))
	}
	theirs := msgUpload(t, e, e.B)

	t.Run("TenItemsAccepted", func(t *testing.T) {
		m := msgSend(t, e, e.A, parley.MessageCreate{UserID: parley.Some(u.ID), MediaItemUUIDs: parley.Some(own[:10])})
		if !slices.Equal(m.MediaItemUUIDs, own[:10]) {
			t.Errorf("media_item_uuids = %v, want the 10 sent (D8)", m.MediaItemUUIDs)
		}
	})

	before := e.State(t)
	jobs := e.Count(t, "river_job")
	t.Run("ElevenItemsRejected", func(t *testing.T) {
		// Every id is a valid file of the brand: only the count is wrong (D3: validation_error).
		_, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("hi"),
			MediaItemUUIDs: parley.Some(own)})
		ae := wantAPIError(t, err, 422, parley.EValidation)
		if !strings.HasPrefix(ae.Msg, "media_item_uuids:") {
			t.Errorf("msg = %q, want it to name media_item_uuids (D3)", ae.Msg)
		}
	})
	for _, tc := range []struct{ name, id string }{
		{"NotAUUIDInvalid", "not-a-uuid"},
		{"UnknownUUIDInvalid", "3f1c2e4a-5b6d-4e7f-8a9b-0c1d2e3f4a5b"},
		{"OtherBrandsFileInvalid", theirs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("hi"),
				MediaItemUUIDs: parley.Some([]string{own[0], tc.id})})
			ae := wantAPIError(t, err, 422, parley.EInvalidMediaItem)
			if !strings.Contains(ae.Msg, tc.id) {
				t.Errorf("msg = %q, want it to name the bad id %q (D8)", ae.Msg, tc.id)
			}
		})
	}
	if e.State(t) != before {
		t.Error("a rejected message changed the database (D8)")
	}
	if n := e.Count(t, "river_job"); n != jobs {
		t.Errorf("river_job rows %d → %d after rejected messages, want no job enqueued (D8)", jobs, n)
	}
}

// TestSendMessageEnqueuesOneJobPerMessage checks the transactional enqueue of
// D8 over a mix of accepted and rejected messages: exactly one delivery job
// per stored message, naming it, and none for a rejection.
func TestSendMessageEnqueuesOneJobPerMessage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	ub := msgUser(t, e, e.B, 2)
	var ids []int64
	for i := range 4 {
		ids = append(ids, msgSend(t, e, e.A, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("m" + strconv.Itoa(i))}).ID)
		// Rejections between the accepted ones must not enqueue anything.
		msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"body":"x"}`, ub.ID))
		msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d}`, u.ID))
	}
	ids = append(ids, msgSend(t, e, e.B, parley.MessageCreate{UserID: parley.Some(ub.ID), Body: parley.Some("b")}).ID)
	if n := e.Count(t, "messages"); n != len(ids) {
		t.Errorf("messages rows = %d, want %d", n, len(ids))
	}
	jobs := msgJobMessageIDs(t, e)
	if !slices.Equal(jobs, ids) {
		t.Errorf("delivery jobs for messages %v, want exactly one per accepted message %v (D8)", jobs, ids)
	}
}

func TestGetMessage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	f := msgUpload(t, e, e.A)
	sent := msgPost(t, e, e.A, fmt.Sprintf(`{"user_id":%d,"body":"round trip","type":"MARKETING","media_item_uuids":[%q]}`, u.ID, f))
	if sent.StatusCode != 201 {
		t.Fatalf("send: %d %s", sent.StatusCode, sent.Body)
	}
	want := msgObject(t, sent.Body)
	id := int64(want["id"].(float64))

	t.Run("RoundTripEqualsCreateAnswer", func(t *testing.T) {
		resp := mustDo(t, e.A, "GET", "/messages/"+strconv.FormatInt(id, 10), nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d (%s), want 200 (D3)", resp.StatusCode, resp.Body)
		}
		got := msgObject(t, resp.Body)
		msgWantMembers(t, got, msgMembers)
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(got)
		if !bytes.Equal(wb, gb) {
			t.Errorf("GET = %s\nPOST = %s\nwant the same message (D8)", gb, wb)
		}
	})
	t.Run("OtherBrandsMessageNotFound", func(t *testing.T) {
		resp := mustDo(t, e.B, "GET", "/messages/"+strconv.FormatInt(id, 10), nil)
		wantAPIError(t, resp.Err(), 404, parley.ENotFound)
		if strings.Contains(string(resp.Body), "round trip") {
			t.Errorf("brand B's 404 leaks the message: %s", resp.Body)
		}
	})
	t.Run("MissingMessageNotFound", func(t *testing.T) {
		wantAPIError(t, mustDo(t, e.A, "GET", "/messages/999999", nil).Err(), 404, parley.ENotFound)
	})
	for _, bad := range []string{"abc", "0", "-1", "1.5"} {
		t.Run("PathID"+bad+"Invalid", func(t *testing.T) {
			resp := mustDo(t, e.A, "GET", "/messages/"+bad, nil)
			ae := wantAPIError(t, resp.Err(), 422, parley.EValidation)
			if !strings.HasPrefix(ae.Msg, "message_id:") {
				t.Errorf("msg = %q, want it to name the path id (D3)", ae.Msg)
			}
		})
	}
}

// msgList fetches GET path as c and decodes the list page, checking its
// shape (D8: {"data": [...], "next_cursor": null|string}).
func msgList(t *testing.T, c *client.Client, path string) (ids []int64, next *string) {
	t.Helper()
	resp := mustDo(t, c, "GET", path, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Body)
	}
	page := msgObject(t, resp.Body)
	msgWantMembers(t, page, []string{"data", "next_cursor"})
	data, ok := page["data"].([]any)
	if !ok {
		t.Fatalf("data = %#v, want an array (D8)", page["data"])
	}
	for _, item := range data {
		m, _ := item.(map[string]any)
		msgWantMembers(t, m, msgMembers)
		ids = append(ids, int64(m["id"].(float64)))
	}
	switch nc := page["next_cursor"].(type) {
	case nil:
	case string:
		if nc == "" {
			t.Errorf("next_cursor is \"\"; want null or a cursor (D8)")
		}
		next = &nc
	default:
		t.Fatalf("next_cursor = %#v, want null or a string (D8)", nc)
	}
	return ids, next
}

func TestListMessages(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u1, u2 := msgUser(t, e, e.A, 1), msgUser(t, e, e.A, 2)
	var all, of1 []int64 // in send order
	for i := range 5 {
		u := u1
		if i%2 == 1 {
			u = u2
		}
		m := msgSend(t, e, e.A, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("m" + strconv.Itoa(i))})
		all = append(all, m.ID)
		if u == u1 {
			of1 = append(of1, m.ID)
		}
		e.Advance(time.Millisecond)
	}
	ub := msgUser(t, e, e.B, 3)
	msgSend(t, e, e.B, parley.MessageCreate{UserID: parley.Some(ub.ID), Body: parley.Some("brand B")})
	newestFirst := slices.Clone(all)
	slices.Reverse(newestFirst)

	t.Run("AllNewestFirstNoCursor", func(t *testing.T) {
		ids, next := msgList(t, e.A, "/messages")
		if !slices.Equal(ids, newestFirst) {
			t.Errorf("ids = %v, want brand A's messages newest first %v (D8)", ids, newestFirst)
		}
		if next != nil {
			t.Errorf("next_cursor = %q, want null on the only page (D8)", *next)
		}
	})
	t.Run("NewestFirstByDate", func(t *testing.T) {
		msgs, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(msgs); i++ {
			if !msgs[i-1].DateCreated.After(msgs[i].DateCreated.Time) {
				t.Errorf("message %d (%v) listed before %d (%v): want newest first (D8)",
					msgs[i-1].ID, msgs[i-1].DateCreated, msgs[i].ID, msgs[i].DateCreated)
			}
		}
	})
	t.Run("LimitCuts", func(t *testing.T) {
		ids, next := msgList(t, e.A, "/messages?limit=2")
		if !slices.Equal(ids, newestFirst[:2]) {
			t.Errorf("ids = %v, want the 2 newest %v (D8)", ids, newestFirst[:2])
		}
		if next == nil {
			t.Error("next_cursor = null with more messages left (D8)")
		}
	})
	t.Run("LimitEqualToTotalHasNoNextPage", func(t *testing.T) {
		ids, next := msgList(t, e.A, "/messages?limit=5")
		if len(ids) != 5 || next != nil {
			t.Errorf("ids = %v, next = %v; want all 5 and null cursor (no empty last page)", ids, next)
		}
	})
	t.Run("CursorPagingCoversAllOnce", func(t *testing.T) {
		var seen []int64
		path := "/messages?limit=2"
		pages := 0
		for {
			ids, next := msgList(t, e.A, path)
			pages++
			if len(ids) == 0 || len(ids) > 2 {
				t.Fatalf("page %d has %d items, want 1–2", pages, len(ids))
			}
			seen = append(seen, ids...)
			if next == nil {
				break
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			path = "/messages?limit=2&cursor=" + *next
		}
		if pages != 3 || !slices.Equal(seen, newestFirst) {
			t.Errorf("pages = %d, seen = %v; want 3 pages covering %v once each, newest first (D8)", pages, seen, newestFirst)
		}
	})
	t.Run("UserIDFilters", func(t *testing.T) {
		ids, _ := msgList(t, e.A, "/messages?user_id="+strconv.FormatInt(u1.ID, 10))
		want := slices.Clone(of1)
		slices.Reverse(want)
		if !slices.Equal(ids, want) {
			t.Errorf("ids = %v, want only user %d's messages %v (D8)", ids, u1.ID, want)
		}
	})
	t.Run("UserIDFilterWithPaging", func(t *testing.T) {
		want := slices.Clone(of1)
		slices.Reverse(want)
		var seen []int64
		path := "/messages?limit=1&user_id=" + strconv.FormatInt(u1.ID, 10)
		for range 10 {
			ids, next := msgList(t, e.A, path)
			seen = append(seen, ids...)
			if next == nil {
				break
			}
			path = "/messages?limit=1&user_id=" + strconv.FormatInt(u1.ID, 10) + "&cursor=" + *next
		}
		if !slices.Equal(seen, want) {
			t.Errorf("seen = %v, want %v (D8)", seen, want)
		}
	})
	t.Run("OtherBrandsUserFilterEmpty", func(t *testing.T) {
		ids, next := msgList(t, e.A, "/messages?user_id="+strconv.FormatInt(ub.ID, 10))
		if len(ids) != 0 || next != nil {
			t.Errorf("brand A sees %v of brand B's user (D8)", ids)
		}
	})
	t.Run("OnlyOwnBrand", func(t *testing.T) {
		ids, _ := msgList(t, e.B, "/messages")
		if len(ids) != 1 || slices.Contains(all, ids[0]) {
			t.Errorf("brand B lists %v, want only its own message", ids)
		}
	})
	for _, q := range []string{"limit=0", "limit=101", "limit=abc", "limit=-1", "cursor=garbage", "cursor=bTow", "user_id=abc", "user_id=0"} {
		t.Run("Query_"+q+"_Invalid", func(t *testing.T) {
			resp := mustDo(t, e.A, "GET", "/messages?"+q, nil)
			ae := wantAPIError(t, resp.Err(), 422, parley.EValidation)
			name, _, _ := strings.Cut(q, "=")
			if !strings.HasPrefix(ae.Msg, name+":") {
				t.Errorf("msg = %q, want it to name %s (D3)", ae.Msg, name)
			}
		})
	}
	t.Run("Limit100Accepted", func(t *testing.T) {
		ids, _ := msgList(t, e.A, "/messages?limit=100")
		if len(ids) != 5 {
			t.Errorf("ids = %v, want all 5", ids)
		}
	})
}

func TestListMessagesEmpty(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	resp := mustDo(t, e.A, "GET", "/messages", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d (%s)", resp.StatusCode, resp.Body)
	}
	if got := string(bytes.TrimSpace(resp.Body)); got != `{"data":[],"next_cursor":null}` {
		t.Errorf("body = %s, want {\"data\":[],\"next_cursor\":null} (D8: data is an array, never null)", got)
	}
}

// TestSendTogether: sends that arrive together may share a transaction
// and one insert of their jobs (issue #4; the sharing itself is tested in
// the store). Each accepted message has exactly one delivery job and one
// message.queued delivery per endpoint, and a send to an unknown or
// deleted user is refused on its own, leaving nothing behind (D8).
func TestSendTogether(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	users := make([]*parley.User, 5)
	for i := range users {
		users[i] = msgUser(t, e, e.A, 100+i)
	}
	gone := msgUser(t, e, e.A, 200)
	if _, err := e.A.DeleteUser(e.Ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	hook := whCreate(t, e.A, "http://127.0.0.1:9/hook", "message.queued")

	var mu sync.Mutex
	var accepted []int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			to := users[i%len(users)].ID
			switch i % 8 {
			case 6:
				to = gone.ID + 1000
			case 7:
				to = gone.ID
			}
			m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(to), Body: parley.Some(fmt.Sprint("hello ", i))})
			if i%8 >= 6 {
				var ae *client.Error
				if want := parley.ErrorCode(parley.UserNotFound(to)); !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Type != want {
					t.Errorf("send %d to no live user: %v, want 404 %s", i, err, want)
				}
				return
			}
			if err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			mu.Lock()
			accepted = append(accepted, m.ID)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(accepted) != 30 {
		t.Fatalf("%d sends accepted, want 30", len(accepted))
	}
	if n := e.Count(t, "messages"); n != 30 {
		t.Errorf("%d messages stored, want 30", n)
	}

	rows, err := e.App.DB.Writer().QueryContext(e.Ctx, "SELECT kind, args FROM river_job")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var delivered []int64
	events := map[string]bool{}
	for rows.Next() {
		var kind string
		var args []byte
		if err := rows.Scan(&kind, &args); err != nil {
			t.Fatal(err)
		}
		var a struct {
			MessageID  int64  `json:"message_id"`
			EventID    string `json:"event_id"`
			EndpointID int64  `json:"endpoint_id"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			t.Fatal(err)
		}
		switch {
		case kind == "deliver_message":
			delivered = append(delivered, a.MessageID)
		case kind == "deliver_webhook" && a.EndpointID == hook.ID:
			events[a.EventID] = true
		default:
			t.Errorf("unexpected job %s %s", kind, args)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(accepted)
	slices.Sort(delivered)
	if !slices.Equal(delivered, accepted) {
		t.Errorf("delivery jobs for messages %v, want one for each accepted message %v", delivered, accepted)
	}
	if len(events) != 30 {
		t.Errorf("%d distinct message.queued events queued to the endpoint, want 30", len(events))
	}
}

// TestMessageParts: every message reports how its body goes on the air —
// GSM-7 or UCS-2, and how many segments it is billed as — in the answer to
// the send, on reads and in lists (D16).
func TestMessageParts(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := msgUser(t, e, e.A, 1)
	f, err := e.A.UploadFile(e.Ctx, "p.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, body string
		media      []string
		encoding   string
		segments   int
	}{
		{"OneGSM7", strings.Repeat("a", 160), nil, "GSM-7", 1},
		{"TwoGSM7", strings.Repeat("a", 161), nil, "GSM-7", 2},
		{"ExtensionCountsTwo", strings.Repeat("€", 80) + "a", nil, "GSM-7", 2},
		{"OneUCS2", strings.Repeat("ç", 70), nil, "UCS-2", 1},
		{"EmojiTwoUnits", strings.Repeat("😀", 35) + "a", nil, "UCS-2", 2},
		{"MediaIsOne", strings.Repeat("a", 500), []string{f.ID}, "GSM-7", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some(c.body)}
			if c.media != nil {
				in.MediaItemUUIDs = parley.Some(c.media)
			}
			m, err := e.A.SendMessage(e.Ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.A.GetMessage(e.Ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []*parley.Message{m, got} {
				if m.Encoding != c.encoding || m.NumSegments != c.segments {
					t.Errorf("encoding %s, %d segments; want %s, %d (D16)", m.Encoding, m.NumSegments, c.encoding, c.segments)
				}
			}
		})
	}
}
