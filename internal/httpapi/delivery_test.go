package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/store"
)

// dlvEnv starts Parley with its delivery workers running.
func dlvEnv(t *testing.T) *apitest.Env {
	t.Helper()
	e := apitest.New(t, func(c *app.Config) { c.SimDelay = time.Second })
	if err := e.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e
}

func dlvUser(t *testing.T, e *apitest.Env, phone string, consent *bool) *parley.User {
	t.Helper()
	in := parley.UserCreate{PhoneNumber: parley.Some(phone)}
	if consent != nil {
		in.MessagingConsent = parley.Some(*consent)
	}
	return e.MustCreateUser(t, e.A, in)
}

func dlvSend(t *testing.T, e *apitest.Env, userID int64) *parley.Message {
	t.Helper()
	m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(userID), Body: parley.Some("Hello")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// dlvWait polls the message until it has status, and fails after 10 s.
func dlvWait(t *testing.T, e *apitest.Env, id int64, status string) *parley.Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m, err := e.A.GetMessage(e.Ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.Status == status {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d is %s, want %s (error %v)", id, m.Status, status, strOf(m.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func strOf(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// dlvReport moves the sim's clock past its delay and reports due statuses.
func dlvReport(t *testing.T, e *apitest.Env) {
	t.Helper()
	e.Advance(2 * time.Second)
	if err := e.App.Sim.Flush(e.Ctx, e.App.Service); err != nil {
		t.Fatal(err)
	}
}

func TestDeliveryLifecycle(t *testing.T) {
	t.Parallel()
	e := dlvEnv(t)
	u := dlvUser(t, e, "+14155552671", nil)
	m := dlvSend(t, e, u.ID)
	sent := dlvWait(t, e, m.ID, parley.StatusSent)
	if sent.DateSent == nil || sent.DateDelivered != nil || sent.ErrorCode != nil {
		t.Errorf("sent message %+v: want date_sent set, date_delivered and error_code null (D8)", sent)
	}
	dlvReport(t, e)
	got := dlvWait(t, e, m.ID, parley.StatusDelivered)
	if got.DateDelivered == nil || got.DateSent == nil || !got.DateDelivered.After(got.DateSent.Time) {
		t.Errorf("delivered message %+v: want date_sent < date_delivered (D8)", got)
	}
	if n := e.App.Sim.Sends(); n != 1 {
		t.Errorf("sim sends = %d, want 1", n)
	}
}

func TestDeliveryMagicNumbers(t *testing.T) {
	t.Parallel()
	e := dlvEnv(t)
	// +1500555000x are valid NANP numbers (area code 500), so strict mode takes them.
	bad := dlvSend(t, e, dlvUser(t, e, "+15005550001", nil).ID)
	unreachable := dlvSend(t, e, dlvUser(t, e, "+15005550002", nil).ID)

	got := dlvWait(t, e, bad.ID, parley.StatusFailed)
	if strOf(got.ErrorCode) != "invalid_number" || got.ErrorMessage == nil || got.DateSent != nil {
		t.Errorf("+15005550001: %+v, want failed invalid_number, never sent (D12)", got)
	}
	dlvWait(t, e, unreachable.ID, parley.StatusSent)
	dlvReport(t, e)
	got = dlvWait(t, e, unreachable.ID, parley.StatusUndelivered)
	if strOf(got.ErrorCode) != "carrier_unreachable" || got.ErrorMessage == nil || got.DateDelivered != nil {
		t.Errorf("+15005550002: %+v, want undelivered carrier_unreachable (D12)", got)
	}
}

func TestDeliveryConsentFalseNotSent(t *testing.T) {
	t.Parallel()
	e := dlvEnv(t)
	no := false
	m := dlvSend(t, e, dlvUser(t, e, "+14155552671", &no).ID)
	got := dlvWait(t, e, m.ID, parley.StatusFailed)
	if strOf(got.ErrorCode) != "recipient_unsubscribed" {
		t.Errorf("error_code = %s, want recipient_unsubscribed (D8)", strOf(got.ErrorCode))
	}
	if n := e.App.Sim.Sends(); n != 0 {
		t.Errorf("provider called %d times for an unsubscribed recipient (D8)", n)
	}
}

func TestStatusUpdatesOnlyMoveForward(t *testing.T) {
	t.Parallel()
	e := dlvEnv(t)
	m := dlvSend(t, e, dlvUser(t, e, "+14155552671", nil).ID)
	dlvWait(t, e, m.ID, parley.StatusSent)
	dlvReport(t, e)
	delivered := dlvWait(t, e, m.ID, parley.StatusDelivered)

	pid := dlvProviderID(t, e, m.ID)
	for _, st := range []string{parley.StatusSent, parley.StatusDelivered, parley.StatusFailed, parley.StatusUndelivered} {
		if err := e.App.Service.ApplyStatus(e.Ctx, delivery.StatusUpdate{ProviderID: pid, Status: st, ErrorCode: "x", At: e.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := e.A.GetMessage(e.Ctx, m.ID)
	if got.Status != parley.StatusDelivered || !got.DateDelivered.Equal(delivered.DateDelivered.Time) || got.ErrorCode != nil {
		t.Errorf("after late and duplicate updates: %+v; want unchanged delivered (D8: never backwards)", got)
	}
	if err := e.App.Service.ApplyStatus(e.Ctx, delivery.StatusUpdate{ProviderID: "SIMunknown", Status: parley.StatusDelivered}); err != nil {
		t.Errorf("unknown provider id: %v, want ignored", err)
	}
}

func dlvProviderID(t *testing.T, e *apitest.Env, id int64) string {
	t.Helper()
	d, err := e.App.DB.FindDelivery(e.Ctx, e.BrandA.ID, id)
	if err != nil || d.ProviderID == "" {
		t.Fatalf("provider id of %d: %v %+v", id, err, d)
	}
	return d.ProviderID
}

// dlvProvider is a scripted provider.
type dlvProvider struct {
	calls  atomic.Int64
	result func(call int64) error
}

func (p *dlvProvider) Name() string { return "sim" }
func (p *dlvProvider) Send(ctx context.Context, m delivery.Message) (delivery.Receipt, error) {
	n := p.calls.Add(1)
	if err := p.result(n); err != nil {
		return delivery.Receipt{}, err
	}
	return delivery.Receipt{ProviderID: "P" + itoa(m.ID)}, nil
}

// dlvManual is an env whose workers are not running: tests call Deliver.
func dlvManual(t *testing.T, p delivery.Provider) (*apitest.Env, *parley.User) {
	e := apitest.New(t)
	e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
	return e, dlvUser(t, e, "+14155552671", nil)
}

func TestDeliveryTemporaryErrorsRetry(t *testing.T) {
	t.Parallel()
	p := &dlvProvider{result: func(n int64) error {
		if n <= 2 {
			return &delivery.Error{Code: "503", Message: "busy", Temporary: true}
		}
		return nil
	}}
	e, u := dlvManual(t, p)
	m := dlvSend(t, e, u.ID)
	for attempt := 1; attempt <= 2; attempt++ {
		if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, attempt, false); err == nil {
			t.Fatalf("attempt %d: temporary error not returned for a retry", attempt)
		}
		if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusQueued {
			t.Fatalf("after a temporary error the message is %s, want queued", got.Status)
		}
	}
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 3, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusSent {
		t.Errorf("status %s after the provider accepted", got.Status)
	}
	// A retried job after success sends nothing more.
	e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 4, false)
	if n := p.calls.Load(); n != 3 {
		t.Errorf("provider calls = %d, want 3", n)
	}
}

func TestDeliveryLastAttemptFails(t *testing.T) {
	t.Parallel()
	p := &dlvProvider{result: func(int64) error { return &delivery.Error{Code: "429", Message: "Too many requests", Temporary: true} }}
	e, u := dlvManual(t, p)
	m := dlvSend(t, e, u.ID)
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 10, true); err != nil {
		t.Fatal(err)
	}
	got, _ := e.A.GetMessage(e.Ctx, m.ID)
	if got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "429" {
		t.Errorf("after the last attempt: %+v, want failed with the provider's code", got)
	}
}

func TestDeliveryPermanentErrorFailsAtOnce(t *testing.T) {
	t.Parallel()
	p := &dlvProvider{result: func(int64) error { return &delivery.Error{Code: "21211", Message: "Invalid 'To' Phone Number"} }}
	e, u := dlvManual(t, p)
	m := dlvSend(t, e, u.ID)
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 1, false); err != nil {
		t.Fatalf("permanent error returned for a retry: %v", err)
	}
	got, _ := e.A.GetMessage(e.Ctx, m.ID)
	if got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "21211" || strOf(got.ErrorMessage) != "Invalid 'To' Phone Number" {
		t.Errorf("got %+v, want failed with the provider's code and message", got)
	}
}

func TestDeliveryCarrierOptOut(t *testing.T) {
	t.Parallel()
	p := &dlvProvider{result: func(int64) error {
		return &delivery.Error{Code: "21610", Message: "Attempt to send to unsubscribed recipient", Unsubscribed: true}
	}}
	e, u := dlvManual(t, p)
	m := dlvSend(t, e, u.ID)
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 1, false); err != nil {
		t.Fatal(err)
	}
	got, _ := e.A.GetMessage(e.Ctx, m.ID)
	if got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "recipient_unsubscribed" {
		t.Errorf("got %+v, want failed recipient_unsubscribed", got)
	}
	user, _ := e.A.GetUser(e.Ctx, u.ID)
	if user.MessagingConsent == nil || *user.MessagingConsent {
		t.Errorf("consent = %v, want false after the carrier's opt-out", user.MessagingConsent)
	}
	events := consentHistory(t, e, u.ID)
	if len(events) != 1 || events[0].Source != "carrier" || events[0].Detail != "sim:21610" && !strings.HasSuffix(events[0].Detail, "21610") ||
		string(events[0].OldValue) != "null" || string(events[0].NewValue) != "false" || events[0].MessageID == nil || *events[0].MessageID != m.ID {
		t.Errorf("consent history = %s, want one carrier entry null → false for message %d (D18)", dumpHistory(events), m.ID)
	}
}

// A crash after the provider call and before the status write leaves the
// message queued with its send recorded. The retry must not send twice.
func TestDeliveryCrashBetweenCallAndWrite(t *testing.T) {
	t.Parallel()
	t.Run("IdempotentProviderDedupes", func(t *testing.T) {
		t.Parallel()
		e := apitest.New(t)
		m := dlvSend(t, e, dlvUser(t, e, "+14155552671", nil).ID)
		ctx, cancel := context.WithCancel(e.Ctx)
		// The sim accepts, then the status write fails as if the process died.
		crashy := &crashAfterSend{Provider: e.App.Sim, cancel: cancel}
		e.App.Service.SetDelivery(crashy, e.Server.URL, nil, nil)
		e.App.Service.Deliver(ctx, e.BrandA.ID, m.ID, 1, false)
		if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusQueued {
			t.Fatalf("status %s; the simulated crash should leave it queued", got.Status)
		}
		e.App.Service.SetDelivery(e.App.Sim, e.Server.URL, nil, nil)
		if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 2, false); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusSent {
			t.Errorf("status %s after the retry", got.Status)
		}
		if n := e.App.Sim.Sends(); n != 1 {
			t.Errorf("the recipient got %d sends, want 1 (idempotency key per message)", n)
		}
	})
	t.Run("OtherProviderFailsUnknown", func(t *testing.T) {
		t.Parallel()
		p := &dlvProvider{result: func(int64) error { return nil }}
		e, u := dlvManual(t, p)
		m := dlvSend(t, e, u.ID)
		ctx, cancel := context.WithCancel(e.Ctx)
		e.App.Service.SetDelivery(&crashAfterSend{Provider: p, cancel: cancel}, e.Server.URL, nil, nil)
		e.App.Service.Deliver(ctx, e.BrandA.ID, m.ID, 1, false)
		e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
		if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 2, false); err != nil {
			t.Fatal(err)
		}
		got, _ := e.A.GetMessage(e.Ctx, m.ID)
		if got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "send_outcome_unknown" {
			t.Errorf("got %+v, want failed send_outcome_unknown", got)
		}
		if n := p.calls.Load(); n != 1 {
			t.Errorf("provider calls = %d, want 1: no second send without idempotency", n)
		}
	})
}

