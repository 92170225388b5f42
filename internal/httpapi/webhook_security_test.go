package httpapi_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/webhook"
)

// A delivery is made only to the endpoint it was queued for, while that
// endpoint exists and subscribes to the event's type (#15, D11).

// whMakeDue makes a deliver_webhook job due now whatever its state, as a
// retry whose time has come, or a job that escaped its cancellation.
func whMakeDue(t *testing.T, e *apitest.Env, id int64) {
	t.Helper()
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, `UPDATE river_job SET state = 'available', finalized_at = NULL,
	scheduled_at = '2000-01-01 00:00:00' WHERE id = `+itoa(id)); err != nil {
		t.Fatal(err)
	}
}

// whWaitJobState waits until job id is in state.
func whWaitJobState(t *testing.T, e *apitest.Env, id int64, state string) whJob {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, j := range whJobs(t, e) {
			if j.ID == id && j.State == state {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d never %s: %+v", id, state, whJobs(t, e))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func whMustUser(t *testing.T, e *apitest.Env, phone string) {
	t.Helper()
	if resp := mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": phone}); resp.StatusCode != 201 {
		t.Fatalf("POST /users: %d %s", resp.StatusCode, resp.Body)
	}
}

// The issue: an endpoint is deleted while a retry of its event waits; a new
// endpoint, which does not subscribe to that type, must never receive it.
func TestWebhookDeletedEndpointPendingRetry(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	failing := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) { w.WriteHeader(500) })
	old := whCreate(t, e.A, failing.URL(), parley.EventUserCreated)
	whMustUser(t, e, "+14155552671")
	job := whWaitJob(t, e, 1) // attempt 1 failed; the retry waits

	if resp := mustDo(t, e.A, "DELETE", "/webhooks/"+itoa(old.ID), nil); resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d %s", resp.StatusCode, resp.Body)
	}
	// Deleting the endpoint cancels the deliveries queued to it.
	if j := whJobs(t, e)[0]; j.State != "cancelled" {
		t.Errorf("the pending retry of the deleted endpoint is %s, want cancelled", j.State)
	}

	rc := whNewReceiver(t, nil)
	fresh := whCreate(t, e.A, rc.URL(), parley.EventMessageQueued)
	if fresh.ID <= old.ID {
		t.Errorf("new endpoint has id %d after %d was deleted: ids must never be reused", fresh.ID, old.ID)
	}
	// Even a job that escaped the cancellation (one running at the time)
	// finds its endpoint gone and sends nothing.
	whMakeDue(t, e, job.ID)
	whWaitJobState(t, e, job.ID, "completed")
	if got := rc.requests(); len(got) != 0 {
		t.Errorf("the new endpoint got %d requests for the deleted one's event", len(got))
	}
	if got := failing.requests(); len(got) != 1 {
		t.Errorf("the deleted endpoint got %d requests, want only the first attempt", len(got))
	}
	if p := whDeliveries(t, e.A, fresh.ID, ""); len(p.Data) != 0 {
		t.Errorf("the new endpoint's log has %+v", p.Data)
	}
}

// An endpoint that stops subscribing to a type gets no more deliveries of
// it, retries included; webhook.test events are sent whatever the types.
func TestWebhookDeliveryRechecksSubscription(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "ok")
	})
	hook := whCreate(t, e.A, rc.URL(), parley.EventUserCreated)
	whMustUser(t, e, "+14155552671")
	job := whWaitJob(t, e, 1)

	resp := mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"event_types": []string{parley.EventMessageQueued}})
	if resp.StatusCode != 200 {
		t.Fatalf("update: %d %s", resp.StatusCode, resp.Body)
	}
	whMakeDue(t, e, job.ID)
	whWaitJobState(t, e, job.ID, "completed")
	if got := rc.requests(); len(got) != 1 {
		t.Errorf("the endpoint got %d requests, want the first attempt only: it no longer takes %s", len(got), parley.EventUserCreated)
	}
	if p := whDeliveries(t, e.A, hook.ID, ""); len(p.Data) != 1 {
		t.Errorf("delivery log %+v, want the first attempt only", p.Data)
	}

	// Subscribed again, the same event goes through; a test event always does.
	mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"event_types": []string{"*"}})
	if err := whDeliver(t, e, job.EventID, hook.ID, 2, false); err != nil {
		t.Errorf("delivery with \"*\": %v", err)
	}
	rc.event(t, parley.EventUserCreated, "phone_number", "+14155552671")
	mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"event_types": []string{parley.EventMessageQueued}})
	ev := whTest(t, e.A, hook.ID)
	rc.wait(t, "the test event", func(q *whReq) bool { return q.ID == ev.ID })
}

