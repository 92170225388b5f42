package console_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
)

// receiver is a webhook endpoint whose answer a test sets.
type receiver struct {
	*httptest.Server
	status atomic.Int32
	got    atomic.Int32
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{}
	r.status.Store(200)
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("webhook-id") != "" && req.Header.Get("webhook-signature") != "" {
			r.got.Add(1)
		}
		w.WriteHeader(int(r.status.Load()))
	}))
	t.Cleanup(r.Close)
	return r
}

// waitFor polls path until its body holds want, failing after 30 s.
func (w *web) waitFor(path, want string) page {
	w.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := w.get(path)
		if strings.Contains(p.Body, want) {
			return p
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("%s never showed %q:\n%s", path, want, p.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var (
	webhookLink = regexp.MustCompile(`href="/console/webhooks/(\d+)"`)
	retryForm   = regexp.MustCompile(`name="delivery" value="(\d+)"><button type="submit">Retry</button>`)
)

// TestWebhooksPage: an admin adds an endpoint (its secret shown once),
// sends a test event and sees its delivery in the log; a failed delivery
// shows its response code and a Retry button that sends it again; the
// endpoint is disabled, enabled again and deleted (D11, D19).
func TestWebhooksPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/webhooks", url.Values{"url": {rcv.URL + "/hook"}, "description": {"CRM sync"}, "all_events": {"1"}})
	m := webhookLink.FindStringSubmatch(p.Body)
	if p.Status != http.StatusCreated || m == nil || !strings.Contains(p.Body, "Endpoint created") {
		t.Fatalf("create: %d\n%s", p.Status, p.Body)
	}
	secret := regexp.MustCompile(`value="(whsec_[^"]+)"`).FindStringSubmatch(p.Body)
	if secret == nil {
		t.Fatalf("the new endpoint's secret is not shown:\n%s", p.Body)
	}
	id := m[1]
	hooks, err := e.App.Service.ListWebhooks(e.Ctx, e.BrandA.ID)
	if err != nil || len(hooks) != 1 || hooks[0].URL != rcv.URL+"/hook" || hooks[0].Description != "CRM sync" ||
		len(hooks[0].EventTypes) != 1 || hooks[0].EventTypes[0] != "*" || itoa(hooks[0].ID) != id {
		t.Fatalf("endpoints after create = %+v (%v)", hooks, err)
	}
	if p := w.get("/console/webhooks"); strings.Contains(p.Body, secret[1]) || !strings.Contains(p.Body, rcv.URL+"/hook") {
		t.Errorf("the list shows the secret again, or lacks the endpoint:\n%s", p.Body)
	}
	e.startWorkers(t)

	if p := w.get("/console/webhooks/" + id); strings.Contains(p.Body, "data-refresh") {
		t.Errorf("the log refreshes itself with nothing awaited:\n%s", p.Body)
	}
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"test"}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/webhooks/"+id+"?done=test&after=0" {
		t.Fatalf("send test event: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	p = w.get(p.Location)
	refresh := regexp.MustCompile(`data-refresh="(/console/webhooks/` + id + `/deliveries\?after=0&(?:amp;)?until=\d+)"`).FindStringSubmatch(p.Body)
	if !strings.Contains(p.Body, "A test event was queued") || refresh == nil {
		t.Fatalf("the page does not say the test event was queued, or does not wait for it:\n%s", p.Body)
	}
	if !strings.Contains(p.Body, "data-pending") && !strings.Contains(p.Body, "<td>delivered</td>") {
		t.Errorf("the log neither has the delivery nor waits for it:\n%s", p.Body)
	}
	p = w.waitFor(strings.ReplaceAll(refresh[1], "&amp;", "&"), "<td>delivered</td>")
	if !strings.Contains(p.Body, "webhook.test") || !strings.Contains(p.Body, "<td>200</td>") || strings.Contains(p.Body, ">Retry<") ||
		strings.Contains(p.Body, "data-pending") {
		t.Errorf("delivered test event in the log (no Retry, nothing awaited):\n%s", p.Body)
	}
	if rcv.got.Load() != 1 {
		t.Errorf("the receiver got %d signed events, want 1", rcv.got.Load())
	}
	// The log waits for an attempt newer than "after", and not for ever.
	future := strconv.FormatInt(e.Now().Add(time.Minute).Unix(), 10)
	if p := w.get("/console/webhooks/" + id + "/deliveries?after=999999&until=" + future); !strings.Contains(p.Body, "data-pending") {
		t.Errorf("awaiting a newer attempt, the log is not pending:\n%s", p.Body)
	}
	past := strconv.FormatInt(e.Now().Add(-time.Second).Unix(), 10)
	if p := w.get("/console/webhooks/" + id + "/deliveries?after=999999&until=" + past); strings.Contains(p.Body, "data-pending") {
		t.Errorf("past its time limit, the log is still pending:\n%s", p.Body)
	}

	rcv.status.Store(500)
	w.post("/console/webhooks/"+id, url.Values{"action": {"test"}})
	p = w.waitFor("/console/webhooks/"+id+"/deliveries", "<td>500</td>")
	rm := retryForm.FindStringSubmatch(p.Body)
	if rm == nil {
		t.Fatalf("a failed delivery has no Retry button:\n%s", p.Body)
	}
	rcv.status.Store(200)
	jobs := e.Count(t, "river_job WHERE kind = 'deliver_webhook'")
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"retry"}, "delivery": {rm[1]}})
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/console/webhooks/"+id+"?done=retry&after=") {
		t.Fatalf("retry: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	if n := e.Count(t, "river_job WHERE kind = 'deliver_webhook'"); n != jobs+1 {
		t.Errorf("Retry queued %d jobs, want 1", n-jobs)
	}
	deadline := time.Now().Add(30 * time.Second)
	for rcv.got.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := rcv.got.Load(); n < 3 {
		t.Fatalf("after Retry the receiver got %d events, want 3", n)
	}
	// The attempt is logged once the receiver has answered.
	var ds []*parley.WebhookDelivery
	for {
		ds, _, err = e.App.Service.ListWebhookDeliveries(e.Ctx, e.BrandA.ID, hooks[0].ID, 10, "")
		if err != nil || len(ds) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || len(ds) < 3 || ds[0].Outcome != "delivered" || ds[0].EventID != ds[1].EventID {
		t.Errorf("deliveries after Retry: %d (%v), want the failed event delivered again", len(ds), err)
	}

	for _, c := range []struct {
		action, button string
		disabled       bool
	}{{"disable", "Enable endpoint", true}, {"enable", "Disable endpoint", false}} {
		p = w.post("/console/webhooks/"+id, url.Values{"action": {c.action}})
		if p.Status != http.StatusSeeOther || p.Location != "/console/webhooks/"+id {
			t.Fatalf("%s: %d %q", c.action, p.Status, p.Location)
		}
		if wh, _ := e.App.Service.FindWebhook(e.Ctx, e.BrandA.ID, hooks[0].ID); wh.Disabled != c.disabled {
			t.Errorf("after %s: disabled = %v", c.action, wh.Disabled)
		}
		if p := w.get("/console/webhooks/" + id); !strings.Contains(p.Body, ">"+c.button+"</button>") {
			t.Errorf("after %s the page lacks the button %s", c.action, c.button)
		}
	}

	// Delete asks first, naming the endpoint, and deletes nothing yet
	// (issue #32).
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"delete"}})
	if p.Status != http.StatusOK || p.h1() != "Delete the endpoint "+rcv.URL+"/hook?" || !strings.Contains(p.Body, `name="confirm" value="1"`) {
		t.Fatalf("delete without confirming: %d %q, want the question\n%s", p.Status, p.h1(), p.Body)
	}
	if hooks, _ := e.App.Service.ListWebhooks(e.Ctx, e.BrandA.ID); len(hooks) != 1 {
		t.Fatalf("the endpoint was deleted before the admin confirmed")
	}
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"delete"}, "confirm": {"1"}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/webhooks?done=deleted" {
		t.Fatalf("delete: %d %q", p.Status, p.Location)
	}
	if hooks, _ := e.App.Service.ListWebhooks(e.Ctx, e.BrandA.ID); len(hooks) != 0 {
		t.Errorf("endpoints after delete: %d", len(hooks))
	}
	if p := w.get("/console/webhooks/" + id); p.Status != http.StatusNotFound {
		t.Errorf("deleted endpoint's page: %d, want 404", p.Status)
	}
}

