package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// segmentPeople gives brand A an enum field "Loyalty Tier" (Gold, Silver)
// and five contacts in New York, New Jersey and California; the segment
// of segmentWant matches three of them.
func (e *env) segmentPeople(t testing.TB) {
	t.Helper()
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Loyalty Tier", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"Gold", "Silver"}})
	for _, p := range []struct {
		phone, zip, tier string
		consent          bool
	}{
		{"+14155550201", "11201", "Gold", true},   // Brooklyn, NY: group 1
		{"+14155550202", "07302", "Silver", true}, // Jersey City, NJ: group 1
		{"+14155550203", "11201", "Gold", false},  // NY, not opted in: none
		{"+14155550204", "90210", "Gold", true},   // CA, Gold: group 2
		{"+14155550205", "94103", "Silver", true}, // CA, Silver: none
	} {
		e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(p.phone), UserFields: parley.UserFields{
			PostalCode: parley.Some(p.zip), MessagingConsent: parley.Some(p.consent),
			CustomData: parley.Some(json.RawMessage(`{"loyalty_tier":"` + p.tier + `"}`))}})
	}
}

// segmentWant is the segment "State is one of New Jersey or New York and
// Opted in is yes, or Loyalty Tier is Gold and State is California" as a
// client of the API POSTs it (D14: no IN, so one AND group per state).
const segmentWant = `[
 {"attribute":{"dimension_type":1,"field_name":"state_code","field_type":3},"operator_type":1,"and_group_num":0,"str_field_value":"NJ"},
 {"attribute":{"dimension_type":1,"field_name":"messaging_consent","field_type":5},"operator_type":1,"and_group_num":0,"bool_field_value":true},
 {"attribute":{"dimension_type":1,"field_name":"state_code","field_type":3},"operator_type":1,"and_group_num":1,"str_field_value":"NY"},
 {"attribute":{"dimension_type":1,"field_name":"messaging_consent","field_type":5},"operator_type":1,"and_group_num":1,"bool_field_value":true},
 {"attribute":{"dimension_type":2,"field_name":"loyalty_tier","field_type":3},"operator_type":1,"and_group_num":2,"str_field_value":"Gold"},
 {"attribute":{"dimension_type":1,"field_name":"state_code","field_type":3},"operator_type":1,"and_group_num":2,"str_field_value":"CA"}]`

// sameAsAPI checks that the console's segment holds exactly the criteria
// the API stores for segmentWant, POSTed through the API.
func (e *env) sameAsAPI(t testing.TB, consoleID int64) {
	t.Helper()
	var want parley.Criteria
	if err := json.Unmarshal([]byte(segmentWant), &want); err != nil {
		t.Fatal(err)
	}
	api, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("From the API"), Criteria: parley.Some(want)})
	if err != nil {
		t.Fatal(err)
	}
	viaAPI, _ := e.App.Service.FindSegment(e.Ctx, e.BrandA.ID, api.ID)
	viaConsole, err := e.App.Service.FindSegment(e.Ctx, e.BrandA.ID, consoleID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(viaAPI.Criteria)
	c, _ := json.Marshal(viaConsole.Criteria)
	if string(a) != string(c) {
		t.Errorf("the console saved other criteria than the API (D14):\nconsole %s\n    API %s", c, a)
	}
	n, err := e.App.Service.CountSegment(e.Ctx, e.BrandA.ID, consoleID)
	if err != nil || n.Count != 3 {
		t.Errorf("members: %+v %v, want 3", n, err)
	}
}

