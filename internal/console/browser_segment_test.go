package console_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// ChooseText picks the option that reads text in the select labelled
// label, as a user's choice does (the change event fires).
func (b *browser) ChooseText(label, text string) {
	b.t.Helper()
	sel := labelled(label)
	b.do(chromedp.WaitVisible(sel), chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(() => { const s = %s; s.value = [...s.options].find(o => o.text === %s).value; s.dispatchEvent(new Event('change', {bubbles: true})); })()`,
		sel, js(text))))
}

// TestBrowserSegmentBuilder: a marketer builds a segment in Chromium in
// plain words (issue #32, D14): a state picked by name, "is one of" two
// states, yes from a menu, an enum value from a menu, two groups; the
// live count follows without a button; the saved criteria equal the
// API's for the same segment; the list shows it as a sentence with its
// count. At 1280 px and at phone width.
func TestBrowserSegmentBuilder(t *testing.T) {
	t.Parallel()
	for _, phone := range []bool{false, true} {
		name := "desktop"
		if phone {
			name = "phone"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.segmentPeople(t)
			b := newBrowser(t, e.Server.URL)
			if phone {
				b.Phone()
			}
			b.signIn("admin@a.example", password)
			b.Go("/console/segments")
			b.Submit("New segment")
			b.checkPage()
			b.Fill("Name", "East or gold")
			b.ChooseText("Condition 1: field", "State")
			b.ChooseText("Condition 1: condition", "is one of")
			b.CheckLabel("New York (NY)")
			b.CheckLabel("New Jersey (NJ)")
			b.Submit("Add a condition to group 1")
			b.ChooseText("Condition 2: field", "Opted in")
			b.ChooseText("Condition 2: value", "yes")
			b.WaitText("2 matching contacts now")
			b.Submit("Add another group (or)")
			b.ChooseText("Condition 3: field", "Loyalty Tier")
			b.ChooseText("Condition 3: value", "Gold")
			b.Submit("Add a condition to group 2")
			b.ChooseText("Condition 4: field", "State")
			b.ChooseText("Condition 4: value", "California (CA)")
			b.WaitText("3 matching contacts now")
			b.checkPage()
			b.shot("segment-builder", phone)
			b.Submit("Save segment")
			if h := b.H1(); h != "Segment East or gold" {
				t.Fatalf("after save: %q\n%s", h, b.Text())
			}
			b.WaitText("Segment saved.")
			m := regexp.MustCompile(`/console/segments/(\d+)`).FindStringSubmatch(b.Location())
			if m == nil {
				t.Fatalf("location %q", b.Location())
			}
			id, _ := strconv.ParseInt(m[1], 10, 64)
			e.sameAsAPI(t, id)
			b.Go("/console/segments")
			b.WaitText("(State is one of New Jersey or New York and Opted in is yes) or (Loyalty Tier is Gold and State is California)")
			b.WaitText("counted ")
			b.checkPage()
			b.shot("segments", phone)
		})
	}
}
