package console_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestBrowserContacts (issue #32): at 1280 px and at phone width, an
// operator adds a contact with a national number, is told at once what
// is wrong with an edit, saves it, filters and pages the list, and deletes
// the contact after a confirmation that names them.
func TestBrowserContacts(t *testing.T) {
	t.Parallel()
	for _, width := range []string{"desktop", "phone"} {
		t.Run(width, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			for i := range 52 { // more than a page
				in := parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555%04d", 3000+i))}
				in.MessagingConsent = parley.Some(i%2 == 0)
				in.FirstName = parley.Some(fmt.Sprintf("Member%02d", i))
				e.MustCreateUser(t, e.A, in)
			}
			b := newBrowser(t, e.Server.URL)
			if width == "phone" {
				b.Phone()
			}
			b.signIn("admin@a.example", password)
			b.Go("/console/contacts")
			b.WaitText("52 contacts in all")
			b.checkPage()
			b.shot("contacts-list", width == "phone")

			// Add, with the number as the marketer dials it.
			b.Follow("Add a contact")
			b.Fill("Phone number", "(415) 555-0177")
			b.Fill("First name", "Lin")
			b.Fill("Last name", "Okafor")
			b.Choose("Consent", "in")
			b.Fill("Reason for a consent change", "signed up in the shop")
			b.checkPage()
			b.Submit("Add contact")
			if h := b.H1(); h != "Lin Okafor" {
				t.Fatalf("after adding: %q\n%s", h, b.Text())
			}
			b.checkPage()
			b.shot("contact", width == "phone")

			// Edit: a bad email and ZIP are refused together, then saved.
			b.Follow("Edit contact")
			b.Fill("Email", "lin at example")
			b.Fill("ZIP code", "1234")
			b.Submit("Save changes")
			b.WaitText("Nothing was saved: fix the 2 fields marked below.")
			if txt := b.Text(); !strings.Contains(txt, "Enter one email address") || !strings.Contains(txt, "Enter a US ZIP code") {
				t.Fatalf("refusal:\n%s", txt)
			}
			b.checkPage()
			b.shot("contact-edit-refused", width == "phone")
			b.Fill("Email", "lin@example.com")
			b.Fill("ZIP code", "10001")
			b.Submit("Save changes")
			if h := b.H1(); h != "Lin Okafor" {
				t.Fatalf("after saving: %q\n%s", h, b.Text())
			}
			b.WaitText("lin@example.com")
			b.WaitText("New York")

			// Filter, then page.
			b.Go("/console/contacts")
			b.Choose("Consent", "in")
			b.Choose("Sort", "name")
			b.Submit("Apply")
			b.WaitText("27 contacts opted in")
			b.checkPage()
			if txt := b.Text(); !strings.Contains(txt, "Lin Okafor") || strings.Contains(txt, "Member01") {
				t.Fatalf("opted in by name:\n%s", txt)
			}
			b.Go("/console/contacts?sort=oldest")
			b.WaitText("Member00")
			b.Follow("Next →")
			b.WaitText("Lin Okafor")
			if txt := b.Text(); strings.Contains(txt, "Member00") || !strings.Contains(txt, "Member51") {
				t.Fatalf("second page:\n%s", txt)
			}
			b.Follow("← Previous")
			b.WaitText("Member00")

			// Delete, after a confirmation that names the contact.
			u := e.mustFindUser(t, "+14155550177")
			b.Go(fmt.Sprintf("/console/contacts/%d", u.ID))
			b.Follow("Delete contact")
			if h := b.H1(); h != "Delete Lin Okafor?" {
				t.Fatalf("confirmation: %q", h)
			}
			b.checkPage()
			b.Submit("Delete Lin Okafor")
			b.WaitText("The contact was deleted.")
			b.WaitText("52 contacts in all")
		})
	}
}