// TestSegmentBuilderWords: the builder as a form posts it, without
// script (issue #32, D14): a state typed by name, an enum value in
// another case, yes from a menu, "is one of" two states (by name and by
// code, in the other order than the list's), two groups; the count matches 3, the saved criteria equal the
// API's for the same segment, the list shows it as a sentence, and the
// builder shows it again as it was built.
func TestSegmentBuilderWords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.segmentPeople(t)
	w := e.signedIn(t, "admin@a.example")
	f := url.Values{"name": {"East coast or gold"}, "type": {"STANDARD"}, "rows": {"4"}, "action": {"count"},
		"group_0": {"0"}, "attr_0": {"1:state_code:3"}, "op_0": {"in"}, "value_0": {"New York", "nj"},
		"group_1": {"0"}, "attr_1": {"1:messaging_consent:5"}, "op_1": {"1"}, "value_1": {"true"},
		"group_2": {"1"}, "attr_2": {"2:loyalty_tier:3"}, "op_2": {"1"}, "value_2": {"gold"},
		"group_3": {"1"}, "attr_3": {"1:state_code:3"}, "op_3": {"1"}, "value_3": {"California"}}
	if got := w.post("/console/segments/count", f); !strings.Contains(got.Body, "<b>3</b> matching contacts") {
		t.Fatalf("live count: %d\n%s", got.Status, got.Body)
	}
	if got := w.post("/console/segments/new", f); !strings.Contains(got.Body, "<b>3</b> matching contacts") {
		t.Fatalf("count button: %d\n%s", got.Status, got.Body)
	}
	f.Set("action", "save")
	got := w.post("/console/segments/new", f)
	m := regexp.MustCompile(`^/console/segments/(\d+)\?done=saved$`).FindStringSubmatch(got.Location)
	if m == nil {
		t.Fatalf("save: %d %q\n%s", got.Status, got.Location, got.Body)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	e.sameAsAPI(t, id)

	list := w.get("/console/segments")
	sentence := "(State is one of New Jersey or New York and Opted in is yes) or (Loyalty Tier is Gold and State is California)"
	if !strings.Contains(list.Body, sentence) || !strings.Contains(list.Body, `data-count="/console/segments/`+m[1]+`/count"`) {
		t.Errorf("the list's sentence and count:\n%s", list.Body)
	}
	if got := w.get("/console/segments/" + m[1] + "/count"); got.Status != 200 || !strings.Contains(got.Body, `<b id="count-`+m[1]+`">3</b>`) ||
		!strings.Contains(got.Body, "counted ") {
		t.Errorf("the list's count of it: %d\n%s", got.Status, got.Body)
	}
	page := w.get("/console/segments/" + m[1])
	for _, want := range []string{
		`<option value="in" selected>is one of</option>`,
		`id="value_0_1" name="value_0" value="NY" checked> <label class="inline" for="value_0_1">New York (NY)</label>`,
		`<option value="true" selected>yes</option>`, `<option value="Gold" selected>Gold</option>`,
		`<option value="CA" selected>California (CA)</option>`, "Group 2: contacts matching all of these",
	} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("the builder again lacks %s", want)
		}
	}
	for _, jargon := range []string{"EQUALS", "STRING", "criteria[", "state_code (", "AND group"} {
		if strings.Contains(page.Body, jargon) || strings.Contains(list.Body, jargon) {
			t.Errorf("the builder or list shows %q", jargon)
		}
	}

	// Every error at once, next to its condition, in words; nothing saved.
	before := e.segmentState(t)
	f = url.Values{"name": {"Bad"}, "rows": {"3"}, "action": {"save"},
		"attr_0": {"1:city:3"}, "op_0": {"12"}, "value_0": {"7"},
		"attr_1": {"1:state_code:3"}, "op_1": {"1"}, "value_1": {"Narnia"},
		"attr_2": {"1:messaging_consent:5"}, "op_2": {"1"}, "value_2": {""}}
	got = w.post("/console/segments/new", f)
	for _, want := range []string{`data-row-error="0">Choose a condition for City.`,
		`data-row-error="1">Choose a state: a name like New York or a code like NY.`, `data-row-error="2">Choose a value.`} {
		if got.Status != http.StatusUnprocessableEntity || !strings.Contains(got.Body, want) {
			t.Errorf("errors at once: %d, lacks %s", got.Status, want)
		}
	}
	if e.segmentState(t) != before {
		t.Errorf("a refused form saved")
	}
	// Without script: choosing a field and pressing the button shows its
	// conditions and a menu.
	f = url.Values{"name": {"X"}, "rows": {"1"}, "action": {"refresh"}, "attr_0": {"1:messaging_consent:5"}}
	if got := w.post("/console/segments/new", f); !strings.Contains(got.Body, `<option value="true">yes</option>`) || strings.Contains(got.Body, ">contains<") {
		t.Errorf("refresh after choosing Opted in:\n%s", got.Body)
	}
}

// TestSegmentNamesArchived: a segment that names an archived one keeps
// its meaning (D14): the list and the builder name it, marked archived,
// and it saves again unchanged.
func TestSegmentNamesArchived(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := e.mustSegment(t, false, "Old buyers", parley.Criteria{firstNameIs("Ada")})
	in := parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: 4, FieldType: 1}, OperatorType: 1, IntFieldValue: &old.ID}
	uses := e.mustSegment(t, false, "Uses old", parley.Criteria{in})
	if _, err := e.App.Service.ArchiveSegment(e.Ctx, parley.Origin{Source: "test"}, e.BrandA.ID, old.ID); err != nil {
		t.Fatal(err)
	}
	w := e.signedIn(t, "admin@a.example")
	if got := w.get("/console/segments"); !strings.Contains(got.Body, "Is in segment Old buyers (archived)") {
		t.Errorf("the list:\n%s", got.Body)
	}
	sp := "/console/segments/" + strconv.FormatInt(uses.ID, 10)
	if got := w.get(sp); !strings.Contains(got.Body, `<option value="`+strconv.FormatInt(old.ID, 10)+`" selected>Old buyers (archived)</option>`) {
		t.Errorf("the builder:\n%s", got.Body)
	}
	f := url.Values{"name": {"Uses old"}, "type": {"STANDARD"}, "rows": {"1"}, "action": {"save"},
		"attr_0": {"4::1"}, "op_0": {"1"}, "value_0": {strconv.FormatInt(old.ID, 10)}}
	if got := w.post(sp, f); got.Status != http.StatusSeeOther {
		t.Errorf("saved again: %d\n%s", got.Status, got.Body)
	}
}