// crashAfterSend sends, then cancels the context the status write needs.
type crashAfterSend struct {
	delivery.Provider
	cancel func()
}

func (c *crashAfterSend) Send(ctx context.Context, m delivery.Message) (delivery.Receipt, error) {
	r, err := c.Provider.Send(ctx, m)
	c.cancel()
	return r, err
}

func (c *crashAfterSend) Idempotent() bool {
	i, ok := c.Provider.(interface{ Idempotent() bool })
	return ok && i.Idempotent()
}

func TestInboundAndKeywords(t *testing.T) {
	t.Parallel()
	e := dlvEnv(t)
	// A keyword's answer is a stored outbound message the worker sends
	// (issue #32), never the callback's answer: in returns the newest
	// message of the conversation when it is an outbound one.
	in := func(from, body, sid string) string {
		t.Helper()
		reply, err := e.App.Service.ReceiveInbound(e.Ctx, delivery.Inbound{ProviderID: sid, From: from, To: e.BrandA.PhoneNumber, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if reply != "" {
			t.Errorf("the callback answered %q: a keyword's answer must travel as a stored message only", reply)
		}
		u, err := e.A.FindUserByPhone(e.Ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, _ := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID, Limit: 1})
		if len(msgs) == 1 && msgs[0].Direction == parley.DirectionOutbound {
			return msgs[0].Body
		}
		return ""
	}
	if r := in("+14155550199", "Hi there", "SM1"); r != "" {
		t.Errorf("reply to a plain message = %q, want none", r)
	}
	u, err := e.A.FindUserByPhone(e.Ctx, "+14155550199")
	if err != nil {
		t.Fatalf("inbound from an unknown number did not create the user (D12): %v", err)
	}
	msgs, _, _ := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID})
	if len(msgs) != 1 || msgs[0].Direction != parley.DirectionInbound || msgs[0].Status != parley.StatusDelivered || msgs[0].Body != "Hi there" {
		t.Fatalf("inbound messages = %+v", msgs)
	}
	in("+14155550199", "Hi there", "SM1") // a provider retry
	if msgs, _, _ := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID}); len(msgs) != 1 {
		t.Errorf("a repeated inbound callback stored %d messages, want 1", len(msgs))
	}

	if r := in("+14155550199", "  stop ", "SM2"); !strings.Contains(r, "unsubscribed") {
		t.Errorf("STOP reply = %q", r)
	}
	if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent == nil || *got.MessagingConsent {
		t.Errorf("consent after STOP = %v, want false (D12)", got.MessagingConsent)
	}
	in("+14155550199", "Unstop", "SM3")
	if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent == nil || !*got.MessagingConsent {
		t.Errorf("consent after UNSTOP = %v, want true (D12)", got.MessagingConsent)
	}
	in("+14155550199", "STOP please", "SM4") // not a whole-message keyword
	if got, _ := e.A.GetUser(e.Ctx, u.ID); !*got.MessagingConsent {
		t.Error("a message containing STOP among other words opted the user out")
	}
	events := consentHistory(t, e, u.ID)
	if len(events) != 2 || events[0].Source != "keyword" || events[0].Detail != "STOP" || string(events[0].NewValue) != "false" ||
		events[0].MessageID == nil || string(events[1].OldValue) != "false" || string(events[1].NewValue) != "true" || events[1].Detail != "UNSTOP" {
		t.Errorf("consent history = %s; want STOP (null → false) then UNSTOP (false → true), with their messages (D18)", dumpHistory(events))
	}

	help := "Acme: text STOP to opt out, or call 555-0100."
	if _, err := e.App.Service.UpdateBrand(e.Ctx, e.BrandA.ID, store.BrandUpdate{HelpReply: &help}); err != nil {
		t.Fatal(err)
	}
	if r := in("+14155550199", "help", "SM5"); r != help {
		t.Errorf("HELP reply = %q, want the brand's text", r)
	}
	if r := in("+14155550199", "info", "SM6"); r != help {
		t.Errorf("INFO reply = %q, want the brand's text", r)
	}
	// To a number no brand owns: ignored.
	if _, err := e.App.Service.ReceiveInbound(e.Ctx, delivery.Inbound{ProviderID: "SM9", From: "+14155550199", To: "+14155559876", Body: "STOP"}); err != nil {
		t.Errorf("inbound to an unknown number: %v", err)
	}
}

