package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley"
)

// TestBrowserChooseBrand: in Chromium, an operator of two brands with one
// password signs in, is asked "Choose a brand", picks one by its label and
// lands in that brand's console (D19, issue #31 item 10).
func TestBrowserChooseBrand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addOperator(t, e.BrandB.ID, "admin@a.example", parley.RoleAdmin)
	b := newBrowser(t, e.Server.URL)
	b.signIn("admin@a.example", password)
	if h := b.H1(); h != "Choose a brand" {
		t.Fatalf("after sign-in with two brands: %q, want Choose a brand\n%s", h, b.Text())
	}
	if txt := b.Text(); !strings.Contains(txt, "Which brand do you want to work on?") {
		t.Errorf("the page does not say what to do:\n%s", txt)
	}
	b.checkPage()
	b.do(chromedp.Click(labelled("Brand B")))
	b.Submit("Continue")
	if h := b.H1(); h != "Dashboard" {
		t.Fatalf("after choosing Brand B: %q, want Dashboard\n%s", h, b.Text())
	}
	if txt := b.read("brand", `document.querySelector('.brand')?.innerText`); txt != "Brand B" {
		t.Errorf("the console is %q's, want Brand B's", txt)
	}
}
