package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/webhook"
)

// Events and webhooks (issue #5, D11). Every event a receiver gets is
// verified with the Standard Webhooks Go library, which we did not write.

// whReq is one request a receiver got.
type whReq struct {
	Header http.Header
	Body   []byte
	// The event in the body.
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// whReceiver is an endpoint on an httptest server that records every request.
type whReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []*whReq
	respond func(w http.ResponseWriter, r *http.Request, n int) // n counts requests from 1
}

// whNewReceiver starts a receiver; respond nil answers 200 "ok".
func whNewReceiver(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *whReceiver {
	t.Helper()
	rc := &whReceiver{respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := &whReq{Header: r.Header.Clone(), Body: body}
		json.Unmarshal(body, q)
		rc.mu.Lock()
		rc.got = append(rc.got, q)
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.respond == nil {
			io.WriteString(w, "ok")
			return
		}
		rc.respond(w, r, n)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *whReceiver) URL() string { return rc.srv.URL + "/hooks/parley" }

func (rc *whReceiver) requests() []*whReq {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

// wait returns the first request that matches, failing after 15 s.
func (rc *whReceiver) wait(t *testing.T, what string, match func(*whReq) bool) *whReq {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, q := range rc.requests() {
			if match(q) {
				return q
			}
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, q := range rc.requests() {
				seen = append(seen, q.Type+" "+string(q.Data))
			}
			t.Fatalf("receiver never got %s; it got:\n%s", what, strings.Join(seen, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitN waits until the receiver has n requests.
func (rc *whReceiver) waitN(t *testing.T, n int) []*whReq {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if got := rc.requests(); len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver got %d requests, want %d", len(rc.requests()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// whEvent waits for an event of typ whose data has member key equal to value.
func (rc *whReceiver) event(t *testing.T, typ, key string, value any) *whReq {
	t.Helper()
	want, _ := json.Marshal(value)
	return rc.wait(t, fmt.Sprintf("%s with %s=%s", typ, key, want), func(q *whReq) bool {
		if q.Type != typ {
			return false
		}
		var m map[string]json.RawMessage
		json.Unmarshal(q.Data, &m)
		return string(m[key]) == string(want)
	})
}

// whStarted is an env whose workers run (deliveries happen on their own),
// with the sim provider reporting only when the test advances the clock.
func whStarted(t *testing.T, opts ...apitest.Option) *apitest.Env {
	t.Helper()
	e := apitest.New(t, append([]apitest.Option{func(c *app.Config) { c.SimDelay = time.Second }}, opts...)...)
	if err := e.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

// whCreate creates an endpoint and returns it with its secret.
func whCreate(t *testing.T, c *client.Client, url string, types ...string) *parley.Webhook {
	t.Helper()
	resp := mustDo(t, c, "POST", "/webhooks", map[string]any{"url": url, "event_types": types, "description": "test receiver"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /webhooks: %d %s, want 201 (D3)", resp.StatusCode, resp.Body)
	}
	var w parley.Webhook
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	return &w
}

// whGet returns an endpoint as brand c sees it.
func whGet(t *testing.T, c *client.Client, id int64) *parley.Webhook {
	t.Helper()
	resp := mustDo(t, c, "GET", "/webhooks/"+itoa(id), nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /webhooks/%d: %d %s", id, resp.StatusCode, resp.Body)
	}
	var w parley.Webhook
	if err := json.Unmarshal(resp.Body, &w); err != nil {
		t.Fatal(err)
	}
	return &w
}

// whTest sends a webhook.test event to the endpoint.
func whTest(t *testing.T, c *client.Client, id int64) *parley.Event {
	t.Helper()
	resp := mustDo(t, c, "POST", "/webhooks/"+itoa(id)+"/test", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /webhooks/%d/test: %d %s, want 200", id, resp.StatusCode, resp.Body)
	}
	var ev parley.Event
	if err := json.Unmarshal(resp.Body, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// whPage is a page of the delivery log.
type whPage struct {
	Data       []*parley.WebhookDelivery `json:"data"`
	NextCursor *string                   `json:"next_cursor"`
}

func whDeliveries(t *testing.T, c *client.Client, id int64, query string) whPage {
	t.Helper()
	resp := mustDo(t, c, "GET", "/webhooks/"+itoa(id)+"/deliveries"+query, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET deliveries%s: %d %s", query, resp.StatusCode, resp.Body)
	}
	var p whPage
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// whLastDelivery waits until the log has n attempts and returns the newest.
func whLastDelivery(t *testing.T, c *client.Client, id int64, n int) *parley.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := whDeliveries(t, c, id, "")
		if len(p.Data) >= n {
			return p.Data[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("delivery log of %d has %d attempts, want %d", id, len(p.Data), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// whDeliver makes one attempt directly, as the worker would.
func whDeliver(t *testing.T, e *apitest.Env, eventID string, hookID int64, attempt int, final bool) error {
	t.Helper()
	return e.App.Service.DeliverWebhook(e.Ctx, e.BrandA.ID, eventID, hookID, attempt, final)
}

// whVerify verifies a request with the Standard Webhooks library: with the
// timestamp tolerance, or without it when the app clock was moved.
func whVerify(t *testing.T, secret string, q *whReq, checkTime bool) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("standardwebhooks.NewWebhook: %v", err)
	}
	if checkTime {
		return wh.Verify(q.Body, q.Header)
	}
	return wh.VerifyIgnoringTimestamp(q.Body, q.Header)
}

// whSameJSON asserts that two JSON documents are equal as values.
func whSameJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v in %s", what, err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %s\n want %s", what, got, want)
	}
}

func whObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return m
}

func whKeys(m map[string]any) []string {
	k := keys(m)
	sort.Strings(k)
	return k
}

// whWantError asserts an error answer.
func whWantError(t *testing.T, resp *client.Response, status int, typ string) string {
	t.Helper()
	err := resp.Err()
	if err == nil {
		t.Fatalf("got %d %s, want %d %s", resp.StatusCode, resp.Body, status, typ)
	}
	return wantAPIError(t, err, status, typ).Msg
}

// whJob is a deliver_webhook job in River's table.
type whJob struct {
	ID          int64
	State       string
	Attempt     int
	MaxAttempts int
	EventID     string
	EndpointID  int64
	Errors      string
}

func whJobs(t *testing.T, e *apitest.Env) []whJob {
	t.Helper()
	rows, err := e.App.DB.Writer().QueryContext(e.Ctx, "SELECT id, state, attempt, max_attempts, args, errors FROM river_job WHERE kind = 'deliver_webhook' ORDER BY id")
	if err != nil {
		t.Fatalf("river_job: %v", err)
	}
	defer rows.Close()
	var out []whJob
	for rows.Next() {
		var j whJob
		var args []byte
		var errs any
		if err := rows.Scan(&j.ID, &j.State, &j.Attempt, &j.MaxAttempts, &args, &errs); err != nil {
			t.Fatalf("river_job: %v", err)
		}
		var a struct {
			BrandID    int64  `json:"brand_id"`
			EventID    string `json:"event_id"`
			EndpointID int64  `json:"endpoint_id"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			t.Fatalf("river_job args %q: %v", args, err)
		}
		j.EventID, j.EndpointID = a.EventID, a.EndpointID
		switch v := errs.(type) {
		case []byte:
			j.Errors = string(v)
		case string:
			j.Errors = v
		case nil:
		default:
			j.Errors = fmt.Sprint(v)
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// whJobTimes returns when a job was last attempted and when it is scheduled.
func whJobTimes(t *testing.T, e *apitest.Env, id int64) (attempted, scheduled time.Time) {
	t.Helper()
	var a, s any
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx, "SELECT attempted_at, scheduled_at FROM river_job WHERE id = "+itoa(id)).Scan(&a, &s); err != nil {
		t.Fatal(err)
	}
	return whTime(t, a), whTime(t, s)
}

func whTime(t *testing.T, v any) time.Time {
	t.Helper()
	switch x := v.(type) {
	case time.Time:
		return x
	case []byte:
		v = string(x)
	}
	s, ok := v.(string)
	if !ok {
		t.Fatalf("timestamp %T %v", v, v)
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999-07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
		if tm, err := time.Parse(layout, s); err == nil {
			return tm
		}
	}
	t.Fatalf("timestamp %q", s)
	return time.Time{}
}

func whCountEvents(t *testing.T, e *apitest.Env, brandID int64) int {
	t.Helper()
	var n int
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx, "SELECT count(*) FROM events WHERE brand_id = "+itoa(brandID)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var whEventID = regexp.MustCompile(`^evt_[0-9a-f]{24}$`)

// whCheckEnvelope checks what every delivery carries (D11, Standard Webhooks).
func whCheckEnvelope(t *testing.T, q *whReq, secret string) {
	t.Helper()
	if err := whVerify(t, secret, q, true); err != nil {
		t.Errorf("%s %s: the Standard Webhooks library rejects it: %v", q.Type, q.ID, err)
	}
	m := whObject(t, q.Body)
	if got := whKeys(m); !slices.Equal(got, []string{"created_at", "data", "id", "type"}) {
		t.Errorf("%s: members %v, want exactly id, type, created_at, data (D11)", q.Type, got)
	}
	if !whEventID.MatchString(q.ID) {
		t.Errorf("event id %q is not evt_ + 24 hex digits", q.ID)
	}
	if h := q.Header.Get("webhook-id"); h != q.ID {
		t.Errorf("webhook-id %q != event id %q (D11)", h, q.ID)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", q.CreatedAt); err != nil {
		t.Errorf("created_at %q is not RFC 3339 UTC with microseconds (D1)", q.CreatedAt)
	}
	if ct := q.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if sig := q.Header.Get("webhook-signature"); !strings.HasPrefix(sig, "v1,") {
		t.Errorf("webhook-signature %q does not start with v1, (D11)", sig)
	}
}

func TestWebhookCRUD(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	rc := whNewReceiver(t, nil)

	resp := mustDo(t, e.A, "POST", "/webhooks", map[string]any{"url": rc.URL(),
		"event_types": []string{"user.created", "message.sent"}, "description": "CRM sync"})
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s, want 201 (D3)", resp.StatusCode, resp.Body)
	}
	created := whObject(t, resp.Body)
	if got := whKeys(created); !slices.Equal(got, []string{"date_created", "date_last_updated", "description", "disabled", "event_types", "id", "secret", "url"}) {
		t.Errorf("create answer members %v", got)
	}
	secret, _ := created["secret"].(string)
	if key, err := webhook.ParseSecret(secret); err != nil || len(key) != 32 || !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("secret %q: %v; want whsec_ + base64 of 32 bytes", secret, err)
	}
	if created["url"] != rc.URL() || created["description"] != "CRM sync" || created["disabled"] != false ||
		!reflect.DeepEqual(created["event_types"], []any{"user.created", "message.sent"}) {
		t.Errorf("created = %v", created)
	}
	id := int64(created["id"].(float64))
	withoutSecret := func(m map[string]any) map[string]any {
		c := maps.Clone(m)
		delete(c, "secret")
		return c
	}

	// The secret is shown once: never by GET, list, update or delete.
	resp = mustDo(t, e.A, "GET", "/webhooks/"+itoa(id), nil)
	got := whObject(t, resp.Body)
	if resp.StatusCode != 200 || !reflect.DeepEqual(got, withoutSecret(created)) {
		t.Errorf("GET: %d %v, want the created endpoint without its secret", resp.StatusCode, got)
	}
	resp = mustDo(t, e.A, "GET", "/webhooks", nil)
	list := whObject(t, resp.Body)
	if resp.StatusCode != 200 || list["next_cursor"] != nil || !reflect.DeepEqual(list["data"], []any{withoutSecret(created)}) {
		t.Errorf("list: %d %s", resp.StatusCode, resp.Body)
	}
	if strings.Contains(string(resp.Body), secret) || strings.Contains(string(resp.Body), `"secret"`) {
		t.Error("the list shows a secret")
	}

	resp = mustDo(t, e.A, "POST", "/webhooks/"+itoa(id), map[string]any{"description": "new", "event_types": []string{"*"}, "disabled": true})
	updated := whObject(t, resp.Body)
	if resp.StatusCode != 200 || updated["description"] != "new" || updated["disabled"] != true ||
		!reflect.DeepEqual(updated["event_types"], []any{"*"}) || updated["url"] != rc.URL() {
		t.Errorf("update: %d %s", resp.StatusCode, resp.Body)
	}
	if _, ok := updated["secret"]; ok {
		t.Error("update shows the secret")
	}
	if g := whObject(t, mustDo(t, e.A, "GET", "/webhooks/"+itoa(id), nil).Body); !reflect.DeepEqual(g, updated) {
		t.Errorf("GET after update = %v, want %v", g, updated)
	}
	// Only the members sent change.
	resp = mustDo(t, e.A, "POST", "/webhooks/"+itoa(id), map[string]any{"url": rc.URL() + "?v=2"})
	if g := whObject(t, resp.Body); g["url"] != rc.URL()+"?v=2" || g["description"] != "new" || g["disabled"] != true {
		t.Errorf("url-only update: %s", resp.Body)
	}
	resp = mustDo(t, e.A, "POST", "/webhooks/"+itoa(id), map[string]any{"disabled": false, "description": nil})
	if g := whObject(t, resp.Body); g["disabled"] != false || g["description"] != "" {
		t.Errorf("re-enable and clear description: %s", resp.Body)
	}

	resp = mustDo(t, e.A, "POST", "/webhooks/"+itoa(id)+"/rotate_secret", nil)
	rotated := whObject(t, resp.Body)
	newSecret, _ := rotated["secret"].(string)
	if resp.StatusCode != 200 || newSecret == secret {
		t.Errorf("rotate: %d %s; want 200 and a new secret", resp.StatusCode, resp.Body)
	}
	if _, err := webhook.ParseSecret(newSecret); err != nil {
		t.Errorf("rotated secret: %v", err)
	}
	if _, ok := whObject(t, mustDo(t, e.A, "GET", "/webhooks/"+itoa(id), nil).Body)["secret"]; ok {
		t.Error("GET after rotation shows the secret")
	}

	resp = mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(id), nil)
	deleted := whObject(t, resp.Body)
	if resp.StatusCode != 200 || deleted["id"] != created["id"] {
		t.Errorf("delete: %d %s", resp.StatusCode, resp.Body)
	}
	if _, ok := deleted["secret"]; ok {
		t.Error("delete shows the secret")
	}
	msg := whWantError(t, mustDo(t, e.A, "GET", "/webhooks/"+itoa(id), nil), 404, parley.ENotFound)
	if msg != "Webhook with ID ["+itoa(id)+"] not found." {
		t.Errorf("msg = %q", msg)
	}
	whWantError(t, mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(id), nil), 404, parley.ENotFound)
	if resp := mustDo(t, e.A, "GET", "/webhooks", nil); !reflect.DeepEqual(whObject(t, resp.Body),
		map[string]any{"data": []any{}, "next_cursor": nil}) {
		t.Errorf("empty list = %s, want data [] and next_cursor null (D8)", resp.Body)
	}
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	good := "https://hooks.example.com/parley"
	hook := whCreate(t, e.A, good, "*")
	before := e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id")

	for _, c := range []struct {
		body  string
		field string
	}{
		{`{}`, "url"},
		{`{"event_types":["*"]}`, "url"},
		{`{"url":null,"event_types":["*"]}`, "url"},
		{`{"url":"ftp://example.com/x","event_types":["*"]}`, "url"},
		{`{"url":"not a url","event_types":["*"]}`, "url"},
		{`{"url":"/relative","event_types":["*"]}`, "url"},
		{`{"url":"https://user:pw@example.com/","event_types":["*"]}`, "url"},
		{`{"url":"https://example.com/` + strings.Repeat("a", 2100) + `","event_types":["*"]}`, "url"},
		{`{"url":"` + good + `"}`, "event_types"},
		{`{"url":"` + good + `","event_types":null}`, "event_types"},
		{`{"url":"` + good + `","event_types":[]}`, "event_types"},
		{`{"url":"` + good + `","event_types":["user.exploded"]}`, "event_types"},
		{`{"url":"` + good + `","event_types":["user.created","webhook.test"]}`, "event_types"},
		{`{"url":"` + good + `","event_types":["USER.CREATED"]}`, "event_types"},
		{`{"url":"` + good + `","event_types":"user.created"}`, "event_types"},
		{`{"url":"` + good + `","event_types":["*"],"description":"` + strings.Repeat("é", 501) + `"}`, "description"},
		{`{"url":"` + good + `","event_types":["*"],"secret":"whsec_AAAA"}`, "secret"},
		{`{"url":"` + good + `","event_types":["*"],"disabled":true}`, "disabled"},
	} {
		resp, err := e.A.Do(e.Ctx, "POST", "/webhooks", []byte(c.body), "application/json")
		if err != nil {
			t.Fatal(err)
		}
		err = resp.Err()
		var ae *client.Error
		if !errors.As(err, &ae) || ae.StatusCode != 422 || ae.Type != parley.EValidation || ae.Field != c.field ||
			!strings.HasPrefix(ae.Msg, c.field+": ") {
			t.Errorf("POST /webhooks %.80s: %d %s, want 422 validation_error naming %s (D3, D11)", c.body, resp.StatusCode, resp.Body, c.field)
		}
	}
	// Exactly 500 characters is allowed.
	ok := mustDo(t, e.A, "POST", "/webhooks", map[string]any{"url": good, "event_types": []string{"*"}, "description": strings.Repeat("é", 500)})
	if ok.StatusCode != 201 {
		t.Errorf("500-character description: %d %s", ok.StatusCode, ok.Body)
	}
	mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(whObjectID(t, ok.Body)), nil)

	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"url":null}`, "url"},
		{`{"url":"mailto:a@example.com"}`, "url"},
		{`{"event_types":null}`, "event_types"},
		{`{"event_types":[]}`, "event_types"},
		{`{"event_types":["message.exploded"]}`, "event_types"},
		{`{"disabled":null}`, "disabled"},
		{`{"disabled":"yes"}`, "disabled"},
		{`{"description":"` + strings.Repeat("x", 501) + `"}`, "description"},
		{`{"secret":"whsec_AAAA"}`, "secret"},
	} {
		resp, err := e.A.Do(e.Ctx, "POST", "/webhooks/"+itoa(hook.ID), []byte(c.body), "application/json")
		if err != nil {
			t.Fatal(err)
		}
		var ae *client.Error
		if err := resp.Err(); !errors.As(err, &ae) || ae.StatusCode != 422 || ae.Type != parley.EValidation || ae.Field != c.field {
			t.Errorf("POST /webhooks/{id} %.80s: %d %s, want 422 validation_error naming %s", c.body, resp.StatusCode, resp.Body, c.field)
		}
	}
	if after := e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id"); after != before {
		t.Errorf("rejected requests changed the endpoints:\nbefore %s\nafter  %s", before, after)
	}

	// Path ids (D3).
	for _, p := range []string{"/webhooks/abc", "/webhooks/0", "/webhooks/-1", "/webhooks/01"} {
		for _, m := range []string{"GET", "DELETE"} {
			whWantError(t, mustDo(t, e.A, m, p, nil), 422, parley.EValidation)
		}
		whWantError(t, mustDo(t, e.A, "POST", p+"/rotate_secret", nil), 422, parley.EValidation)
		whWantError(t, mustDo(t, e.A, "POST", p+"/test", nil), 422, parley.EValidation)
		whWantError(t, mustDo(t, e.A, "GET", p+"/deliveries", nil), 422, parley.EValidation)
	}
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/x/retry", nil), 422, parley.EValidation)
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/0/retry", nil), 422, parley.EValidation)
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/99999/retry", nil), 404, parley.ENotFound)

	// At most 10 endpoints per brand; the limit is per brand.
	for i := 2; i <= parley.MaxWebhooks; i++ {
		whCreate(t, e.A, good+"/"+strconv.Itoa(i), "*")
	}
	full := e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id")
	resp := mustDo(t, e.A, "POST", "/webhooks", map[string]any{"url": good + "/11", "event_types": []string{"*"}})
	whWantError(t, resp, 422, parley.EValidation)
	if after := e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id"); after != full {
		t.Error("the 11th endpoint was stored")
	}
	if n := len(whObject(t, mustDo(t, e.A, "GET", "/webhooks", nil).Body)["data"].([]any)); n != parley.MaxWebhooks {
		t.Errorf("brand A lists %d endpoints, want %d", n, parley.MaxWebhooks)
	}
	whCreate(t, e.B, good, "*") // brand B has its own ten
	// Deleting one makes room again.
	mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	whCreate(t, e.A, good+"/11", "*")
}

func whObjectID(t *testing.T, b []byte) int64 {
	t.Helper()
	id, _ := whObject(t, b)["id"].(float64)
	return int64(id)
}

// Without --webhook-allow-private, endpoints must be https on public hosts,
// both when registered and, after DNS resolution, when connected to.
func TestWebhookURLPolicy(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.WebhookAllowPrivate = false })
	for _, u := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://localhost/hook",
		"https://10.1.2.3/hook", "https://169.254.169.254/latest/meta-data", "https://[::1]/hook", "https://192.168.0.10/",
		"https://2130706433/"} {
		msg := whWantError(t, mustDo(t, e.A, "POST", "/webhooks", map[string]any{"url": u, "event_types": []string{"*"}}), 422, parley.EValidation)
		if !strings.HasPrefix(msg, "url: ") {
			t.Errorf("%s: msg %q does not name url", u, msg)
		}
	}
	hook := whCreate(t, e.A, "https://hooks.example.com/parley", "*")
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"url": "http://hooks.example.com/parley"}), 422, parley.EValidation)
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"url": "https://127.0.0.1:8443/"}), 422, parley.EValidation)

	// A public-looking name that resolves to a loopback address is refused
	// when connecting: the guard checks the resolved address.
	rc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") }))
	t.Cleanup(rc.Close)
	port := rc.Listener.Addr().String()
	port = port[strings.LastIndexByte(port, ':')+1:]
	e.App.Service.SetWebhooks(false, nil, webhook.WithLookup(func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}))
	rebinding := whCreate(t, e.A, "https://rebind.example.com:"+port+"/hook", "*")
	ev := whTest(t, e.A, rebinding.ID)
	if err := whDeliver(t, e, ev.ID, rebinding.ID, 1, false); err == nil {
		t.Error("delivery to a name resolving to 127.0.0.1 succeeded")
	}
	d := whLastDelivery(t, e.A, rebinding.ID, 1)
	if d.Status != nil || !strings.Contains(d.Error, "non-public") || d.Outcome != "retrying" {
		t.Errorf("delivery %+v, want no status, a non-public address error, retrying", d)
	}
}

