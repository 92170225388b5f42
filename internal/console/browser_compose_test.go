package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley"
)

// TestBrowserCampaignCompose (issue #32, D21), at 1280 px and at phone
// width: a braces warning as the message is typed; a date typed while
// "Send now" is chosen chooses Schedule; the review shows the consenting
// recipients, the segments of the message rendered for a sample contact,
// the total and when it goes in the brand's zone; a test send goes to the
// number typed and not into the campaign; the campaign is scheduled,
// edited through the same review, and duplicated into a filled-in form.
func TestBrowserCampaignCompose(t *testing.T) {
	t.Parallel()
	for _, phone := range []bool{false, true} {
		t.Run(map[bool]string{false: "Desktop", true: "Phone"}[phone], func(t *testing.T) {
			t.Parallel()
			composeFlow(t, phone)
		})
	}
}

func composeFlow(t *testing.T, phone bool) {
	e := newEnv(t)
	e.SetNow(time.Date(2026, 6, 9, 17, 0, 0, 0, time.UTC))
	e.contact(t, false, "+14155550101", "Ana", "Ruiz", "", ptr(true))
	e.contact(t, false, "+14155550102", "", "", "", ptr(true))
	e.contact(t, false, "+14155550103", "Cy", "", "", ptr(false))
	seg := e.mustSegment(t, false, "Everyone", nil)
	st, err := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(st.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	b := newBrowser(t, e.Server.URL)
	if phone {
		b.Phone()
	}
	b.signIn("admin@a.example", password)
	b.Go("/console/campaigns/new")
	b.Fill("Name", "Sale")
	b.Choose("Segment", itoa(seg.ID))
	b.Fill("Message", "Hi {first_name}, sale today")
	b.WaitText("These braces are not placeholders and will be sent as written: {first_name}")
	b.Fill("Message", `Hi {{first_name | "there"}}, sale today`)
	at := e.Now().Add(26 * time.Hour).In(loc)
	b.SetValue("Send at ("+loc.String()+")", at.Format("2006-01-02T15:04"))
	ctx, cancel := b.step()
	later, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('when-later').checked`))
	cancel()
	if err != nil || !later {
		t.Errorf("a typed date did not choose Schedule: %v %v", later, err)
	}
	b.checkPage()
	b.Submit("Review campaign")
	when := at.Format("2006-01-02 15:04 MST")
	for _, want := range []string{"2 recipients", "of 3 in Everyone", "1 SMS segment per message", "2 segments in all",
		when, "Preview for Ana Ruiz", "Hi Ana, sale today"} {
		b.WaitText(want)
	}
	b.checkPage()

	b.Fill("Phone number for the test", "+14155550199")
	b.Submit("Send test")
	b.WaitText("Test sent to +14155550199: “Hi Ana, sale today”")
	tested := e.mustFindUser(t, "+14155550199")
	ms, _, err := e.App.Service.ListMessages(e.Ctx, e.BrandA.ID, parley.MessageFilter{UserID: tested.ID})
	if err != nil || len(ms) != 1 || ms[0].Body != "Hi Ana, sale today" || ms[0].CampaignID != nil {
		t.Fatalf("the test message: %+v %v", ms, err)
	}
	b.checkPage()
	b.Submit("Schedule for " + when)
	if h := b.H1(); h != "Campaign Sale" {
		t.Fatalf("after schedule: %q\n%s", h, b.Text())
	}
	camps, _, err := e.App.Service.ListCampaigns(e.Ctx, e.BrandA.ID, parley.CampaignFilter{})
	if err != nil || len(camps) != 1 || camps[0].Status != parley.CampaignScheduled || !camps[0].SendAt.Equal(at.Truncate(time.Minute)) ||
		camps[0].Stats != (parley.CampaignStats{}) {
		t.Fatalf("scheduled: %+v %v", camps, err)
	}

	// Edit until it starts: the same form, filled in, and the review.
	b.Submit("Edit")
	if h := b.H1(); h != "Edit campaign Sale" {
		t.Fatalf("edit: %q", h)
	}
	b.checkPage()
	b.Fill("Message", `Hi {{first_name | "there"}}, sale now on`)
	b.Submit("Review campaign")
	b.WaitText("Hi Ana, sale now on")
	b.Submit("Save changes")
	if h := b.H1(); h != "Campaign Sale" {
		t.Fatalf("after edit: %q\n%s", h, b.Text())
	}
	b.WaitText(`Hi {{first_name | "there"}}, sale now on`)
	b.checkPage()

	// Duplicate: the new-campaign form, filled in.
	b.Submit("Duplicate")
	if h := b.H1(); h != "New campaign" {
		t.Fatalf("duplicate: %q", h)
	}
	ctx, cancel = b.step()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('name').value + '|' + document.getElementById('body').value + '|' + document.getElementById('segment_id').value`))
	cancel()
	if want := fmt.Sprintf(`Copy of Sale|Hi {{first_name | "there"}}, sale now on|%d`, seg.ID); err != nil || got != want {
		t.Errorf("the duplicate's form: %q %v, want %q", got, err, want)
	}
	if !strings.Contains(b.Text(), "Send at") {
		t.Errorf("the duplicate's form has no Send at:\n%s", b.Text())
	}
	b.checkPage()
}
