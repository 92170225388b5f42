package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
)

// mustSegment creates a segment of brand A (or B) through the service.
func (e *env) mustSegment(t testing.TB, brandB bool, name string, criteria parley.Criteria) *parley.Segment {
	t.Helper()
	brand := e.BrandA.ID
	if brandB {
		brand = e.BrandB.ID
	}
	seg, err := e.App.Service.CreateSegment(e.Ctx, parley.Origin{Source: "test"}, brand, &parley.Segment{Name: name, IsActive: true, Criteria: criteria})
	if err != nil {
		t.Fatalf("create segment %q: %v", name, err)
	}
	return seg
}

// firstNameIs is the criterion first_name EQUALS v (D14).
func firstNameIs(v string) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: 1, FieldName: "first_name", FieldType: 3},
		OperatorType: parley.OpEquals, StrFieldValue: &v}
}

// segmentState is what a refused segment form must leave as it was.
func (e *env) segmentState(t testing.TB) string {
	t.Helper()
	return e.Snapshot(t, `SELECT id, brand_id, name, description, type, is_archived, criteria FROM segments ORDER BY id`)
}

// builder is the builder's form with one criterion per row: attribute
// ("dimension:field:type"), operator code, value.
func builder(name string, rows ...[3]string) url.Values {
	f := url.Values{"name": {name}, "type": {"STANDARD"}, "rows": {fmt.Sprint(len(rows))}, "action": {"save"}}
	for i, r := range rows {
		k := fmt.Sprint(i)
		f.Set("attr_"+k, r[0])
		f.Set("op_"+k, r[1])
		f.Set("value_"+k, r[2])
		f.Set("group_"+k, "0")
	}
	return f
}

// TestSegmentPagesAccess: the segment and campaign pages are admins'
// (D19): signed out → sign in, an agent → 403, another brand's admin →
// 404 for this brand's ids; and each form refuses the same way, changing
// nothing.
func TestSegmentPagesAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seg := e.mustSegment(t, false, "Adas", parley.Criteria{firstNameIs("Ada")})
	camp, err := e.App.Service.CreateCampaign(e.Ctx, parley.Origin{Source: "test"}, e.BrandA.ID, parley.CampaignCreate{
		Name: parley.Some("Sale"), SegmentID: parley.Some(seg.ID), Body: parley.Some("Hi"),
		SendAt: parley.Some(e.Now().Add(24 * 3600e9).Format("2006-01-02T15:04:05Z07:00"))})
	if err != nil {
		t.Fatal(err)
	}
	sp, cp := fmt.Sprintf("/console/segments/%d", seg.ID), fmt.Sprintf("/console/campaigns/%d", camp.ID)
	pages := []struct {
		path  string
		brand bool // brand A's data: 404 for brand B
	}{
		{"/console/segments", false}, {"/console/segments?count=" + itoa(seg.ID), true}, {"/console/segments/new", false},
		{sp, true}, {sp + "/members", true}, {sp + "/count", true},
		{"/console/campaigns", false}, {"/console/campaigns/new", false}, {cp, true}, {cp + "/progress", true},
	}
	out := e.web(t)
	agentA, adminA, adminB := e.signedIn(t, "agent@a.example"), e.signedIn(t, "admin@a.example"), e.signedIn(t, "admin@b.example")
	for _, p := range pages {
		if got := out.get(p.path); got.Status != http.StatusSeeOther || !strings.HasPrefix(got.Location, "/console/signin?next=") {
			t.Errorf("signed out GET %s: %d %q, want 303 to sign in", p.path, got.Status, got.Location)
		}
		want := map[*web]int{agentA: http.StatusForbidden, adminA: 200, adminB: 200}
		if p.brand {
			want[adminB] = http.StatusNotFound
		}
		for w, status := range want {
			if got := w.get(p.path); got.Status != status {
				t.Errorf("GET %s: %d, want %d\n%s", p.path, got.Status, status, got.h1())
			}
		}
	}
	if got := adminA.get(sp); got.h1() != "Segment Adas" {
		t.Errorf("segment page's h1: %q", got.h1())
	}
	if got := adminB.get("/console/segments"); strings.Contains(got.Body, "Adas") {
		t.Errorf("brand B's admin sees brand A's segment in the list")
	}
	if got := adminB.get("/console/campaigns"); strings.Contains(got.Body, "Sale") {
		t.Errorf("brand B's admin sees brand A's campaign in the list")
	}

	// The forms: nothing changes for a refused visitor.
	before := e.segmentState(t) + e.Snapshot(t, `SELECT id, status FROM campaigns ORDER BY id`)
	posts := []struct {
		path string
		form url.Values
	}{
		{"/console/segments/new", builder("New one")},
		{sp, url.Values{"action": {"archive"}}},
		{sp, builder("Renamed")},
		{"/console/campaigns/new", url.Values{"name": {"X"}, "segment_id": {itoa(seg.ID)}, "body": {"Hi"}, "when": {"now"}}},
		{cp, url.Values{"action": {"cancel"}, "confirm": {"yes"}}},
	}
	for _, p := range posts {
		if got := out.post(p.path, p.form); got.Status != http.StatusSeeOther || !strings.HasPrefix(got.Location, "/console/signin") {
			t.Errorf("signed out POST %s: %d %q", p.path, got.Status, got.Location)
		}
		if got := agentA.post(p.path, p.form); got.Status != http.StatusForbidden {
			t.Errorf("agent POST %s: %d, want 403", p.path, got.Status)
		}
		if got := adminA.post(p.path, p.form, "Sec-Fetch-Site", "cross-site"); got.Status != http.StatusForbidden {
			t.Errorf("cross-origin POST %s: %d, want 403", p.path, got.Status)
		}
		if strings.Contains(p.path, "/new") {
			continue
		}
		if got := adminB.post(p.path, p.form); got.Status != http.StatusNotFound {
			t.Errorf("brand B's POST %s: %d, want 404", p.path, got.Status)
		}
	}
	if got := agentA.post("/console/segments/count", builder("x")); got.Status != http.StatusForbidden {
		t.Errorf("agent's live count: %d, want 403", got.Status)
	}
	if after := e.segmentState(t) + e.Snapshot(t, `SELECT id, status FROM campaigns ORDER BY id`); after != before {
		t.Errorf("refused posts changed segments or campaigns:\n%s\n→\n%s", before, after)
	}
}