// Every type of the catalogue reaches the receiver, verified with the
// Standard Webhooks library, with data equal to the API's resource (D11).
func TestWebhookEveryEventType(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), "*")
	seen := map[string]int{}
	check := func(q *whReq, want []byte) {
		t.Helper()
		seen[q.Type]++
		whCheckEnvelope(t, q, hook.Secret)
		whSameJSON(t, q.Type+" data vs the API's resource", q.Data, want)
	}
	getUser := func(id int64) []byte { return mustDo(t, e.A, "GET", "/users/"+itoa(id), nil).Body }
	getMsg := func(id int64) []byte { return mustDo(t, e.A, "GET", "/messages/"+itoa(id), nil).Body }

	// From the API: created with consent → user.created and user.subscribed.
	resp := mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+14155552671", "first_name": "Ann", "messaging_consent": true})
	if resp.StatusCode != 201 {
		t.Fatalf("create user: %d %s", resp.StatusCode, resp.Body)
	}
	userID := whObjectID(t, resp.Body)
	check(rc.event(t, parley.EventUserCreated, "id", userID), resp.Body)
	check(rc.event(t, parley.EventUserSubscribed, "first_name", "Ann"), resp.Body)

	resp = mustDo(t, e.A, "POST", "/users/"+itoa(userID), map[string]any{"first_name": "Anna"})
	check(rc.event(t, parley.EventUserUpdated, "first_name", "Anna"), resp.Body)

	resp = mustDo(t, e.A, "POST", "/users/"+itoa(userID), map[string]any{"messaging_consent": false})
	check(rc.wait(t, "user.updated with consent false", func(q *whReq) bool {
		return q.Type == parley.EventUserUpdated && strings.Contains(string(q.Data), `"messaging_consent":false`)
	}), resp.Body)
	check(rc.event(t, parley.EventUserUnsubscribed, "id", userID), resp.Body)

	// From keywords: START re-subscribes (user.subscribed and message.received).
	inbound := func(from, body, sid string) {
		t.Helper()
		if _, err := e.App.Service.ReceiveInbound(e.Ctx, delivery.Inbound{ProviderID: sid, From: from, To: e.BrandA.PhoneNumber, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	inbound("+14155552671", "START", "SMstart")
	q := rc.event(t, parley.EventMessageReceived, "body", "START")
	var rm parley.Message
	json.Unmarshal(q.Data, &rm)
	check(q, getMsg(rm.ID))
	if rm.UserID != userID || rm.Direction != parley.DirectionInbound {
		t.Errorf("message.received data %s", q.Data)
	}
	check(rc.event(t, parley.EventUserSubscribed, "first_name", "Anna"), getUser(userID))

	// A new number: user.created and message.received; then STOP: user.unsubscribed.
	inbound("+14155550199", "Hello", "SMhello")
	q = rc.event(t, parley.EventUserCreated, "phone_number", "+14155550199")
	newUser := whObjectID(t, q.Data)
	check(q, getUser(newUser))
	q = rc.event(t, parley.EventMessageReceived, "body", "Hello")
	check(q, getMsg(whObjectID(t, q.Data)))
	inbound("+14155550199", "stop", "SMstop")
	q = rc.event(t, parley.EventMessageReceived, "body", "stop")
	check(q, getMsg(whObjectID(t, q.Data)))
	check(rc.event(t, parley.EventUserUnsubscribed, "id", newUser), getUser(newUser))

	// Messages: queued → sent → delivered; failed; sent → undelivered.
	resp = mustDo(t, e.A, "POST", "/messages", map[string]any{"user_id": userID, "body": "Hello Anna"})
	if resp.StatusCode != 201 {
		t.Fatalf("send: %d %s", resp.StatusCode, resp.Body)
	}
	msgID := whObjectID(t, resp.Body)
	check(rc.event(t, parley.EventMessageQueued, "id", msgID), resp.Body)
	dlvWait(t, e, msgID, parley.StatusSent)
	check(rc.event(t, parley.EventMessageSent, "id", msgID), getMsg(msgID))

	bad := whObjectID(t, mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+15005550001"}).Body)
	unreachable := whObjectID(t, mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+15005550002"}).Body)
	failedID := whObjectID(t, mustDo(t, e.A, "POST", "/messages", map[string]any{"user_id": bad, "body": "x"}).Body)
	undeliveredID := whObjectID(t, mustDo(t, e.A, "POST", "/messages", map[string]any{"user_id": unreachable, "body": "x"}).Body)
	dlvWait(t, e, failedID, parley.StatusFailed)
	check(rc.event(t, parley.EventMessageFailed, "id", failedID), getMsg(failedID))
	dlvWait(t, e, undeliveredID, parley.StatusSent)
	dlvReport(t, e)
	dlvWait(t, e, msgID, parley.StatusDelivered)
	dlvWait(t, e, undeliveredID, parley.StatusUndelivered)
	check(rc.event(t, parley.EventMessageDelivered, "id", msgID), getMsg(msgID))
	check(rc.event(t, parley.EventMessageUndelivered, "id", undeliveredID), getMsg(undeliveredID))

	// Campaigns (D16): campaign.started at the resolution, campaign.completed
	// once every message went; the data is the campaign with its stats.
	// (Inserted through the store: the endpoints are another change's.)
	seg := mustDo(t, e.A, "POST", "/segments", map[string]any{"name": "Everyone", "type": "STANDARD", "criteria": []any{}})
	camp := &parley.Campaign{BrandID: e.BrandA.ID, Name: "Notice", SegmentID: whObjectID(t, seg.Body), Body: "Store closed today",
		Type: parley.TypeTransactional, SendAt: parley.NewTime(e.Now())}
	if err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error { return tx.InsertCampaign(e.Ctx, camp) }); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{parley.EventCampaignStarted, parley.EventCampaignCompleted} {
		q := rc.event(t, typ, "id", camp.ID)
		seen[q.Type]++
		whCheckEnvelope(t, q, hook.Secret)
		var got parley.Campaign
		if err := json.Unmarshal(q.Data, &got); err != nil || got.Name != "Notice" || got.Stats.Recipients != 4 ||
			got.Stats.SkippedUnsubscribed != 3 || (typ == parley.EventCampaignCompleted) != (got.Status == parley.CampaignCompleted) {
			t.Errorf("%s data %s", typ, q.Data)
		}
	}

	// Flows (D21): POST /events enters the contact (flow.entered, data the
	// Run as it entered); the workers run the one send step and the run
	// completes (flow.completed, data the Run as GET /flows/{id}/runs
	// answers it). The step's message carries the flow's id.
	resp = mustDo(t, e.A, "POST", "/flows", map[string]any{"name": "Webhook check", "active": true,
		"trigger": map[string]any{"type": "event", "name": "webhook_check"},
		"steps":   []any{map[string]any{"type": "send", "body": "From a flow", "message_type": "TRANSACTIONAL"}}})
	if resp.StatusCode != 201 {
		t.Fatalf("POST /flows: %d %s", resp.StatusCode, resp.Body)
	}
	flowID := whObjectID(t, resp.Body)
	resp = mustDo(t, e.A, "POST", "/events", map[string]any{"user_id": userID, "name": "webhook_check"})
	if resp.StatusCode != 202 {
		t.Fatalf("POST /events: %d %s", resp.StatusCode, resp.Body)
	}
	entered := rc.event(t, parley.EventFlowEntered, "flow_id", flowID)
	seen[entered.Type]++
	whCheckEnvelope(t, entered, hook.Secret)
	completed := rc.event(t, parley.EventFlowCompleted, "flow_id", flowID)
	seen[completed.Type]++
	whCheckEnvelope(t, completed, hook.Secret)
	runs := mustDo(t, e.A, "GET", "/flows/"+itoa(flowID)+"/runs?user_id="+itoa(userID), nil)
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(runs.Body, &page); err != nil || len(page.Data) != 1 {
		t.Fatalf("GET /flows/%d/runs: %d %s", flowID, runs.StatusCode, runs.Body)
	}
	whSameJSON(t, "flow.completed data vs the API's Run", completed.Data, page.Data[0])
	var in, out parley.FlowRun
	if err := json.Unmarshal(entered.Data, &in); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(completed.Data, &out)
	var members []string
	for k := range whObject(t, entered.Data) {
		members = append(members, k)
	}
	slices.Sort(members)
	if want := slices.Sorted(slices.Values(runMembers)); !slices.Equal(members, want) {
		t.Errorf("flow.entered data members %v, want %v", members, want)
	}
	if in.ID != out.ID || in.FlowID != flowID || in.UserID != userID || in.Status != parley.RunActive || in.Step != 0 ||
		in.EnteredAt != out.EnteredAt || in.NextAt == nil || in.EndedAt != nil || in.ExitReason != nil {
		t.Errorf("flow.entered data %s; want the run %d as it entered (active, step 0, due now)", entered.Data, out.ID)
	}
	if out.Status != parley.RunCompleted || out.Step != 1 || out.NextAt != nil || out.EndedAt == nil || out.ExitReason != nil {
		t.Errorf("flow.completed data %s; want completed after its one step", completed.Data)
	}
	q = rc.event(t, parley.EventMessageQueued, "body", "From a flow")
	whCheckEnvelope(t, q, hook.Secret)
	if fid, _ := whObject(t, q.Data)["flow_id"].(float64); int64(fid) != flowID {
		t.Errorf("the flow's message: flow_id in %s, want %d", q.Data, flowID)
	}
	// Its message.sent comes from the workers: wait for it, so the count of
	// event rows below is final.
	flowMsg := whObjectID(t, q.Data)
	dlvWait(t, e, flowMsg, parley.StatusSent)
	rc.event(t, parley.EventMessageSent, "id", flowMsg)
	if !strings.Contains(string(getMsg(msgID)), `"flow_id":null`) {
		t.Errorf("a message outside flows: %s, want flow_id null", getMsg(msgID))
	}

	resp = mustDo(t, e.A, "DELETE", "/users/"+itoa(userID), nil)
	check(rc.event(t, parley.EventUserDeleted, "id", userID), resp.Body)

	for _, typ := range parley.EventTypes {
		if seen[typ] == 0 {
			t.Errorf("no %s event was checked", typ)
		}
	}
	// Every event row reaches the receiver (some may still be in flight),
	// and every request it got is a verified, distinct event.
	rows := whCountEvents(t, e, e.BrandA.ID)
	reqs := rc.waitN(t, rows)
	time.Sleep(100 * time.Millisecond) // a duplicate would come as quickly
	if reqs = rc.requests(); len(reqs) != rows {
		t.Errorf("%d requests for %d event rows", len(reqs), rows)
	}
	ids := map[string]bool{}
	for _, q := range reqs {
		whCheckEnvelope(t, q, hook.Secret)
		if ids[q.ID] {
			t.Errorf("event %s delivered twice to an endpoint that answered 200", q.ID)
		}
		ids[q.ID] = true
	}
	// The delivery log has one delivered attempt per event.
	whLastDelivery(t, e.A, hook.ID, rows)
	p := whDeliveries(t, e.A, hook.ID, "?limit=100")
	if len(p.Data) != rows {
		t.Errorf("%d attempts logged for %d events", len(p.Data), rows)
	}
	for _, d := range p.Data {
		if d.Outcome != "delivered" || d.Status == nil || *d.Status != 200 || d.Attempt != 1 || !ids[d.EventID] || d.Response != "ok" {
			t.Errorf("delivery %+v", d)
		}
	}
}

// An event row exists only when an enabled endpoint of the brand takes its
// type; an endpoint gets only the types it subscribed to.
func TestWebhookSubscriptions(t *testing.T) {
	t.Parallel()
	e := apitest.New(t) // workers stopped: the jobs stay in the table
	mustUser := func(c *client.Client, phone string) int64 {
		t.Helper()
		resp := mustDo(t, c, "POST", "/users", map[string]any{"phone_number": phone, "messaging_consent": true})
		if resp.StatusCode != 201 {
			t.Fatalf("create: %d %s", resp.StatusCode, resp.Body)
		}
		return whObjectID(t, resp.Body)
	}
	u := mustUser(e.A, "+14155552671")
	if n := whCountEvents(t, e, e.BrandA.ID); n != 0 {
		t.Errorf("%d event rows for a brand without endpoints, want 0", n)
	}
	deletes := whCreate(t, e.A, "https://hooks.example.com/deletes", parley.EventUserDeleted)
	all := whCreate(t, e.A, "https://hooks.example.com/all", "*")
	mustDo(t, e.A, "POST", "/webhooks/"+itoa(all.ID), map[string]any{"disabled": true})

	u2 := mustUser(e.A, "+14155552672")
	mustDo(t, e.A, "POST", "/users/"+itoa(u2), map[string]any{"first_name": "x"})
	if n := whCountEvents(t, e, e.BrandA.ID); n != 0 {
		t.Errorf("%d event rows with only user.deleted and a disabled endpoint, want 0", n)
	}
	mustDo(t, e.A, "DELETE", "/users/"+itoa(u), nil)
	jobs := whJobs(t, e)
	if n := whCountEvents(t, e, e.BrandA.ID); n != 1 || len(jobs) != 1 || jobs[0].EndpointID != deletes.ID {
		t.Errorf("after a delete: %d event rows, jobs %+v; want one event for endpoint %d", n, jobs, deletes.ID)
	}

	// Brand B's changes never reach brand A's endpoints.
	mustUser(e.B, "+14155552671")
	if n := whCountEvents(t, e, e.BrandB.ID); n != 0 {
		t.Errorf("brand B has %d event rows without endpoints", n)
	}
	// Re-enabled, "*" takes everything again: one event, one job per endpoint.
	mustDo(t, e.A, "POST", "/webhooks/"+itoa(all.ID), map[string]any{"disabled": false})
	mustDo(t, e.A, "DELETE", "/users/"+itoa(u2), nil)
	if jobs := whJobs(t, e); len(jobs) != 3 || jobs[1].EventID != jobs[2].EventID ||
		jobs[1].EndpointID == jobs[2].EndpointID {
		t.Errorf("jobs %+v; want one per (event, endpoint)", jobs)
	}
	if jobs := whJobs(t, e); len(jobs) > 0 && jobs[0].MaxAttempts != webhook.MaxAttempts {
		t.Errorf("max_attempts = %d, want %d (first try and 7 retries, D11)", jobs[0].MaxAttempts, webhook.MaxAttempts)
	}
}

// A change that rolls back emits nothing.
func TestWebhookRolledBackChangeEmitsNothing(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), "*")
	resp := mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+14155552671"})
	rc.event(t, parley.EventUserCreated, "id", whObjectID(t, resp.Body))
	events, jobs := whCountEvents(t, e, e.BrandA.ID), len(whJobs(t, e))

	// A duplicate create and a message to nobody change nothing.
	whWantError(t, mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+14155552671", "messaging_consent": true}), 409, parley.EDuplicate)
	whWantError(t, mustDo(t, e.A, "POST", "/messages", map[string]any{"user_id": 999999, "body": "x"}), 404, parley.EUserNotFound)

	// A create whose transaction fails after its user.created event was
	// written (the history entry of its consent that follows fails, D18):
	// nothing remains, neither the user nor its event.
	fail, unfail := "CREATE TRIGGER wh_fail BEFORE INSERT ON user_history BEGIN SELECT RAISE(ABORT, 'wh: injected failure'); END",
		"DROP TRIGGER wh_fail"
	if apitest.Engine() == "postgres" {
		if _, err := e.App.DB.Writer().ExecContext(e.Ctx, `CREATE FUNCTION wh_fail() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'wh: injected failure'; END $$`); err != nil {
			t.Fatal(err)
		}
		fail = "CREATE TRIGGER wh_fail BEFORE INSERT ON user_history FOR EACH ROW EXECUTE FUNCTION wh_fail()"
		unfail = "DROP TRIGGER wh_fail ON user_history"
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, fail); err != nil {
		t.Fatal(err)
	}
	resp = mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+14155552672", "messaging_consent": true})
	if resp.StatusCode < 500 {
		t.Fatalf("create with a failing consent insert: %d %s, want a 5xx", resp.StatusCode, resp.Body)
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, unfail); err != nil {
		t.Fatal(err)
	}
	whWantError(t, mustDo(t, e.A, "GET", "/users?phone_number=%2B14155552672", nil), 404, parley.EUserNotFound)

	if n := whCountEvents(t, e, e.BrandA.ID); n != events {
		t.Errorf("event rows %d → %d after rolled-back changes", events, n)
	}
	if n := len(whJobs(t, e)); n != jobs {
		t.Errorf("delivery jobs %d → %d after rolled-back changes", jobs, n)
	}
	// Once a later event has arrived, the receiver has seen only the two.
	ev := whTest(t, e.A, hook.ID)
	rc.event(t, parley.EventWebhookTest, "webhook_id", hook.ID)
	time.Sleep(200 * time.Millisecond) // a stray delivery would be as quick
	var types []string
	for _, q := range rc.requests() {
		types = append(types, q.Type)
	}
	sort.Strings(types)
	if !slices.Equal(types, []string{parley.EventUserCreated, parley.EventWebhookTest}) {
		t.Errorf("receiver got %v, want one user.created and the test event %s", types, ev.ID)
	}
}

// POST /webhooks/{id}/test delivers a signed webhook.test event.
func TestWebhookTestEvent(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), parley.EventUserDeleted) // the test event goes whatever the types
	resp := mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/test", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("test: %d %s, want 200", resp.StatusCode, resp.Body)
	}
	ev := whObject(t, resp.Body)
	if got := whKeys(ev); !slices.Equal(got, []string{"created_at", "data", "id", "type"}) || ev["type"] != parley.EventWebhookTest {
		t.Errorf("answer %s", resp.Body)
	}
	data, _ := ev["data"].(map[string]any)
	if data["webhook_id"] != float64(hook.ID) || data["message"] == "" {
		t.Errorf("data %v", data)
	}
	q := rc.event(t, parley.EventWebhookTest, "webhook_id", hook.ID)
	whCheckEnvelope(t, q, hook.Secret)
	whSameJSON(t, "delivered test event vs the API's answer", q.Body, resp.Body)
	if ts := q.Header.Get("webhook-timestamp"); ts != strconv.FormatInt(e.Now().Unix(), 10) {
		t.Errorf("webhook-timestamp %s, want the server clock %d", ts, e.Now().Unix())
	}
	if d := whLastDelivery(t, e.A, hook.ID, 1); d.EventType != parley.EventWebhookTest || d.EventID != ev["id"] || d.Outcome != "delivered" {
		t.Errorf("delivery %+v", d)
	}
	// Another brand's endpoint is not found.
	whWantError(t, mustDo(t, e.B, "POST", "/webhooks/"+itoa(hook.ID)+"/test", nil), 404, parley.ENotFound)
}

