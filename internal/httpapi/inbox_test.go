package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/service"
)

// TestKeywordReplyStoredOnce (issue #32, D12, D22): a keyword's answer is an
// outbound message of the conversation, in GET /messages, sent through the
// provider with its real status; a carrier's redelivered callback stores
// and sends nothing more; STOP's answer goes though the contact has opted
// out; the brand's own text (keyword_replies, admin settings API) is used.
func TestKeywordReplyStoredOnce(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.AdminToken, c.SimDelay = admTok, time.Second })
	if err := e.App.Start(e.Ctx); err != nil {
		t.Fatal(err)
	}
	const from = "+14155550142"
	in := func(body, sid string) {
		t.Helper()
		if r, err := e.App.Service.ReceiveInbound(e.Ctx, delivery.Inbound{ProviderID: sid, From: from, To: e.BrandA.PhoneNumber, Body: body}); err != nil || r != "" {
			t.Fatalf("inbound %q: reply %q, %v; want the answer stored, not in the callback's answer", body, r, err)
		}
	}
	outbound := func() []*parley.Message {
		t.Helper()
		u, err := e.A.FindUserByPhone(e.Ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		msgs, _, err := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID})
		if err != nil {
			t.Fatal(err)
		}
		var out []*parley.Message
		for _, m := range msgs {
			if m.Direction == parley.DirectionOutbound {
				out = append(out, m)
			}
		}
		return out
	}
	in("STOP", "SMk1")
	in("STOP", "SMk1") // the carrier redelivers the callback
	out := outbound()
	if len(out) != 1 || out[0].Type != parley.TypeConversational {
		t.Fatalf("outbound after STOP and its redelivery = %d messages, want exactly one answer", len(out))
	}
	dlvWait(t, e, out[0].ID, parley.StatusSent) // consent is false: it goes all the same
	dlvReport(t, e)
	got := dlvWait(t, e, out[0].ID, parley.StatusDelivered) // the provider's real status
	if got.Body == "" || got.ErrorCode != nil {
		t.Errorf("STOP's answer = %+v", got)
	}

	// The brand's own HELP text, set through the admin settings API (D22).
	st, body := admDo(t, e, admTok, "POST", fmt.Sprintf("/brands/%d/settings", e.BrandA.ID),
		map[string]any{"keyword_replies": map[string]any{"help": "Acme: call 555-0100 for help.", "start": "Welcome back!\nReply STOP to opt out."}})
	if st != 200 {
		t.Fatalf("settings keyword_replies: %d %v", st, body)
	}
	kr, _ := body["keyword_replies"].(map[string]any)
	if kr["help"] != "Acme: call 555-0100 for help." || kr["start"] != "Welcome back!\nReply STOP to opt out." || kr["stop"] != nil {
		t.Errorf("keyword_replies = %v; want help and start (two lines) set, stop null (built-in)", body["keyword_replies"])
	}
	in("help", "SMk2")
	if out := outbound(); len(out) != 2 || out[0].Body != "Acme: call 555-0100 for help." {
		t.Errorf("HELP's answer = %v, want the brand's text", out)
	}
	// Bad input changes nothing.
	if st, _ := admDo(t, e, admTok, "POST", fmt.Sprintf("/brands/%d/settings", e.BrandA.ID),
		map[string]any{"keyword_replies": map[string]any{"stop": "  "}}); st != 422 {
		t.Errorf("an empty stop text: %d, want 422", st)
	}
	// null restores the built-in texts.
	if st, body := admDo(t, e, admTok, "POST", fmt.Sprintf("/brands/%d/settings", e.BrandA.ID),
		map[string]any{"keyword_replies": nil}); st != 200 || body["keyword_replies"].(map[string]any)["help"] != nil {
		t.Errorf("keyword_replies null: %d %v", st, body)
	}
}