// TestSegmentBuilder: an admin builds a segment from D14 criteria, sees
// the live count, saves, edits, counts and archives it, and lists its
// members; a bad criterion is shown next to that criterion (the index
// the service names) and nothing is saved (D14, D15, D19).
func TestSegmentBuilder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ada := e.contact(t, false, "+14155550101", "Ada", "Lovelace", "", ptr(true))
	e.contact(t, false, "+14155550102", "Adam", "Smith", "", ptr(true))
	e.contact(t, false, "+14155550103", "Bob", "Jones", "", ptr(false))
	e.contact(t, true, "+14155550104", "Ada", "OtherBrand", "", ptr(true))
	w := e.signedIn(t, "admin@a.example")

	startsAda := [3]string{"1:first_name:3", "9", "Ada"}
	consentTrue := [3]string{"1:messaging_consent:5", "1", "true"}
	if got := w.post("/console/segments/count", builder("", startsAda)); got.Status != 200 || !strings.Contains(got.Body, "<b>2</b> matching contacts") {
		t.Fatalf("live count of first_name STARTS_WITH Ada: %d\n%s", got.Status, got.Body)
	}
	if got := w.post("/console/segments/count", builder("")); !strings.Contains(got.Body, "<b>3</b> matching contacts") {
		t.Errorf("live count with no criteria (every contact of the brand):\n%s", got.Body)
	}
	before := e.segmentState(t)
	bad := []struct {
		name   string
		form   url.Values
		status int
		want   string // shown next to the criterion or field
	}{
		{"OperatorDoesNotFit", builder("S", consentTrue, [3]string{"1:first_name:3", "3", "A"}), 422,
			`id="row-error-1" data-row-error="1">Choose a condition for First name.`},
		{"NotAnInteger", builder("S", [3]string{"3:inbound_count:1", "4", "many"}), 422,
			`id="row-error-0" data-row-error="0">Enter a whole number, like 3.`},
		{"NoValue", builder("S", [3]string{"1:first_name:3", "1", ""}), 422,
			`id="row-error-0" data-row-error="0">Enter a value.`},
		{"UnknownSegment", builder("S", [3]string{"4::1", "1", "99999"}), 422,
			`id="row-error-0" data-row-error="0">Choose a segment.`},
		{"UnknownField", builder("S", [3]string{"2:shoe_size:1", "1", "4"}), 422,
			`data-row-error="0">Choose a field: this one no longer exists.`},
		{"NotAState", builder("S", [3]string{"1:state_code:3", "1", "Atlantis"}), 422,
			`data-row-error="0">Choose a state: a name like New York or a code like NY.`},
		{"NoName", builder("  ", startsAda), 422, `<span id="name-error" class="field-error">Enter a name.</span>`},
	}
	for _, c := range bad {
		got := w.post("/console/segments/new", c.form)
		if got.Status != c.status || !strings.Contains(got.Body, c.want) || !strings.Contains(got.Body, "Nothing was saved") {
			t.Errorf("%s: %d, want %d and %q\n%s", c.name, got.Status, c.status, c.want, got.Body)
		}
		if got.h1() != "New segment" {
			t.Errorf("%s: h1 %q", c.name, got.h1())
		}
	}
	// The live count names the same condition.
	if got := w.post("/console/segments/count", bad[0].form); !strings.Contains(got.Body, `data-error-row="1">Choose a condition for First name.`) {
		t.Errorf("live count of a bad criterion:\n%s", got.Body)
	}
	if after := e.segmentState(t); after != before {
		t.Fatalf("refused forms changed segments:\n%s", after)
	}

	// Add a row, remove a row: the page again, nothing saved.
	f := builder("Ada fans", startsAda, consentTrue)
	f.Set("action", "add-0")
	if got := w.post("/console/segments/new", f); got.Status != 200 || !strings.Contains(got.Body, `id="attr_2"`) || strings.Contains(got.Body, `id="attr_3"`) {
		t.Errorf("add a criterion: %d\n%s", got.Status, got.Body)
	}
	f.Set("action", "count")
	if got := w.post("/console/segments/new", f); !strings.Contains(got.Body, "<b>2</b> matching contacts") {
		t.Errorf("count button:\n%s", got.Body)
	}
	f.Set("action", "save")
	got := w.post("/console/segments/new", f)
	m := regexp.MustCompile(`^/console/segments/(\d+)\?done=saved$`).FindStringSubmatch(got.Location)
	if got.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("save: %d %q\n%s", got.Status, got.Location, got.Body)
	}
	segs, _ := e.App.Service.ListSegments(e.Ctx, e.BrandA.ID)
	if len(segs) != 1 || itoa(segs[0].ID) != m[1] || segs[0].Name != "Ada fans" || len(segs[0].Criteria) != 2 ||
		segs[0].Criteria[0].OperatorType != parley.OpStartsWith || *segs[0].Criteria[0].StrFieldValue != "Ada" ||
		segs[0].Criteria[1].BoolFieldValue == nil || !*segs[0].Criteria[1].BoolFieldValue {
		t.Fatalf("saved segments: %+v", segs)
	}
	sp := "/console/segments/" + m[1]
	if got := w.post("/console/segments/new", f); got.Status != http.StatusConflict || !strings.Contains(got.Body, `id="name-error"`) {
		t.Errorf("a name taken: %d\n%s", got.Status, got.Body)
	}
	page := w.get(sp + "?done=saved")
	if !strings.Contains(page.Body, "Segment saved.") || !strings.Contains(page.Body, `<option value="1:first_name:3" selected>First name</option>`) ||
		!strings.Contains(page.Body, `value="Ada"`) || !strings.Contains(page.Body, `href="/console/campaigns/new?segment=`+m[1]+`">New campaign to this segment`) {
		t.Errorf("the saved segment's builder:\n%s", page.Body)
	}
	if got := w.get("/console/segments?count=" + m[1]); !strings.Contains(got.Body, `<b id="count-`+m[1]+`">2</b>`) {
		t.Errorf("count on demand:\n%s", got.Body)
	}
	// Edit: only Ada.
	f = builder("Ada fans", [3]string{"1:first_name:3", "1", "ada"})
	if got := w.post(sp, f); got.Status != http.StatusSeeOther {
		t.Fatalf("edit: %d\n%s", got.Status, got.Body)
	}
	members := w.get(sp + "/members")
	if members.h1() != "Members of Ada fans" || !strings.Contains(members.Body, fmt.Sprintf(`href="/console/contacts/%d">Ada Lovelace</a>`, ada.ID)) ||
		strings.Contains(members.Body, "Adam") || strings.Contains(members.Body, "OtherBrand") {
		t.Errorf("members:\n%s", members.Body)
	}
	// Archive: it leaves the list.
	if got := w.post(sp, url.Values{"action": {"archive"}}); got.Status != http.StatusSeeOther || got.Location != "/console/segments?done=archived" {
		t.Fatalf("archive: %d %q", got.Status, got.Location)
	}
	if got := w.get("/console/segments?done=archived"); strings.Contains(got.Body, "Ada fans") || !strings.Contains(got.Body, "Segment archived.") {
		t.Errorf("the list after archiving:\n%s", got.Body)
	}
	if s, _ := e.App.Service.FindSegment(e.Ctx, e.BrandA.ID, segs[0].ID); !s.IsArchived {
		t.Errorf("not archived")
	}
}