// Rotation: for 24 h two signatures, either secret verifies; then only the new one.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), "*")
	old := hook.Secret

	whTest(t, e.A, hook.ID)
	q := rc.waitN(t, 1)[0]
	if sigs := strings.Fields(q.Header.Get("webhook-signature")); len(sigs) != 1 {
		t.Errorf("before rotation: %d signatures, want 1", len(sigs))
	}

	resp := mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/rotate_secret", nil)
	var rotated parley.Webhook
	json.Unmarshal(resp.Body, &rotated)
	if resp.StatusCode != 200 || rotated.Secret == "" || rotated.Secret == old {
		t.Fatalf("rotate: %d %s", resp.StatusCode, resp.Body)
	}
	whTest(t, e.A, hook.ID)
	q = rc.waitN(t, 2)[1]
	if sigs := strings.Fields(q.Header.Get("webhook-signature")); len(sigs) != 2 {
		t.Errorf("during the grace period: signatures %q, want two", q.Header.Get("webhook-signature"))
	}
	for name, secret := range map[string]string{"old": old, "new": rotated.Secret} {
		if err := whVerify(t, secret, q, true); err != nil {
			t.Errorf("during the grace period the library rejects the %s secret: %v", name, err)
		}
	}
	if err := whVerify(t, webhook.NewSecret(), q, true); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("an unrelated secret verifies: %v", err)
	}

	// More than 24 h later only the new secret signs. The app clock is
	// ahead of the verifier's, so the timestamp check is left out here and
	// the timestamp compared with the app clock instead.
	e.Advance(24*time.Hour + time.Minute)
	whTest(t, e.A, hook.ID)
	q = rc.waitN(t, 3)[2]
	if sigs := strings.Fields(q.Header.Get("webhook-signature")); len(sigs) != 1 {
		t.Errorf("after 24 h: signatures %q, want one", q.Header.Get("webhook-signature"))
	}
	if ts := q.Header.Get("webhook-timestamp"); ts != strconv.FormatInt(e.Now().Unix(), 10) {
		t.Errorf("webhook-timestamp %s, want the app clock %d", ts, e.Now().Unix())
	}
	if err := whVerify(t, rotated.Secret, q, false); err != nil {
		t.Errorf("after 24 h the new secret does not verify: %v", err)
	}
	if err := whVerify(t, old, q, false); !errors.Is(err, standardwebhooks.ErrNoMatchingSignature) {
		t.Errorf("after 24 h the old secret still verifies: %v", err)
	}
}

