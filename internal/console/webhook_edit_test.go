package console_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/webhook"
)

// TestWebhookEdit: an admin changes an endpoint's URL, description and
// events on its page, through the API's update (POST /webhooks/{id}); a
// bad URL is shown next to its field and changes nothing (issue #32, D11).
func TestWebhookEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.adminFixtures(t)
	w := e.signedIn(t, "admin@a.example")
	id := itoa(f.WebhookID)
	p := w.get("/console/webhooks/" + id)
	if !strings.Contains(p.Body, "Edit endpoint") || !strings.Contains(p.Body, ">Save changes</button>") {
		t.Fatalf("the endpoint page has no edit form:\n%s", p.Body)
	}
	before := e.adminState(t)
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"update"}, "url": {"ftp://example.com/x"}, "all_events": {"1"}})
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `<span id="url-error" class="field-error">`) ||
		!strings.Contains(p.Body, `value="ftp://example.com/x"`) {
		t.Errorf("bad URL: %d, want 422 with the error next to the URL, keeping it\n%s", p.Status, p.Body)
	}
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"update"}, "url": {"https://example.com/x"}})
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `<p class="field-error">`) {
		t.Errorf("no events: %d, want 422 with the error under the events\n%s", p.Status, p.Body)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused edits changed the database:\nbefore %s\nafter  %s", before, after)
	}
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"update"}, "url": {"https://crm.example.com/parley"}, "description": {"New CRM"},
		"event_types": {parley.EventMessageDelivered, parley.EventUserUnsubscribed}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/webhooks/"+id+"?done=saved" {
		t.Fatalf("save: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	wh, err := e.App.Service.FindWebhook(e.Ctx, e.BrandA.ID, f.WebhookID)
	if err != nil || wh.URL != "https://crm.example.com/parley" || wh.Description != "New CRM" ||
		!slices.Equal(wh.EventTypes, []string{parley.EventMessageDelivered, parley.EventUserUnsubscribed}) {
		t.Errorf("after save: %+v (%v)", wh, err)
	}
	if p := w.get(p.Location); !strings.Contains(p.Body, "The endpoint was saved.") || !strings.Contains(p.Body, `id="ev-message.delivered" name="event_types" type="checkbox" value="message.delivered" checked`) {
		t.Errorf("the page after saving:\n%s", p.Body)
	}
}

// signedReceiver is a webhook endpoint that keeps what it got.
type signedReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []signedDelivery
}

type signedDelivery struct {
	id, ts, sig string
	body        []byte
}

func newSignedReceiver(t *testing.T) *signedReceiver {
	r := &signedReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, signedDelivery{req.Header.Get(webhook.HeaderID), req.Header.Get(webhook.HeaderTimestamp), req.Header.Get(webhook.HeaderSignature), body})
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// wait returns the nth delivery (from 1), failing after 30 s.
func (r *signedReceiver) wait(t *testing.T, n int) signedDelivery {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		if len(r.got) >= n {
			d := r.got[n-1]
			r.mu.Unlock()
			return d
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got fewer than %d deliveries", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signedBy reports whether d carries a signature made with secret.
func (d signedDelivery) signedBy(t *testing.T, secret string) bool {
	t.Helper()
	ts, _ := strconv.ParseInt(d.ts, 10, 64)
	want, err := webhook.Sign([]string{secret}, d.id, time.Unix(ts, 0), d.body)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(strings.Fields(d.sig), want)
}

var secretInput = regexp.MustCompile(`id="secret" type="text" readonly value="(whsec_[^"]+)"`)

// TestWebhookRotateSecret: "Rotate signing secret" shows a new secret
// once; deliveries are then signed with it, and for 24 h with the old one
// too; after that with the new one alone (issue #32, D11).
func TestWebhookRotateSecret(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rcv := newSignedReceiver(t)
	e.startWorkers(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/webhooks", url.Values{"url": {rcv.URL + "/hook"}, "all_events": {"1"}})
	m, s := webhookLink.FindStringSubmatch(p.Body), secretInput.FindStringSubmatch(p.Body)
	if p.Status != http.StatusCreated || m == nil || s == nil {
		t.Fatalf("create: %d\n%s", p.Status, p.Body)
	}
	id, old := m[1], s[1]
	p = w.post("/console/webhooks/"+id, url.Values{"action": {"rotate"}})
	s = secretInput.FindStringSubmatch(p.Body)
	if p.Status != http.StatusOK || s == nil || s[1] == old || !strings.Contains(p.Body, "New signing secret") || !strings.Contains(p.Body, ">Copy secret</button>") {
		t.Fatalf("rotate: %d, want the new secret with a copy button\n%s", p.Status, p.Body)
	}
	fresh := s[1]
	if p := w.get("/console/webhooks/" + id); strings.Contains(p.Body, fresh) {
		t.Errorf("the new secret is shown again")
	}
	w.post("/console/webhooks/"+id, url.Values{"action": {"test"}})
	if d := rcv.wait(t, 1); !d.signedBy(t, fresh) || !d.signedBy(t, old) {
		t.Errorf("a delivery during the rotation: signature %q, want the new secret's and the old one's", d.sig)
	}
	e.Advance(24*time.Hour + time.Second)
	w = e.signedIn(t, "admin@a.example") // the session may have lapsed over the day
	w.post("/console/webhooks/"+id, url.Values{"action": {"test"}})
	if d := rcv.wait(t, 2); !d.signedBy(t, fresh) || d.signedBy(t, old) {
		t.Errorf("a delivery after the rotation: signature %q, want the new secret's alone", d.sig)
	}
}