// TestSegmentMembersPaged: the members page shows 50 at a time with a
// link to the next (D15's cursor).
func TestSegmentMembersPaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 55 {
		e.contact(t, false, fmt.Sprintf("+1415555%04d", i), fmt.Sprintf("P%02d", i), "", "", nil)
	}
	seg := e.mustSegment(t, false, "All", nil)
	w := e.signedIn(t, "admin@a.example")
	p := w.get(fmt.Sprintf("/console/segments/%d/members", seg.ID))
	next := regexp.MustCompile(`href="(/console/segments/\d+/members\?cursor=[^"]+)">Next members`).FindStringSubmatch(p.Body)
	if n := strings.Count(p.Body, `href="/console/contacts/`); n != 50 || next == nil {
		t.Fatalf("first page: %d members, next %v", n, next)
	}
	p = w.get(next[1])
	if n := strings.Count(p.Body, `href="/console/contacts/`); n != 5 || strings.Contains(p.Body, "Next members") || !strings.Contains(p.Body, ">P54<") {
		t.Errorf("second page: %d members\n%s", n, p.Body)
	}
	if got := w.get(fmt.Sprintf("/console/segments/%d/members?cursor=bad", seg.ID)); got.Status != http.StatusUnprocessableEntity {
		t.Errorf("bad cursor: %d", got.Status)
	}
}

