package console_test

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley"
)

// TestBrowserFlowWelcome: an admin who never read the API makes a
// "Welcome" flow in Chromium: the editor starts with a welcome message,
// a wait and a second message are added with buttons, a keyword Parley
// answers itself is refused next to its field and nothing is saved; once
// saved and on, a contact who opts in gets the first message (D21). The
// editor checks the flow as it is typed, and shows the messages filled
// in for a sample contact, without saving (issue #33). At
// desktop and phone width.
func TestBrowserFlowWelcome(t *testing.T) {
	t.Parallel()
	for _, phone := range []bool{false, true} {
		e := newEnv(t)
		b := newBrowser(t, e.Server.URL)
		if phone {
			b.Phone()
		}
		b.signIn("admin@a.example", password)
		b.Go("/console/flows")
		b.checkPage()
		b.Follow("New flow")
		if h := b.H1(); h != "New flow" {
			t.Fatalf("editor: %q", h)
		}
		b.Submit("Add a wait")
		b.Fill("Step 2: wait for", "2")
		b.Submit("Add a message")
		// The editor checks as the marketer types, before any save.
		b.Fill("Step 3 message", "Still there, {{frist_name}}?")
		b.WaitText("Before you can save, fix this:")
		b.WaitText("Step 3 message: ")
		b.shot("flow-editor-check", phone)
		b.Fill("Step 3 message", "Still there, {{first_name | \"friend\"}}?")
		b.WaitText("Ready to save: nothing to fix.")
		if n := e.Count(t, "flows"); n != 0 {
			t.Fatalf("checking the flow stored it: %d", n)
		}
		b.checkPage()
		b.Choose("When", "keyword")
		b.Fill(`Keyword (for "texts a keyword")`, "stop")
		b.CheckLabel("Turn the flow on: contacts start entering when you save")
		b.Submit("Save flow")
		b.WaitText("STOP is a keyword Parley answers itself")
		if n := e.Count(t, "flows"); n != 0 {
			t.Fatalf("a refused flow was stored: %d", n)
		}
		b.Choose("When", "subscribed")
		b.Submit("Save flow")
		b.WaitText("Saved.")
		b.checkPage()
		b.shot("flow-editor", phone)
		flows, _, err := e.A.ListFlows(e.Ctx, parley.FlowFilter{})
		if err != nil || len(flows) != 1 || !flows[0].Active || len(flows[0].Steps) != 3 || flows[0].Steps[1].Seconds != 2*86400 {
			t.Fatalf("saved flow: %+v, %v", flows, err)
		}
		u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155550199"),
			UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
		if _, err := e.App.Service.RunDueFlowSteps(e.Ctx); err != nil {
			t.Fatal(err)
		}
		msgs, _, _ := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID})
		if len(msgs) != 1 || msgs[0].Body != "Thanks for joining! Reply STOP to opt out." {
			t.Fatalf("the contact who opted in got %+v", msgs)
		}
		b.Go("/console/flows")
		b.WaitText("When a contact opts in")
		b.shot("flows", phone)
		b.Follow("Welcome")
		b.WaitText("For +14155550199 it reads: “Still there, friend?”")
		b.Go("/console/flows")
		b.Follow("1")
		b.WaitText("In the flow")
		b.checkPage()
		// The contact's page lists the flows it is in (D21).
		b.Go(fmt.Sprintf("/console/contacts/%d", u.ID))
		b.WaitText("Flows")
		b.WaitText("In the flow")
		b.shot("contact-flows", phone)
	}
}