func TestAPIConsentChangesAreRecorded(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	yes := true
	u := dlvUser(t, e, "+14155552671", &yes)
	e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{MessagingConsent: parley.Some(false)}})
	e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{FirstName: parley.Some("x")}})
	events := consentHistory(t, e, u.ID)
	if len(events) != 2 || events[0].Source != "api" || string(events[0].OldValue) != "null" || string(events[0].NewValue) != "true" ||
		string(events[1].OldValue) != "true" || string(events[1].NewValue) != "false" || events[1].MessageID != nil {
		t.Errorf("consent history = %s; want api null → true, true → false (D18)", dumpHistory(events))
	}
}

// consentHistory reads a user's consent history through the API (D18).
func consentHistory(t *testing.T, e *apitest.Env, userID int64) []*parley.HistoryEntry {
	t.Helper()
	entries, _, err := e.A.UserHistory(e.Ctx, userID, parley.HistoryFilter{Field: "messaging_consent"})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func dumpHistory(entries []*parley.HistoryEntry) string {
	b, _ := json.Marshal(entries)
	return string(b)
}

func TestDeliveryMetrics(t *testing.T) {
	t.Parallel()
	e := dlvEnv(t)
	m := dlvSend(t, e, dlvUser(t, e, "+14155552671", nil).ID)
	dlvWait(t, e, m.ID, parley.StatusSent)
	resp, err := http.Get(e.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`parley_messages_total{status="sent"} 1`, `parley_provider_request_seconds_count{outcome="sent",provider="sim"} 1`,
		"parley_message_time_to_sent_seconds_count 1",
		"parley_queue_jobs_waiting", "parley_queue_oldest_job_age_seconds", "parley_webhook_deliveries_pending", "parley_delivery_retries_total", "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// A provider's report can arrive before the worker records the provider's
// id; the message id it echoes still finds the message.
func TestStatusReportOvertakesSend(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	m := dlvSend(t, e, dlvUser(t, e, "+14155552671", nil).ID)
	err := e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		_, err := tx.MarkSending(e.Ctx, e.BrandA.ID, m.ID, "sim")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.App.Service.ApplyStatus(e.Ctx, delivery.StatusUpdate{ProviderID: "SIMearly", MessageID: m.ID, Status: parley.StatusDelivered}); err != nil {
		t.Fatal(err)
	}
	got, _ := e.A.GetMessage(e.Ctx, m.ID)
	if got.Status != parley.StatusDelivered || got.DateSent == nil {
		t.Errorf("early report: %+v, want delivered with date_sent", got)
	}
	if pid := dlvProviderID(t, e, m.ID); pid != "SIMearly" {
		t.Errorf("provider id = %q, want the report's", pid)
	}
	// A report naming a message whose send is not recorded yet is refused
	// for now (the provider reports again) and changes nothing.
	other := dlvSend(t, e, dlvUser(t, e, "+14155552672", nil).ID)
	err = e.App.Service.ApplyStatus(e.Ctx, delivery.StatusUpdate{ProviderID: "SIMx", MessageID: other.ID, Status: parley.StatusDelivered})
	if !errors.Is(err, delivery.ErrNotYet) {
		t.Errorf("report before the send is recorded: %v, want ErrNotYet", err)
	}
	if got, _ := e.A.GetMessage(e.Ctx, other.ID); got.Status != parley.StatusQueued {
		t.Errorf("a report for an unsent message moved it to %s", got.Status)
	}
	// A report naming a message handed to another provider is ignored.
	err = e.App.DB.WithTx(e.Ctx, func(tx *store.Tx) error {
		_, err := tx.MarkSending(e.Ctx, e.BrandA.ID, other.ID, "twilio")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.App.Service.ApplyStatus(e.Ctx, delivery.StatusUpdate{ProviderID: "SIMy", MessageID: other.ID, Status: parley.StatusDelivered}); err != nil {
		t.Errorf("report about another provider's message: %v, want it ignored", err)
	}
	if got, _ := e.A.GetMessage(e.Ctx, other.ID); got.Status != parley.StatusQueued {
		t.Errorf("a report about another provider's message moved it to %s", got.Status)
	}
}

func TestDeliveryMissingMediaFails(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := dlvUser(t, e, "+14155552671", nil)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
	f, err := e.A.UploadFile(e.Ctx, "dot.png", strings.NewReader(string(png)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), MediaItemUUIDs: parley.Some([]string{f.ID})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.App.DB.Writer().Exec("DELETE FROM files"); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Service.Deliver(e.Ctx, e.BrandA.ID, m.ID, 1, false); err != nil {
		t.Fatalf("a missing file was retried: %v", err)
	}
	if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusFailed || strOf(got.ErrorCode) != "media_unavailable" {
		t.Errorf("got %+v, want failed media_unavailable", got)
	}
}