// TestSegmentLiveCountBound: the live count is one of the brand's
// segment queries (issue #31 item 2): with the brand's slots taken it
// waits, then says so where the count goes; another brand counts on.
func TestSegmentLiveCountBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *app.Config) { c.SegmentQueries, c.SegmentQueryWait = 1, 50*time.Millisecond })
	e.contact(t, false, "+14155550101", "Ada", "Lovelace", "", ptr(true))
	w := e.signedIn(t, "admin@a.example")
	release, err := e.App.Service.EnterSegmentQuery(e.Ctx, e.BrandA.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := w.post("/console/segments/count", builder(""))
	if got.Status != http.StatusOK || !strings.Contains(got.Body, "Too many segment queries") {
		t.Errorf("live count with the brand's slot taken: %d\n%s", got.Status, got.Body)
	}
	if got := e.signedIn(t, "admin@b.example").post("/console/segments/count", builder("")); !strings.Contains(got.Body, "matching contacts") {
		t.Errorf("brand B's live count while brand A's slot is taken:\n%s", got.Body)
	}
	release()
	if got := w.post("/console/segments/count", builder("")); !strings.Contains(got.Body, "<b>1</b> matching contacts") {
		t.Errorf("live count once the slot is free:\n%s", got.Body)
	}
}
