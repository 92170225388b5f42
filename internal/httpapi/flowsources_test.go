package httpapi_test

import (
	"slices"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestFlowTriggersFromEverySource (D21): a flow triggered when consent
// becomes true enters a contact whatever made it true — the API (on
// create and on update), a keyword (START), an import, an operator in the
// console — and a flow triggered on creation enters a contact however it
// was created: the API, an inbound text, an import, the console. D20's
// extraction writes custom fields only, never consent (docs/api.md).
func TestFlowTriggersFromEverySource(t *testing.T) {
	e := apitest.New(t)
	impStart(t, e)
	subscribed := mustFlow(t, e, "Welcome", `{"type":"subscribed"}`, `[{"type":"wait","seconds":3600}]`)
	created := mustFlow(t, e, "Hello", `{"type":"created"}`, `[{"type":"wait","seconds":3600}]`)
	console := parley.Origin{Source: parley.SourceConsole, Detail: "ops@example.com"}
	brand := e.BrandA.ID

	byPhone := func(phone string) *parley.User {
		t.Helper()
		u, err := e.A.FindUserByPhone(e.Ctx, phone)
		if err != nil {
			t.Fatalf("%s: %v", phone, err)
		}
		return u
	}
	both, made := []*parley.Flow{subscribed, created}, []*parley.Flow{created}
	for _, c := range []struct {
		source string
		make   func() *parley.User
		enters []*parley.Flow // one run of each of these; none of the other
	}{
		{"api create, consent true", func() *parley.User { return consenting(t, e, "+14155558001", yes) }, both},
		{"api create, no consent", func() *parley.User { return consenting(t, e, "+14155558002", nil) }, made},
		{"api create, consent false", func() *parley.User { return consenting(t, e, "+14155558010", no) }, made},
		{"import, consent false", func() *parley.User {
			impRun(t, e, e.A, "phone_number,messaging_consent\n+14155558011,false\n", nil)
			return byPhone("+14155558011")
		}, made},
		{"api update", func() *parley.User {
			u := consenting(t, e, "+14155558003", no)
			u, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}, both}, // created first by the API: one run of each
		{"keyword START", func() *parley.User {
			u := consenting(t, e, "+14155558004", no)
			inbound(t, e, u.PhoneNumber, "START")
			return u
		}, both}, // created first by the API: one run of each
		{"inbound text from a new number", func() *parley.User {
			inbound(t, e, "+14155558005", "hello?")
			return byPhone("+14155558005")
		}, made},
		{"import", func() *parley.User {
			impRun(t, e, e.A, "phone_number,messaging_consent\n+14155558006,true\n", nil)
			return byPhone("+14155558006")
		}, both},
		{"import update", func() *parley.User {
			u := consenting(t, e, "+14155558007", nil)
			impRun(t, e, e.A, "phone_number,messaging_consent\n+14155558007,true\n", map[string]string{"on_duplicate": "update"})
			return u
		}, both}, // created first by the API: one run of each
		{"console create", func() *parley.User {
			u, err := e.App.Service.CreateUser(e.Ctx, console, brand, parley.UserCreate{PhoneNumber: parley.Some("+14155558008"),
				UserFields: parley.UserFields{MessagingConsent: parley.Some(true)}})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}, both},
		{"console edit", func() *parley.User {
			u := consenting(t, e, "+14155558009", nil)
			u, err := e.App.Service.UpdateUser(e.Ctx, console, brand, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
				MessagingConsent: parley.Some(true)}})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}, both}, // created first by the API: one run of each
	} {
		u := c.make()
		for _, f := range []*parley.Flow{subscribed, created} {
			runs, _, err := e.A.ListRuns(e.Ctx, f.ID, parley.RunFilter{UserID: u.ID})
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if slices.Contains(c.enters, f) {
				want = 1
			}
			if len(runs) != want {
				t.Errorf("%s: %d runs of %q, want %d", c.source, len(runs), f.Name, want)
			}
			// Created without consent is no opt-out: the run goes on.
			for _, r := range runs {
				if r.Status != parley.RunActive {
					t.Errorf("%s: run of %q %s (%v), want active", c.source, f.Name, r.Status, r.ExitReason)
				}
			}
		}
	}
}