// The delivery log tells the tenant why an attempt failed without what a
// name resolved to or which resolver answered (#15): the URL is theirs, the
// network behind the server is not.
func TestWebhookDeliveryErrorRevealsNoAddress(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.WebhookAllowPrivate = false })
	e.App.Service.SetWebhooks(false, nil, webhook.WithLookup(func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "inside.example.com" {
			return []netip.Addr{netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, Server: "10.20.30.40:53", IsTemporary: true}
	}))
	for host, want := range map[string]string{
		"inside.example.com": "refused: non-public address",
		"broken.example.com": "DNS lookup failed",
	} {
		hook := whCreate(t, e.A, "https://"+host+"/hook", "*")
		ev := whTest(t, e.A, hook.ID)
		if err := whDeliver(t, e, ev.ID, hook.ID, 1, false); err == nil {
			t.Errorf("%s: delivered", host)
		}
		d := whLastDelivery(t, e.A, hook.ID, 1)
		if d.Error != want || d.Status != nil || d.Outcome != "retrying" {
			t.Errorf("%s: delivery %+v, want error %q, no status, retrying", host, d, want)
		}
		// The whole log minus its timestamps, which may hold ":53" by chance.
		resp := mustDo(t, e.A, "GET", "/webhooks/"+itoa(hook.ID)+"/deliveries", nil)
		log := regexp.MustCompile(`"date_[a-z]+":"[^"]*"`).ReplaceAllString(string(resp.Body), "")
		for _, leak := range []string{"10.1.2.3", "127.0.0.1", "10.20.30.40", ":53"} {
			if strings.Contains(log, leak) {
				t.Errorf("%s: the delivery log shows %s: %s", host, leak, resp.Body)
			}
		}
	}
}

// A host written with Unicode dots or digits is read as a resolver reads
// it (IDNA) before the address check, and stored in that ASCII form (#15).
func TestWebhookURLUnicodeHost(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.WebhookAllowPrivate = false })
	for _, u := range []string{"https://127。0。0。1/hook", "https://１２７．０．０．１/hook", "https://169｡254｡169｡254/latest/meta-data",
		"https://ｌｏｃａｌｈｏｓｔ/hook", "https://127%E3%80%820.0.1/hook"} {
		msg := whWantError(t, mustDo(t, e.A, "POST", "/webhooks", map[string]any{"url": u, "event_types": []string{"*"}}), 422, parley.EValidation)
		if !strings.HasPrefix(msg, "url: ") {
			t.Errorf("%s: msg %q does not name url", u, msg)
		}
	}
	hook := whCreate(t, e.A, "https://bücher.example/hooks/ü?x=1", "*")
	if want := "https://xn--bcher-kva.example/hooks/ü?x=1"; hook.URL != want || whGet(t, e.A, hook.ID).URL != want {
		t.Errorf("url %q, want %q: the host in punycode, the rest as sent", hook.URL, want)
	}
	whWantError(t, mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"url": "https://１０.0.0.1/"}), 422, parley.EValidation)
	resp := mustDo(t, e.A, "POST", "/webhooks/"+itoa(hook.ID), map[string]any{"url": "https://例え.テスト:8443/h"})
	if got := whObject(t, resp.Body)["url"]; got != "https://xn--r8jz45g.xn--zckzah:8443/h" {
		t.Errorf("updated url %v, want the host in punycode", got)
	}
}