// A receiver answering 500 is retried on the D11 schedule, with the same
// event and webhook-id; River holds the job for its next attempt meanwhile.
func TestWebhookReceiverError(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(500)
		io.WriteString(w, "oops")
	})
	hook := whCreate(t, e.A, rc.URL(), "*")
	ev := whTest(t, e.A, hook.ID)

	d := whLastDelivery(t, e.A, hook.ID, 1)
	if d.Attempt != 1 || d.Status == nil || *d.Status != 500 || d.Outcome != "retrying" || d.Response != "oops" ||
		d.EventID != ev.ID || d.EventType != parley.EventWebhookTest || d.Error != "" {
		t.Errorf("first attempt %+v; want attempt 1, status 500, retrying, response oops", d)
	}
	// River keeps the job for a retry 5 s later. (A retry due within River's
	// scheduler interval is stored as available with a future scheduled_at,
	// a later one as retryable.)
	job := whWaitJob(t, e, 1)
	if job.State != "available" && job.State != "retryable" || job.EventID != ev.ID || job.MaxAttempts != webhook.MaxAttempts ||
		!strings.Contains(job.Errors, "Internal Server Error") {
		t.Errorf("job %+v; want waiting for attempt 2 of %d", job, webhook.MaxAttempts)
	}
	attempted, scheduled := whJobTimes(t, e, job.ID)
	if gap := scheduled.Sub(attempted); gap < 4*time.Second || gap > 7*time.Second {
		t.Errorf("retry scheduled %v after attempt 1, want about 5 s (D11)", gap)
	}

	// River's retry carries the same event under the same id.
	reqs := rc.waitN(t, 2)
	if reqs[0].Header.Get("webhook-id") != ev.ID || reqs[1].Header.Get("webhook-id") != ev.ID || string(reqs[0].Body) != string(reqs[1].Body) {
		t.Errorf("retry differs: %s %s / %s %s", reqs[0].Header.Get("webhook-id"), reqs[0].Body, reqs[1].Header.Get("webhook-id"), reqs[1].Body)
	}
	for _, q := range reqs {
		whCheckEnvelope(t, q, hook.Secret)
	}
	d = whLastDelivery(t, e.A, hook.ID, 2)
	if d.Attempt != 2 || d.Status == nil || *d.Status != 500 || d.Outcome != "retrying" || d.EventID != ev.ID {
		t.Errorf("second attempt %+v", d)
	}
	job = whWaitJob(t, e, 2)
	if job.State != "retryable" {
		t.Errorf("after attempt 2 the job is %s, want retryable", job.State)
	}
	attempted, scheduled = whJobTimes(t, e, job.ID)
	if gap := scheduled.Sub(attempted); gap < 5*time.Minute-10*time.Second || gap > 5*time.Minute+10*time.Second {
		t.Errorf("retry scheduled %v after attempt 2, want about 5 min (D11)", gap)
	}

	// The last attempt that fails marks the delivery failed and asks for no retry.
	if err := whDeliver(t, e, ev.ID, hook.ID, webhook.MaxAttempts, true); err != nil {
		t.Errorf("final attempt returned %v, want nil (no retry)", err)
	}
	d = whLastDelivery(t, e.A, hook.ID, 3)
	if d.Attempt != webhook.MaxAttempts || d.Status == nil || *d.Status != 500 || d.Outcome != "failed" {
		t.Errorf("final attempt %+v; want failed", d)
	}
	if whGet(t, e.A, hook.ID).Disabled {
		t.Error("a failed delivery disabled the endpoint")
	}
}