// TestWebhookLogErrorSanitized: an endpoint that cannot be reached shows
// why in the log without the address it resolved to (D11, #15).
func TestWebhookLogErrorSanitized(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	wh, err := e.App.Service.CreateWebhook(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID,
		parley.WebhookCreate{URL: parley.Some("http://" + closed + "/hook"), EventTypes: parley.Some([]string{"*"})})
	if err != nil {
		t.Fatal(err)
	}
	e.startWorkers(t)
	w := e.signedIn(t, "admin@a.example")
	w.post("/console/webhooks/"+itoa(wh.ID), url.Values{"action": {"test"}})
	p := w.waitFor("/console/webhooks/"+itoa(wh.ID)+"/deliveries", ">Retry<")
	log := p.Body[strings.Index(p.Body, "<tbody>"):]
	if !strings.Contains(log, "<td>none</td>") || strings.Contains(log, "127.0.0.1") || strings.Contains(log, `<td class="wrap"></td>`+"\n<td><form") {
		t.Errorf("an unreachable endpoint's log row (want no response code, a reason, no address):\n%s", log)
	}
}

// TestWebhooksBadInput: a bad URL, no event type or a long description
// shows the service's error next to its field and creates nothing; a
// bad action or delivery id changes nothing (D3, D11).
func TestWebhooksBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.adminFixtures(t)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	for name, c := range map[string]struct {
		form  url.Values
		field string
	}{
		"not http":      {url.Values{"url": {"ftp://example.com/x"}, "all_events": {"1"}}, "url"},
		"no url":        {url.Values{"url": {""}, "all_events": {"1"}}, "url"},
		"no event type": {url.Values{"url": {"https://example.com/x"}}, "event_types"},
		"unknown type":  {url.Values{"url": {"https://example.com/x"}, "event_types": {"user.exploded"}}, "event_types"},
		"long text":     {url.Values{"url": {"https://example.com/x"}, "all_events": {"1"}, "description": {strings.Repeat("x", 5000)}}, "description"},
	} {
		p := w.post("/console/webhooks", c.form)
		wantSpan := `<span id="` + c.field + `-error" class="field-error">`
		if c.field == "event_types" {
			wantSpan = `<p class="field-error">`
		}
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, wantSpan) {
			t.Errorf("%s: %d, want 422 with the error next to %s\n%s", name, p.Status, c.field, p.Body)
		}
		if v := c.form.Get("url"); v != "" && !strings.Contains(p.Body, `value="`+v+`"`) {
			t.Errorf("%s: the form does not keep the URL typed", name)
		}
	}
	wh := itoa(f.WebhookID)
	for name, c := range map[string]struct {
		form   url.Values
		status int
	}{
		"unknown action":   {url.Values{"action": {"explode"}}, http.StatusUnprocessableEntity},
		"no delivery":      {url.Values{"action": {"retry"}}, http.StatusNotFound},
		"unknown delivery": {url.Values{"action": {"retry"}, "delivery": {"999999"}}, http.StatusNotFound},
	} {
		if p := w.post("/console/webhooks/"+wh, c.form); p.Status != c.status {
			t.Errorf("%s: %d, want %d\n%s", name, p.Status, c.status, p.Body)
		}
	}
	if p := w.post("/console/webhooks/999999", url.Values{"action": {"test"}}); p.Status != http.StatusNotFound {
		t.Errorf("test event to a missing endpoint: %d, want 404", p.Status)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused forms changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

// TestBrowserWebhook: in Chromium, an admin adds an endpoint, presses
// "Send test event" and sees the delivery arrive in the log, which
// refreshes itself (D19, D11).
func TestBrowserWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newReceiver(t)
	e.startWorkers(t)
	b := newBrowser(t, e.Server.URL)
	b.signIn("admin@a.example", password)
	b.Follow("Webhooks")
	if h := b.H1(); h != "Webhooks" {
		t.Fatalf("Webhooks link: %q", h)
	}
	b.checkPage()
	b.Fill("Endpoint URL", rcv.URL+"/hook")
	b.Fill("Description", "CRM sync")
	b.Submit("Add endpoint")
	if txt := b.Text(); !strings.Contains(txt, "Endpoint created") || !strings.Contains(txt, rcv.URL+"/hook") {
		t.Fatalf("after Add endpoint:\n%s", txt)
	}
	b.checkPage()
	b.Submit("Open the endpoint and its delivery log")
	if h := b.H1(); h != "Webhook "+rcv.URL+"/hook" {
		t.Fatalf("endpoint page: %q", h)
	}
	if txt := b.Text(); !strings.Contains(txt, "No deliveries yet") {
		t.Errorf("a new endpoint's log:\n%s", txt)
	}
	b.Submit("Send test event")
	b.WaitText("webhook.test")
	b.WaitText("delivered")
	if rcv.got.Load() != 1 {
		t.Errorf("receiver got %d events, want 1", rcv.got.Load())
	}
	b.checkPage()
	b.Phone()
	b.checkPage()
	b.Go("/console/webhooks") // the list and its form of event types
	b.checkPage()
}
