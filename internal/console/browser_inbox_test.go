package console_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestBrowserInbox: working the inbox in Chromium at 1280 px and at phone
// width (issue #32): a new text is unread and waiting; opening it, the
// agent replies, assigns it to themself (it shows under "Mine") and
// resolves it, and it leaves the open conversations. A STOP sender is
// answered automatically, not waiting, and their reply box says they
// opted out before anyone types.
func TestBrowserInbox(t *testing.T) {
	t.Parallel()
	for _, phone := range []bool{false, true} {
		t.Run(map[bool]string{false: "1280", true: "phone"}[phone], func(t *testing.T) {
			t.Parallel()
			e := startedEnv(t)
			e.contact(t, false, "+14155550131", "Ann", "Buyer", "", ptr(true))
			for _, in := range []struct{ from, body string }{{"+14155550132", "STOP"}, {"+14155550131", "Where is my order?"}} {
				if _, err := e.A.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some(in.from), Body: parley.Some(in.body)}); err != nil {
					t.Fatal(err)
				}
			}
			b := newBrowser(t, e.Server.URL)
			if phone {
				b.Phone()
			}
			b.signIn("agent@a.example", password)
			b.Go("/console/inbox")
			txt := b.Text()
			if !strings.Contains(txt, "Ann Buyer") || !strings.Contains(txt, "Where is my order?") || strings.Count(txt, "Waiting for an answer") != 1 ||
				!strings.Contains(txt, "Answered automatically") {
				t.Fatalf("inbox: want Ann waiting with a preview, the STOP sender answered automatically:\n%s", txt)
			}
			b.checkPage()
			b.shot("inbox", phone)

			b.Submit("+14155550132") // the STOP sender has no name
			b.WaitText("has opted out")
			b.WaitText("Automatic answer to STOP")
			b.checkPage()
			b.shot("opted-out", phone)

			b.Go("/console/inbox")
			b.Submit("Ann Buyer")
			if h := b.H1(); h != "Ann Buyer" {
				t.Fatalf("conversation page: %q", h)
			}
			b.Fill("Reply", "It ships today.")
			b.Submit("Send reply")
			b.WaitText("It ships today.")
			b.Submit("Assign to me")
			b.WaitText("Assigned to agent@a.example")
			b.checkPage()
			b.shot("conversation", phone)
			b.Go("/console/inbox")
			b.Submit("Mine")
			if txt := b.Text(); !strings.Contains(txt, "Ann Buyer") || strings.Contains(txt, "+14155550132") {
				t.Fatalf("mine: want Ann alone:\n%s", txt)
			}
			b.Submit("Ann Buyer")
			b.Submit("Resolve")
			if h := b.H1(); h != "Inbox" {
				t.Fatalf("after resolving: %q", h)
			}
			if txt := b.Text(); strings.Contains(txt, "Ann Buyer") {
				t.Errorf("a resolved conversation is still among the open ones:\n%s", txt)
			}
			b.Submit("Resolved")
			b.WaitText("Ann Buyer")
			b.checkPage()
		})
	}
}