// whWaitJob waits until the only deliver_webhook job has finished attempt n
// and waits for the next one.
func whWaitJob(t *testing.T, e *apitest.Env, n int) whJob {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs := whJobs(t, e)
		if len(jobs) == 1 && jobs[0].Attempt == n && jobs[0].State != "running" &&
			strings.Count(jobs[0].Errors, "attempt") == n {
			return jobs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("jobs %+v; want one that finished attempt %d", jobs, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The faults a receiver can show, one attempt each (workers stopped, so
// attempts are made by the test).
func TestWebhookReceiverFaults(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.App.Service.SetWebhooks(true, nil, webhook.WithTimeout(300*time.Millisecond))
	logs := whCaptureLog(t, e)
	attempt := func(rc string) (*parley.WebhookDelivery, error, *parley.Webhook) {
		t.Helper()
		hook := whCreate(t, e.A, rc, "*")
		ev := whTest(t, e.A, hook.ID)
		err := whDeliver(t, e, ev.ID, hook.ID, 1, false)
		d := whLastDelivery(t, e.A, hook.ID, 1)
		if d.EventID != ev.ID || d.Attempt != 1 || d.WebhookID != hook.ID {
			t.Errorf("delivery %+v for event %s", d, ev.ID)
		}
		return d, err, hook
	}

	t.Run("410 disables", func(t *testing.T) {
		rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(http.StatusGone) })
		d, err, hook := attempt(rc.URL())
		if err != nil || d.Status == nil || *d.Status != 410 || d.Outcome != "disabled" {
			t.Errorf("410: %v %+v; want no retry, outcome disabled", err, d)
		}
		if !whGet(t, e.A, hook.ID).Disabled {
			t.Fatal("410 Gone did not disable the endpoint")
		}
		if !strings.Contains(logs.String(), "webhook.disabled") {
			t.Errorf("no webhook.disabled note in the log:\n%s", logs)
		}
		// A disabled endpoint gets nothing more.
		ev := whTest(t, e.A, hook.ID)
		if err := whDeliver(t, e, ev.ID, hook.ID, 1, false); err != nil {
			t.Errorf("delivery to a disabled endpoint: %v", err)
		}
		if n := len(rc.requests()); n != 1 {
			t.Errorf("a disabled endpoint got %d requests, want 1", n)
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})

	t.Run("redirect not followed", func(t *testing.T) {
		target := whNewReceiver(t, nil)
		rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			http.Redirect(w, r, target.URL(), http.StatusFound)
		})
		d, err, hook := attempt(rc.URL())
		if err == nil || d.Status == nil || *d.Status != 302 || d.Outcome != "retrying" {
			t.Errorf("302: %v %+v; want a retry with status 302", err, d)
		}
		if n := len(target.requests()); n != 0 {
			t.Errorf("the redirect was followed (%d requests at its target)", n)
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})

	t.Run("slow receiver times out", func(t *testing.T) {
		rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			io.WriteString(w, "too late")
		})
		start := time.Now()
		d, err, hook := attempt(rc.URL())
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("the attempt took %v; the timeout is 300 ms", took)
		}
		if err == nil || d.Status != nil || !strings.Contains(d.Error, "timed out") || d.Outcome != "retrying" {
			t.Errorf("slow: %v %+v; want a retry, no status and a timeout error", err, d)
		}
		if d.LatencyMS < 300 || d.LatencyMS > 3000 {
			t.Errorf("latency_ms = %d, want about the 300 ms timeout", d.LatencyMS)
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})

	t.Run("huge response", func(t *testing.T) {
		body := strings.Repeat("€", 1<<20) // 3 MiB; a 1 KiB cut splits a rune
		rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) { io.WriteString(w, body) })
		d, err, hook := attempt(rc.URL())
		if err != nil || d.Outcome != "delivered" || d.Status == nil || *d.Status != 200 {
			t.Errorf("huge: %v %+v", err, d)
		}
		if len(d.Response) > webhook.MaxResponseBytes || len(d.Response) < webhook.MaxResponseBytes-3 ||
			!strings.HasPrefix(body, d.Response) || !utf8.ValidString(d.Response) {
			t.Errorf("stored response is %d bytes (valid UTF-8 %v), want the first 1 KiB", len(d.Response), utf8.ValidString(d.Response))
		}
		var stored string
		e.App.DB.Writer().QueryRowContext(e.Ctx, "SELECT response FROM webhook_deliveries WHERE id = "+itoa(d.ID)).Scan(&stored)
		if len(stored) > webhook.MaxResponseBytes {
			t.Errorf("the database holds %d bytes of the response", len(stored))
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})

	t.Run("endless response", func(t *testing.T) {
		// Only 1 KiB is read: a receiver that keeps sending does not hold
		// the attempt until the timeout.
		rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
			chunk := []byte(strings.Repeat("z", 1024))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		})
		d, err, hook := attempt(rc.URL())
		if err != nil || d.Outcome != "delivered" || d.Response != strings.Repeat("z", 1024) {
			t.Errorf("endless: %v, outcome %s, %d bytes of response", err, d.Outcome, len(d.Response))
		}
		if d.LatencyMS >= 250 {
			t.Errorf("latency_ms = %d: the whole endless response was read until the 300 ms timeout", d.LatencyMS)
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})

	t.Run("huge error response", func(t *testing.T) {
		body := strings.Repeat("x", 1<<20)
		rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(500); io.WriteString(w, body) })
		d, err, hook := attempt(rc.URL())
		if err == nil || d.Outcome != "retrying" || d.Response != body[:webhook.MaxResponseBytes] {
			t.Errorf("huge 500: %v, outcome %s, %d bytes of response", err, d.Outcome, len(d.Response))
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})

	t.Run("unreachable", func(t *testing.T) {
		closed := httptest.NewServer(http.NotFoundHandler())
		url := closed.URL + "/hook"
		closed.Close()
		d, err, hook := attempt(url)
		if err == nil || d.Status != nil || d.Error == "" || d.Response != "" || d.Outcome != "retrying" {
			t.Errorf("unreachable: %v %+v; want a retry, no status and the error recorded", err, d)
		}
		mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	})
}

