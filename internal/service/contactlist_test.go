package service_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/service"
)

// listContact is what the test knows of a contact it made.
type listContact struct {
	id          int64
	first, last string
	state       string
	consent     *bool
	tier        string
}

// makeListContacts makes brand A's contacts for the list tests: names,
// some nameless; states NY, CA, none; consent in, out, none; a Tier.
func makeListContacts(t *testing.T, e *apitest.Env) []listContact {
	t.Helper()
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Tier", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"Gold", "Silver"}})
	firsts := []string{"Ann", "bob", "Cara", "", "Dan", "ann", "Eve", "", "Finn", "Gus", "Hal", "Ida", "", "Jo"}
	lasts := []string{"Zeta", "Young", "", "Xu", "Webb", "Abel", "Vance", "", "Ulm", "Toth", "Sato", "Ruiz", "Quinn", "Price"}
	zips := []string{"10001", "94105", ""}
	consents := []*bool{ptrTo(true), ptrTo(false), nil}
	tiers := []string{"Gold", "", "Silver", "Gold"}
	var out []listContact
	for i := range 28 {
		c := listContact{first: firsts[i%len(firsts)], last: lasts[(i*3)%len(lasts)], consent: consents[i%3], tier: tiers[i%4]}
		in := parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555%04d", 100+i))}
		if c.first != "" {
			in.FirstName = parley.Some(c.first)
		}
		if c.last != "" {
			in.LastName = parley.Some(c.last)
		}
		if z := zips[i%len(zips)]; z != "" {
			in.PostalCode = parley.Some(z)
			c.state = map[string]string{"10001": "NY", "94105": "CA"}[z]
		}
		if c.consent != nil {
			in.MessagingConsent = parley.Some(*c.consent)
		}
		if c.tier != "" {
			in.CustomData = parley.Some(json.RawMessage(`{"tier":"` + c.tier + `"}`))
		}
		u, err := e.App.Service.CreateUser(e.Ctx, parley.Origin{}, e.BrandA.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		c.id = u.ID
		out = append(out, c)
	}
	// Brand B's contact is never listed for A.
	if _, err := e.App.Service.CreateUser(e.Ctx, parley.Origin{}, e.BrandB.ID, parley.UserCreate{PhoneNumber: parley.Some("+14155550999")}); err != nil {
		t.Fatal(err)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// nameKey is the name order's key: first and last name, any case;
// nameless contacts last.
func nameKey(c listContact) string {
	f, l := strings.ToLower(c.first), strings.ToLower(c.last)
	switch {
	case f != "" && l != "":
		return f + " " + l
	case f != "":
		return f
	case l != "":
		return l
	}
	return "\U0010FFFF"
}

// TestContactListPaging (issue #32): for each filter and sort, walking the
// contacts list forward with Next and back with Prev gives exactly the
// contacts the filter selects, in the sort's order, with no duplicates or
// gaps, also when a filter no index serves looks through a window of the
// list at a time (a window smaller than a page here).
func TestContactListPaging(t *testing.T) {
	defer service.SetContactWindow(5)()
	e := apitest.New(t)
	all := makeListContacts(t, e)
	consentIs := func(want string) func(listContact) bool {
		return func(c listContact) bool {
			switch want {
			case parley.ConsentIn:
				return c.consent != nil && *c.consent
			case parley.ConsentOut:
				return c.consent != nil && !*c.consent
			}
			return c.consent == nil
		}
	}
	seg, err := e.App.Service.CreateSegment(e.Ctx, parley.Origin{}, e.BrandA.ID, &parley.Segment{Name: "Californians",
		Type: parley.SegmentStandard, Criteria: parley.Criteria{{
			Attribute:    parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "state_code", FieldType: parley.CustomString},
			OperatorType: parley.OpEquals, StrFieldValue: ptrTo("CA")}}})
	if err != nil {
		t.Fatal(err)
	}
	filters := []struct {
		name string
		f    parley.ContactFilter
		keep func(listContact) bool
	}{
		{"all", parley.ContactFilter{}, func(listContact) bool { return true }},
		{"opted in", parley.ContactFilter{Consent: parley.ConsentIn}, consentIs(parley.ConsentIn)},
		{"opted out", parley.ContactFilter{Consent: parley.ConsentOut}, consentIs(parley.ConsentOut)},
		{"not given", parley.ContactFilter{Consent: parley.ConsentNone}, consentIs(parley.ConsentNone)},
		{"NY", parley.ContactFilter{StateCode: "ny"}, func(c listContact) bool { return c.state == "NY" }},
		{"NY opted in", parley.ContactFilter{StateCode: "NY", Consent: parley.ConsentIn}, func(c listContact) bool { return c.state == "NY" && consentIs(parley.ConsentIn)(c) }},
		{"segment", parley.ContactFilter{SegmentID: seg.ID}, func(c listContact) bool { return c.state == "CA" }},
		{"tier gold, any case", parley.ContactFilter{Field: "tier", Value: "gold"}, func(c listContact) bool { return c.tier == "Gold" }},
		{"tier set", parley.ContactFilter{Field: "tier"}, func(c listContact) bool { return c.tier != "" }},
		{"segment, tier, opted out", parley.ContactFilter{SegmentID: seg.ID, Field: "tier", Value: "Silver", Consent: parley.ConsentOut},
			func(c listContact) bool {
				return c.state == "CA" && c.tier == "Silver" && consentIs(parley.ConsentOut)(c)
			}},
	}
	sorts := map[string]func(a, b listContact) int{
		parley.SortNewest: func(a, b listContact) int { return cmp.Compare(b.id, a.id) },
		parley.SortOldest: func(a, b listContact) int { return cmp.Compare(a.id, b.id) },
		parley.SortName: func(a, b listContact) int {
			return cmp.Or(strings.Compare(nameKey(a), nameKey(b)), cmp.Compare(a.id, b.id))
		},
		parley.SortActivity: func(a, b listContact) int { return cmp.Compare(b.id, a.id) }, // no texts yet: newest first
	}
	for _, f := range filters {
		for sort, order := range sorts {
			var want []int64
			kept := slices.Clone(all)
			kept = slices.DeleteFunc(kept, func(c listContact) bool { return !f.keep(c) })
			slices.SortFunc(kept, order)
			for _, c := range kept {
				want = append(want, c.id)
			}
			var got []int64
			var last string
			cursor := ""
			for range 100 {
				p, err := e.App.Service.ListContacts(e.Ctx, e.BrandA.ID, service.ContactListQuery{Filter: f.f, Sort: sort, Cursor: cursor, Limit: 4})
				if err != nil {
					t.Fatalf("%s by %s: %v", f.name, sort, err)
				}
				for _, u := range p.Users {
					got = append(got, u.ID)
				}
				if p.Next == "" {
					break
				}
				last, cursor = p.Next, p.Next
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s by %s forward: %v, want %v", f.name, sort, got, want)
				continue
			}
			// Back from the end with Prev: the same contacts.
			if last == "" {
				continue
			}
			var back []int64
			cursor = last
			p, _ := e.App.Service.ListContacts(e.Ctx, e.BrandA.ID, service.ContactListQuery{Filter: f.f, Sort: sort, Cursor: cursor, Limit: 4})
			cursor = p.Prev
			for cursor != "" {
				p, err := e.App.Service.ListContacts(e.Ctx, e.BrandA.ID, service.ContactListQuery{Filter: f.f, Sort: sort, Cursor: cursor, Limit: 4})
				if err != nil {
					t.Fatal(err)
				}
				ids := make([]int64, 0, len(p.Users))
				for _, u := range p.Users {
					ids = append(ids, u.ID)
				}
				back = append(ids, back...)
				cursor = p.Prev
			}
			var lastPage []int64
			for _, u := range p.Users {
				lastPage = append(lastPage, u.ID)
			}
			if full := append(back, lastPage...); !slices.Equal(full, want) {
				t.Errorf("%s by %s backward: %v, want %v", f.name, sort, full, want)
			}
		}
	}
}

// TestContactListRefusals: a cursor the list did not write, an unknown
// sort or consent, a value of the wrong type, an unknown field and
// another brand's segment are refused in words, not a server error.
func TestContactListRefusals(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Visits", CustomDataType: parley.CustomInteger})
	segB, err := e.App.Service.CreateSegment(e.Ctx, parley.Origin{}, e.BrandB.ID, &parley.Segment{Name: "B's", Type: parley.SegmentStandard})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    service.ContactListQuery
		code string
	}{
		{service.ContactListQuery{Cursor: "nope"}, parley.EValidation},
		{service.ContactListQuery{Sort: "shoe size"}, parley.EValidation},
		{service.ContactListQuery{Filter: parley.ContactFilter{Consent: "maybe"}}, parley.EValidation},
		{service.ContactListQuery{Filter: parley.ContactFilter{Field: "visits", Value: "many"}}, parley.EValidation},
		{service.ContactListQuery{Filter: parley.ContactFilter{Field: "shoe_size", Value: "9"}}, parley.EValidation},
		{service.ContactListQuery{Filter: parley.ContactFilter{SegmentID: segB.ID}}, parley.ESegmentNotFound},
	} {
		c.q.Limit = 10
		if _, err := e.App.Service.ListContacts(e.Ctx, e.BrandA.ID, c.q); parley.ErrorCode(err) != c.code {
			t.Errorf("%+v: %v, want %s", c.q, err, c.code)
		}
	}
}
