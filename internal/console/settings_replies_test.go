package console_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestSettingsKeywordReplies (D22, issue #32): an admin sets the answer to
// HELP on the Settings page, an empty box is the built-in text, a text
// too long is refused next to its box and changes nothing, and agents
// cannot post the form.
func TestSettingsKeywordReplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.get("/console/settings")
	if !strings.Contains(p.Body, "Answer to STOP") || !strings.Contains(p.Body, "You are unsubscribed") {
		t.Fatalf("settings: no keyword answers with the built-in texts:\n%s", p.Body)
	}
	p = w.post("/console/settings/replies", url.Values{"reply_help": {"Acme: call 555-0100."}, "reply_stop": {""}, "reply_start": {""}})
	if p.Status != 303 {
		t.Fatalf("save: %d\n%s", p.Status, p.Body)
	}
	st, err := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID)
	if err != nil || st.KeywordReplies.Help == nil || *st.KeywordReplies.Help != "Acme: call 555-0100." || st.KeywordReplies.Stop != nil {
		t.Fatalf("keyword_replies after save = %+v, %v", st.KeywordReplies, err)
	}
	p = w.post("/console/settings/replies", url.Values{"reply_help": {strings.Repeat("x", 1601)}})
	if p.Status != 422 || !strings.Contains(p.Body, "at most 1600 characters") {
		t.Errorf("a text too long: %d\n%s", p.Status, p.Body)
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID); *st.KeywordReplies.Help != "Acme: call 555-0100." {
		t.Errorf("a refused save changed the help text to %q", *st.KeywordReplies.Help)
	}
	if p := e.signedIn(t, "agent@a.example").post("/console/settings/replies", url.Values{"reply_help": {"x"}}); p.Status != 403 {
		t.Errorf("an agent saving keyword answers: %d, want 403", p.Status)
	}
}