// whLog is a log the test reads while the service writes it.
type whLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *whLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *whLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// whCaptureLog sends the service's log to a buffer (before workers start).
func whCaptureLog(t *testing.T, e *apitest.Env) *whLog {
	t.Helper()
	l := &whLog{}
	e.App.Service.SetDelivery(e.App.Provider, e.Server.URL, nil, slog.New(slog.NewTextHandler(l, nil)))
	return l
}

// An endpoint failing for more than 5 days is disabled; a success or
// re-enabling restarts the clock.
func TestWebhookDisabledAfterFiveDaysOfFailures(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	var mu sync.Mutex
	status := 500
	rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
	})
	setStatus := func(s int) { mu.Lock(); status = s; mu.Unlock() }
	logs := whCaptureLog(t, e)
	hook := whCreate(t, e.A, rc.URL(), "*")
	fail := func() error {
		t.Helper()
		ev := whTest(t, e.A, hook.ID)
		return whDeliver(t, e, ev.ID, hook.ID, 1, false)
	}

	fail()
	e.Advance(4 * 24 * time.Hour)
	fail()
	if whGet(t, e.A, hook.ID).Disabled {
		t.Fatal("disabled after 4 days of failures")
	}
	setStatus(200)
	fail() // succeeds: the failure clock stops
	setStatus(500)
	e.Advance(2 * 24 * time.Hour)
	fail() // failing again since now
	e.Advance(4 * 24 * time.Hour)
	fail()
	if whGet(t, e.A, hook.ID).Disabled {
		t.Fatal("disabled although a delivery succeeded 4 days ago")
	}
	if strings.Contains(logs.String(), "webhook.disabled") {
		t.Errorf("webhook.disabled logged too early: %s", logs)
	}
	e.Advance(24*time.Hour + time.Minute)
	if err := fail(); err != nil {
		t.Errorf("the attempt that disabled the endpoint asks for a retry: %v", err)
	}
	if !whGet(t, e.A, hook.ID).Disabled {
		t.Fatal("not disabled after failing for more than 5 days (D11)")
	}
	if d := whLastDelivery(t, e.A, hook.ID, 1); d.Outcome != "disabled" || d.Status == nil || *d.Status != 500 {
		t.Errorf("the attempt that disabled the endpoint is logged %+v, want outcome disabled", d)
	}
	if !strings.Contains(logs.String(), "webhook.disabled") {
		t.Errorf("no webhook.disabled note in the log:\n%s", logs)
	}
	// Re-enabled by the API, it starts a fresh clock.
	mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"disabled": false})
	fail()
	if whGet(t, e.A, hook.ID).Disabled {
		t.Fatal("a re-enabled endpoint was disabled by its next failure")
	}
}

