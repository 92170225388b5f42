package console_test

import (
	"strings"
	"testing"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// TestBrowserOperatorLink: in Chromium, at 1280 px and at phone width, an
// admin adds an operator without a password: the one-time link is at the
// top of the page, selectable, with a Copy link button that copies it;
// "Send a new link" shows a fresh one; Remove asks first, naming the
// operator, and Cancel keeps them (issue #32, D19).
func TestBrowserOperatorLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, phone := range []bool{false, true} {
		b := newBrowser(t, e.Server.URL)
		if phone {
			b.Phone()
		}
		email := map[bool]string{false: "desk@a.example", true: "mobile@a.example"}[phone]
		b.signIn("admin@a.example", password)
		b.Go("/console/settings")
		b.Fill("Operator email", email)
		b.Submit("Add operator")
		b.WaitText("Sign-in link for " + email)
		first := b.Value("Sign-in link")
		if !strings.Contains(first, "/console/link?token=") {
			t.Fatalf("the link field holds %q", first)
		}
		b.checkPage()
		b.shot("operator-link", phone)
		// The link is text to select by hand, or the button copies it.
		b.do(chromedp.Click(button("Copy link")))
		b.WaitText("opied") // "Copied." or, where the clipboard is refused, "Selected: press Ctrl+C…"
		sel := b.read("selection", `(() => { const f = document.getElementById('signin-link'); return f.value.substring(f.selectionStart, f.selectionEnd); })()`)
		if sel != first && !strings.Contains(b.Text(), "Copied.") {
			t.Errorf("Copy link neither copied nor selected the link (selected %q)", sel)
		}
		b.SubmitIn(email, "Send a new link")
		b.WaitText("their earlier links no longer work")
		if again := b.Value("Sign-in link"); again == first || !strings.Contains(again, "/console/link?token=") {
			t.Errorf("the new link %q is the old one or no link", again)
		}
		b.checkPage()
		b.SubmitIn(email, "Remove")
		if h := b.H1(); h != "Remove "+email+"?" {
			t.Fatalf("Remove: %q, want the question naming them", h)
		}
		b.checkPage()
		b.shot("operator-remove", phone)
		b.Follow("Cancel")
		if txt := b.Text(); !strings.Contains(txt, email) {
			t.Fatalf("after Cancel the operator is gone:\n%s", txt)
		}
		b.SubmitIn(email, "Remove")
		b.WaitText("will be signed out at once")
		b.Submit("Remove " + email)
		b.WaitText("Operator removed")
		if strings.Contains(b.Text(), email) {
			t.Errorf("the removed operator is still listed")
		}
	}
}

// rowButton selects the button that reads text in the table row that
// names who.
func rowButton(who, text string) chromedp.JSPath {
	return chromedp.JSPath(`[...[...document.querySelectorAll('tr')].find(r => r.innerText.includes(` + js(who) +
		`))?.querySelectorAll('button') ?? []].find(b => b.innerText.trim() === ` + js(text) + `)`)
}

// SubmitIn presses the button that reads text in the row that names who,
// and waits for the page it loads.
func (b *browser) SubmitIn(who, text string) {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil, chromedp.Click(rowButton(who, text)))); err != nil {
		b.t.Fatalf("browser: press %q in the row of %s: %v", text, who, err)
	}
}
