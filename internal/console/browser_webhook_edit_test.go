package console_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestBrowserWebhookEditDelete: in Chromium, at 1280 px and at phone
// width, an admin edits an endpoint's URL and events, rotates its secret
// (shown once, with a copy button), and deletes it after a confirmation
// that Cancel backs out of (issue #32, D11, D19).
func TestBrowserWebhookEditDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, phone := range []bool{false, true} {
		wh, err := e.App.Service.CreateWebhook(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID,
			parley.WebhookCreate{URL: parley.Some("https://a.example/hook"), EventTypes: parley.Some([]string{"*"})})
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, e.Server.URL)
		if phone {
			b.Phone()
		}
		b.signIn("admin@a.example", password)
		b.Go("/console/webhooks/" + itoa(wh.ID))
		b.checkPage()
		b.Fill("Endpoint URL", "https://crm.example.com/parley")
		b.CheckLabel("All events, present and future (else the ones checked below)")
		b.CheckLabel(parley.EventMessageDelivered)
		b.Submit("Save changes")
		b.WaitText("The endpoint was saved.")
		got, err := e.App.Service.FindWebhook(e.Ctx, e.BrandA.ID, wh.ID)
		if err != nil || got.URL != "https://crm.example.com/parley" || !slices.Equal(got.EventTypes, []string{parley.EventMessageDelivered}) {
			t.Errorf("after Save changes: %+v (%v)", got, err)
		}
		if h := b.H1(); h != "Webhook https://crm.example.com/parley" {
			t.Errorf("heading after saving: %q", h)
		}
		b.checkPage()
		b.shot("webhook-edit", phone)
		b.Submit("Rotate signing secret")
		b.WaitText("New signing secret")
		if v := b.Value("Signing secret"); !strings.HasPrefix(v, "whsec_") {
			t.Errorf("the new secret field holds %q", v)
		}
		if !b.eval(`!![...document.querySelectorAll('button')].find(x => x.innerText.trim() === 'Copy secret' && x.offsetParent !== null)`) {
			t.Error("no visible Copy secret button")
		}
		b.checkPage()
		b.shot("webhook-rotated", phone)
		b.Submit("Delete endpoint")
		if h := b.H1(); h != "Delete the endpoint https://crm.example.com/parley?" {
			t.Fatalf("Delete endpoint: %q, want the question", h)
		}
		b.checkPage()
		b.shot("webhook-delete", phone)
		b.Follow("Cancel")
		if h := b.H1(); h != "Webhook https://crm.example.com/parley" {
			t.Fatalf("after Cancel: %q", h)
		}
		b.Submit("Delete endpoint")
		b.WaitText("This cannot be undone")
		b.Submit("Delete endpoint")
		b.WaitText("The endpoint was deleted")
		if _, err := e.App.Service.FindWebhook(e.Ctx, e.BrandA.ID, wh.ID); parley.ErrorCode(err) != parley.ENotFound {
			t.Errorf("after confirming, the endpoint: %v, want not found", err)
		}
	}
}