// The delivery log: newest first, cursor-paginated, brand-scoped.
func TestWebhookDeliveryLog(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), "*")
	var events []string
	for i := range 5 {
		ev := whTest(t, e.A, hook.ID)
		events = append(events, ev.ID)
		if err := whDeliver(t, e, ev.ID, hook.ID, i+1, false); err != nil {
			t.Fatal(err)
		}
	}
	resp := mustDo(t, e.A, "GET", "/webhooks/"+itoa(hook.ID)+"/deliveries", nil)
	page := whObject(t, resp.Body)
	data, _ := page["data"].([]any)
	if resp.StatusCode != 200 || len(data) != 5 || page["next_cursor"] != nil {
		t.Fatalf("log: %d %s", resp.StatusCode, resp.Body)
	}
	if got := whKeys(data[0].(map[string]any)); !slices.Equal(got, []string{"attempt", "date_created", "error", "event_id",
		"event_type", "id", "latency_ms", "outcome", "response", "status", "webhook_id"}) {
		t.Errorf("delivery members %v", got)
	}

	var all []*parley.WebhookDelivery
	cursor := ""
	for range 4 {
		p := whDeliveries(t, e.A, hook.ID, "?limit=2"+cursor)
		all = append(all, p.Data...)
		if p.NextCursor == nil {
			break
		}
		if len(p.Data) != 2 {
			t.Errorf("a page with a next cursor has %d items", len(p.Data))
		}
		cursor = "&cursor=" + *p.NextCursor
	}
	if len(all) != 5 {
		t.Fatalf("paging gave %d attempts, want 5", len(all))
	}
	for i, d := range all {
		if i > 0 && d.ID >= all[i-1].ID {
			t.Errorf("not newest first: %d after %d", d.ID, all[i-1].ID)
		}
		want := events[4-i]
		if d.EventID != want || d.Attempt != 5-i || d.EventType != parley.EventWebhookTest || d.WebhookID != hook.ID ||
			d.Status == nil || *d.Status != 200 || d.Response != "ok" || d.Error != "" || d.Outcome != "delivered" || d.LatencyMS < 0 {
			t.Errorf("delivery %d: %+v, want event %s attempt %d delivered", i, d, want, 5-i)
		}
	}

	for _, q := range []string{"?limit=0", "?limit=101", "?limit=abc", "?cursor=nonsense"} {
		whWantError(t, mustDo(t, e.A, "GET", "/webhooks/"+itoa(hook.ID)+"/deliveries"+q, nil), 422, parley.EValidation)
	}
	whWantError(t, mustDo(t, e.A, "GET", "/webhooks/999999/deliveries", nil), 404, parley.ENotFound)
	// Deleting the endpoint deletes its log.
	mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(hook.ID), nil)
	if n := e.Count(t, "webhook_deliveries"); n != 0 {
		t.Errorf("%d delivery rows remain after the endpoint was deleted", n)
	}
}