// TestInboxConversations (issue #32): unread after a new text, opened
// marks read; resolve and reopen; a new text reopens; assignment and
// "mine"; a STOP sender is not waiting and does not reopen.
func TestInboxConversations(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	svc, brand := e.App.Service, e.BrandA.ID
	op, err := service.NewOperators(svc, []byte("k")).Add(e.Ctx, brand, "ann@example.com", parley.RoleAgent, "")
	if err != nil {
		t.Fatal(err)
	}
	in := func(from, body, sid string) int64 {
		t.Helper()
		if _, err := svc.ReceiveInbound(e.Ctx, delivery.Inbound{ProviderID: sid, From: from, To: e.BrandA.PhoneNumber, Body: body}); err != nil {
			t.Fatal(err)
		}
		u, err := e.A.FindUserByPhone(e.Ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		return u.ID
	}
	view := func(v service.InboxView) map[int64]service.Conversation {
		t.Helper()
		cs, _, err := svc.Inbox(e.Ctx, brand, v)
		if err != nil {
			t.Fatal(err)
		}
		m := map[int64]service.Conversation{}
		for _, c := range cs {
			m[c.User.ID] = c
		}
		return m
	}
	bob := in("+14155550101", "Is my order shipped?", "SMi1")
	e.Advance(time.Second)
	cy := in("+14155550102", "STOP", "SMi2")
	open := view(service.InboxView{})
	if c := open[bob]; !c.Unread || !c.Waiting || c.Preview != "Is my order shipped?" {
		t.Errorf("Bob after his text = %+v, want unread and waiting with a preview", c)
	}
	if c, ok := open[cy]; !ok || c.Waiting || !c.AutoAnswered || c.PreviewDirection != parley.DirectionOutbound {
		t.Errorf("Cy after STOP = %+v, want shown but not waiting (answered automatically)", c)
	}
	if _, err := svc.OpenConversation(e.Ctx, brand, bob); err != nil {
		t.Fatal(err)
	}
	if c := view(service.InboxView{})[bob]; c.Unread {
		t.Error("Bob unread after an operator opened the conversation")
	}
	e.Advance(time.Second)
	in("+14155550101", "Hello?", "SMi3")
	if c := view(service.InboxView{})[bob]; !c.Unread {
		t.Error("Bob not unread after a new text")
	}

	// Assignment and "mine".
	if err := svc.AssignConversation(e.Ctx, brand, bob, op.ID); err != nil {
		t.Fatal(err)
	}
	mine, unassigned := view(service.InboxView{Assignee: op.ID}), view(service.InboxView{Assignee: -1})
	if _, ok := mine[bob]; !ok || len(mine) != 1 || mine[bob].AssigneeEmail != "ann@example.com" {
		t.Errorf("mine = %v, want Bob alone", mine)
	}
	if _, ok := unassigned[bob]; ok || len(unassigned) != 1 {
		t.Errorf("unassigned = %v, want Cy alone", unassigned)
	}
	if err := svc.AssignConversation(e.Ctx, e.BrandB.ID, bob, op.ID); parley.ErrorCode(err) != parley.ENotFound {
		t.Errorf("assigning from another brand: %v, want not found", err)
	}

	// Resolve, reopen, and a new text reopens.
	if err := svc.ResolveConversation(e.Ctx, brand, bob, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := view(service.InboxView{})[bob]; ok {
		t.Error("a resolved conversation is still open")
	}
	if _, ok := view(service.InboxView{Resolved: true})[bob]; !ok {
		t.Error("a resolved conversation is not among the resolved")
	}
	e.Advance(time.Second)
	in("+14155550101", "Still there?", "SMi4")
	if _, ok := view(service.InboxView{})[bob]; !ok {
		t.Error("a new text did not reopen the resolved conversation")
	}
	if err := svc.ResolveConversation(e.Ctx, brand, bob, true); err != nil {
		t.Fatal(err)
	}
	if err := svc.ResolveConversation(e.Ctx, brand, bob, false); err != nil {
		t.Fatal(err)
	}
	if _, ok := view(service.InboxView{})[bob]; !ok {
		t.Error("reopen did not reopen")
	}
	// A keyword Parley answers does not reopen.
	if err := svc.ResolveConversation(e.Ctx, brand, cy, true); err != nil {
		t.Fatal(err)
	}
	in("+14155550102", "HELP", "SMi5")
	if _, ok := view(service.InboxView{})[cy]; ok {
		t.Error("HELP, answered automatically, reopened a resolved conversation")
	}
}
