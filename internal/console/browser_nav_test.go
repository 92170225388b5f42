package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestBrowserNav: at 1280 px the nav is one row, with room for one more
// item ("Flows" is to come) beside a 30-letter brand name and email; the
// first Tab reaches "Skip to content", which moves past the nav; at phone
// width a Menu button opens the nav without sideways scrolling; the
// sign-in page names the product (issue #32, D19).
func TestBrowserNav(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, phone := range []bool{false, true} {
		b := newBrowser(t, e.Server.URL)
		if phone {
			b.Phone()
		}
		b.Go("/console/signin")
		if p := b.read("product", `document.querySelector('header')?.innerText`); !strings.Contains(p, "Parley") {
			t.Errorf("the sign-in page's header %q does not name Parley", p)
		}
		if title := b.read("title", `document.title`); title != "Sign in · Parley" {
			t.Errorf("sign-in title %q", title)
		}
		b.checkPage()
		b.shot("signin", phone)
		b.signIn("admin@a.example", password)
		b.Go("/console/webhooks")
		b.checkPage()
		b.shot("nav", phone)
		if !phone {
			// One row: every item's top is the first's, and the bar is no
			// taller than one item and its padding; then with one more
			// item and long names.
			oneRow := `(() => {
				const lis = [...document.querySelectorAll('.nav-wide li')];
				const top = lis[0].getBoundingClientRect().top;
				const bar = document.querySelector('header.bar').getBoundingClientRect().height;
				const out = document.querySelector('.bar button').getBoundingClientRect();
				return lis.every(l => Math.abs(l.getBoundingClientRect().top - top) < 2) && bar < 2.5 * lis[0].getBoundingClientRect().height + 24 &&
					out.height < 2 * lis[0].getBoundingClientRect().height;
			})()`
			if !b.eval(oneRow) {
				t.Error("the nav is more than one row at 1280 px")
			}
			b.eval(`(() => {
				const ul = document.querySelector('.nav-wide ul');
				const li = ul.lastElementChild.cloneNode(true);
				li.querySelector('a').textContent = 'Flows';
				ul.appendChild(li);
				document.querySelector('.brand').textContent = 'Brooklyn Coffee Roasters Co.';
				document.querySelector('.who a').textContent = 'marketing.lead@brooklyn-coffee.com';
				return true;
			})()`)
			if !b.eval(oneRow) {
				t.Error("with one more item and long names the nav is more than one row at 1280 px")
			}
			b.shot("nav-flows", phone)
		}
		// The first Tab is the skip link; following it lands in <main>.
		b.do(chromedp.KeyEvent(kb.Tab))
		if f := b.read("focus", `document.activeElement?.innerText`); f != "Skip to content" {
			t.Errorf("the first focusable element reads %q, want Skip to content", f)
		}
		b.do(chromedp.KeyEvent(kb.Enter))
		if !b.eval(`location.hash === '#content' && document.activeElement === document.querySelector('main')`) {
			t.Error("Skip to content does not move to the page's content")
		}
		if phone {
			if b.eval(`!!document.querySelector('.nav-wide').offsetParent`) {
				t.Error("at phone width the one-row nav shows")
			}
			b.do(chromedp.Click(chromedp.JSPath(`document.querySelector('.nav-menu summary')`)))
			b.checkPage()
			b.shot("nav-menu", phone)
			b.Follow("Settings")
			if h := b.H1(); h != "Settings" {
				t.Errorf("the menu's Settings: %q", h)
			}
		}
	}
}

// eval evaluates a JavaScript expression that answers true or false.
func (b *browser) eval(expr string) bool {
	b.t.Helper()
	ctx, cancel := b.step()
	defer cancel()
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
	return ok
}

// Nav follows the nav's link that reads text as a person does: at phone
// width the links are behind the Menu, which it opens first.
func (b *browser) Nav(text string) {
	b.t.Helper()
	if !b.eval(`!!document.querySelector('.nav-wide').offsetParent`) {
		b.do(chromedp.Click(chromedp.JSPath(`document.querySelector('.nav-menu summary')`)))
	}
	b.Follow(text)
}