// POST /webhooks/{id}/deliveries/{delivery_id}/retry delivers the same
// event again, with the same webhook-id.
func TestWebhookRetryDelivery(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(502)
			return
		}
		io.WriteString(w, "ok")
	})
	hook := whCreate(t, e.A, rc.URL(), "*")
	ev := whTest(t, e.A, hook.ID)
	first := whLastDelivery(t, e.A, hook.ID, 1)
	if first.Status == nil || *first.Status != 502 {
		t.Fatalf("first attempt %+v", first)
	}
	resp := mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/"+itoa(first.ID)+"/retry", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("retry: %d %s", resp.StatusCode, resp.Body)
	}
	var retried parley.WebhookDelivery
	json.Unmarshal(resp.Body, &retried)
	if retried.ID != first.ID || retried.EventID != ev.ID {
		t.Errorf("retry answered %s, want attempt %d", resp.Body, first.ID)
	}
	reqs := rc.waitN(t, 2) // well before River's own retry, 5 s later
	if reqs[1].Header.Get("webhook-id") != ev.ID || string(reqs[1].Body) != string(reqs[0].Body) {
		t.Errorf("the retried delivery differs: %s %s", reqs[1].Header.Get("webhook-id"), reqs[1].Body)
	}
	whCheckEnvelope(t, reqs[1], hook.Secret)
	// The retry is a new delivery (attempt 1), not River's own second
	// attempt of the first one, which is due 5 s later.
	if d := whLastDelivery(t, e.A, hook.ID, 2); d.EventID != ev.ID || d.Outcome != "delivered" || d.Attempt != 1 {
		t.Errorf("after the retry: %+v, want the event delivered by a new delivery's attempt 1", d)
	}
	if jobs := whJobs(t, e); len(jobs) != 2 || jobs[0].EventID != ev.ID || jobs[1].EventID != ev.ID ||
		jobs[1].EndpointID != hook.ID {
		t.Errorf("jobs %+v, want the first delivery and the retry of event %s", jobs, ev.ID)
	}

	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/999999/retry", nil), 404, parley.ENotFound)
	other := whCreate(t, e.A, rc.URL(), parley.EventUserDeleted)
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(other.ID)+"/deliveries/"+itoa(first.ID)+"/retry", nil), 404, parley.ENotFound)
	whWantError(t, mustDo(t, e.B, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/"+itoa(first.ID)+"/retry", nil), 404, parley.ENotFound)
}

// Brand B cannot see or change brand A's endpoints: every operation answers
// as for an id that never existed.
func TestWebhookIsolation(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	rc := whNewReceiver(t, nil)
	hook := whCreate(t, e.A, rc.URL(), "*")
	ev := whTest(t, e.A, hook.ID)
	if err := whDeliver(t, e, ev.ID, hook.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	d := whLastDelivery(t, e.A, hook.ID, 1)
	whCreate(t, e.B, rc.URL(), "*")
	before := e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id")
	deliveries := e.Count(t, "webhook_deliveries")
	jobs := len(whJobs(t, e))

	const never = int64(999999)
	for _, c := range []struct{ method, path string }{
		{"GET", "/webhooks/%d"},
		{"POST", "/webhooks/%d"},
		{"DELETE", "/webhooks/%d"},
		{"POST", "/webhooks/%d/rotate_secret"},
		{"GET", "/webhooks/%d/deliveries"},
		{"POST", "/webhooks/%d/test"},
	} {
		var body any
		if c.method == "POST" && !strings.Contains(c.path, "/rotate") && !strings.Contains(c.path, "/test") {
			body = map[string]any{"disabled": true}
		}
		foreign := mustDo(t, e.B, c.method, fmt.Sprintf(c.path, hook.ID), body)
		missing := mustDo(t, e.B, c.method, fmt.Sprintf(c.path, never), body)
		fm := whWantError(t, foreign, 404, parley.ENotFound)
		mm := whWantError(t, missing, 404, parley.ENotFound)
		if strings.ReplaceAll(fm, itoa(hook.ID), "N") != strings.ReplaceAll(mm, itoa(never), "N") {
			t.Errorf("%s %s: brand B can tell A's endpoint (%q) from a missing one (%q)", c.method, c.path, fm, mm)
		}
	}
	whWantError(t, mustDo(t, e.B, "POST", "/webhooks/"+itoa(hook.ID)+"/deliveries/"+itoa(d.ID)+"/retry", nil), 404, parley.ENotFound)
	list := whObject(t, mustDo(t, e.B, "GET", "/webhooks", nil).Body)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] == float64(hook.ID) {
		t.Errorf("brand B lists %v", list)
	}
	if after := e.Snapshot(t, "SELECT * FROM webhook_endpoints ORDER BY id"); after != before {
		t.Errorf("brand B changed endpoints:\nbefore %s\nafter  %s", before, after)
	}
	if n := e.Count(t, "webhook_deliveries"); n != deliveries {
		t.Errorf("delivery rows %d → %d", deliveries, n)
	}
	if n := len(whJobs(t, e)); n != jobs {
		t.Errorf("brand B queued deliveries: jobs %d → %d", jobs, n)
	}
}

// The secret is the base64 of the HMAC key, as the libraries expect.
func TestWebhookSecretFormat(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	hook := whCreate(t, e.A, "https://hooks.example.com/x", "*")
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(hook.Secret, "whsec_"))
	if err != nil || len(raw) != webhook.SecretBytes {
		t.Errorf("secret %q: %v, %d bytes", hook.Secret, err, len(raw))
	}
	other := whCreate(t, e.A, "https://hooks.example.com/y", "*")
	if other.Secret == hook.Secret {
		t.Error("two endpoints share a secret")
	}
}

// Concurrent creations cannot take a brand past 10 endpoints.
func TestWebhookLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	var wg sync.WaitGroup
	for range 3 * parley.MaxWebhooks {
		wg.Go(func() {
			body := []byte(`{"url":"https://hooks.example.com/x","event_types":["*"]}`)
			if _, err := e.A.Do(e.Ctx, "POST", "/webhooks", body, "application/json"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := e.Count(t, "webhook_endpoints"); n != parley.MaxWebhooks {
		t.Errorf("%d endpoints after concurrent creates, want %d", n, parley.MaxWebhooks)
	}
}
