package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// segEnv is a server whose brands A and B both have a STRING field "Tier".
func segEnv(t *testing.T, opts ...apitest.Option) *apitest.Env {
	t.Helper()
	e := apitest.New(t, opts...)
	for _, b := range []int64{e.BrandA.ID, e.BrandB.ID} {
		e.MustCreateField(t, &parley.CustomField{BrandID: b, FieldName: "Tier", CustomDataType: parley.CustomString})
	}
	return e
}

// segUser creates a user of brand A with custom_data.tier = tier.
func segUser(t *testing.T, e *apitest.Env, n int, tier string) *parley.User {
	t.Helper()
	return e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555%04d", n)),
		UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(`{"tier":"` + tier + `"}`))}})
}

func segTier(v string) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionCustomData,
		FieldName: "tier", FieldType: parley.CustomString}, OperatorType: parley.OpEquals, StrFieldValue: &v}
}

func segMember(id int64) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionSegment,
		FieldType: parley.CustomInteger}, OperatorType: parley.OpEquals, IntFieldValue: &id}
}

func segCriteria(cs ...parley.SegmentCriterion) parley.Optional[parley.Criteria] {
	return parley.Some(parley.Criteria(cs))
}

func segCreate(t *testing.T, e *apitest.Env, in parley.SegmentCreate) *parley.Segment {
	t.Helper()
	s, err := e.A.CreateSegment(e.Ctx, in)
	if err != nil {
		t.Fatalf("CreateSegment %q: %v", in.Name.Value, err)
	}
	return s
}

func segCount(t *testing.T, e *apitest.Env, id int64) int64 {
	t.Helper()
	c, err := e.A.CountSegment(e.Ctx, id)
	if err != nil {
		t.Fatalf("CountSegment %d: %v", id, err)
	}
	return c.Count
}

// segUserIDs reads every page of a segment's users, limit at a time.
func segUserIDs(t *testing.T, e *apitest.Env, id int64, limit int) []int64 {
	t.Helper()
	var out []int64
	cursor := ""
	for range 100 {
		users, next, err := e.A.SegmentUsers(e.Ctx, id, limit, cursor)
		if err != nil {
			t.Fatalf("SegmentUsers %d: %v", id, err)
		}
		if len(users) > limit {
			t.Fatalf("page of %d users, limit %d", len(users), limit)
		}
		for _, u := range users {
			out = append(out, u.ID)
		}
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatal("pages never end")
	return nil
}

// TestSegmentLifecycle: a segment is created, read, updated member by
// member, counted, paged, previewed and archived through v1 (D15).
func TestSegmentLifecycle(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	var gold []int64
	for i := range 14 {
		tier := "gold"
		if i%5 == 4 {
			tier = "silver"
		}
		u := segUser(t, e, 100+i, tier)
		if tier == "gold" {
			gold = append(gold, u.ID)
		}
	}

	// Create: 201 with every member, source USER_DEFINED (D15, D10).
	r := hardSend(t, e, "POST", "/api/v1/segments",
		`{"name":"Gold","description":"Best","criteria":[{"attribute":{"dimension_type":2,"field_name":"tier","field_type":3},"operator_type":1,"and_group_num":0,"str_field_value":"GOLD"}],"color_id":3,"is_pinned":true}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	msgWantMembers(t, raw, cfgSegmentMembers)
	var seg parley.Segment
	json.Unmarshal(r.body, &seg)
	if seg.ID == 0 || seg.BrandID != e.BrandA.ID || seg.Name != "Gold" || seg.Description != "Best" || seg.Type != parley.SegmentStandard ||
		seg.Source != parley.SourceUserDefined || !seg.IsActive || seg.IsArchived || seg.ColorID != 3 || !seg.IsPinned || len(seg.Criteria) != 1 {
		t.Fatalf("created %+v", seg)
	}

	got, err := e.A.GetSegment(e.Ctx, seg.ID)
	if err != nil || got.Name != "Gold" || got.DateCreated != seg.DateCreated || len(got.Criteria) != 1 {
		t.Fatalf("get = %+v, %v", got, err)
	}

	// Count and users: text compares ignore ASCII case (D14).
	c, err := e.A.CountSegment(e.Ctx, seg.ID)
	if err != nil || c.Count != int64(len(gold)) || c.SegmentID != seg.ID || c.ComputedAt.IsZero() {
		t.Fatalf("count = %+v, %v; want %d", c, err, len(gold))
	}
	if ids := segUserIDs(t, e, seg.ID, 4); !slices.Equal(ids, gold) {
		t.Errorf("users pages = %v, want %v by id", ids, gold)
	}

	// Preview: count and at most 10 users, by id.
	p, err := e.A.PreviewSegment(e.Ctx, []parley.SegmentCriterion{segTier("gold")})
	if err != nil || p.Count != int64(len(gold)) || len(p.Sample) != parley.PreviewSampleSize {
		t.Fatalf("preview = %+v, %v", p, err)
	}
	for i, u := range p.Sample {
		if u.ID != gold[i] {
			t.Errorf("sample[%d] = %d, want %d", i, u.ID, gold[i])
		}
	}
	if p, err := e.A.PreviewSegment(e.Ctx, nil); err != nil || p.Count != 14 {
		t.Errorf("preview without criteria = %+v, %v; want every contact", p, err)
	}

	// Update: only the members sent change (D4).
	e.Advance(1e9)
	up, err := e.A.UpdateSegment(e.Ctx, seg.ID, parley.SegmentUpdate{Name: parley.Some("Golden")})
	if err != nil || up.Name != "Golden" || up.Description != "Best" || up.ColorID != 3 || !up.IsPinned || len(up.Criteria) != 1 ||
		!up.DateLastUpdated.After(seg.DateLastUpdated.Time) || up.DateCreated != seg.DateCreated {
		t.Fatalf("update name = %+v, %v", up, err)
	}
	up, err = e.A.UpdateSegment(e.Ctx, seg.ID, parley.SegmentUpdate{Description: parley.Null[string](), IsPinned: parley.Some(false),
		ColorID: parley.Some(int64(0))})
	if err != nil || up.Description != "" || up.IsPinned || up.ColorID != 0 || up.Name != "Golden" {
		t.Fatalf("update description null = %+v, %v", up, err)
	}
	// Nothing sent: nothing changes, not even date_last_updated.
	e.Advance(1e9)
	if same, err := e.A.UpdateSegment(e.Ctx, seg.ID, parley.SegmentUpdate{}); err != nil || same.DateLastUpdated != up.DateLastUpdated {
		t.Errorf("empty update = %+v, %v", same, err)
	}
	// New criteria: a STANDARD segment is evaluated at each use (D14).
	if _, err := e.A.UpdateSegment(e.Ctx, seg.ID, parley.SegmentUpdate{Criteria: segCriteria(segTier("silver"))}); err != nil {
		t.Fatal(err)
	}
	if n := segCount(t, e, seg.ID); n != 2 {
		t.Errorf("silver count = %d, want 2", n)
	}
	segUser(t, e, 200, "Silver")
	if n := segCount(t, e, seg.ID); n != 3 {
		t.Errorf("silver count after a new silver contact = %d, want 3", n)
	}

	// Delete archives and answers the segment; it leaves the list, not GET.
	other := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("Other")})
	arch, err := e.A.ArchiveSegment(e.Ctx, seg.ID)
	if err != nil || !arch.IsArchived || arch.ID != seg.ID || arch.Name != "Golden" {
		t.Fatalf("archive = %+v, %v", arch, err)
	}
	list, err := e.A.ListSegments(e.Ctx)
	if err != nil || len(list) != 1 || list[0].ID != other.ID {
		t.Errorf("list after archive = %v, %v; want only %d", list, err, other.ID)
	}
	if got, err := e.A.GetSegment(e.Ctx, seg.ID); err != nil || !got.IsArchived {
		t.Errorf("get archived = %+v, %v", got, err)
	}
	if again, err := e.A.ArchiveSegment(e.Ctx, seg.ID); err != nil || !again.IsArchived || again.DateLastUpdated != arch.DateLastUpdated {
		t.Errorf("archive again = %+v, %v; want the same archived segment", again, err)
	}
	// An archived segment still counts, and segments may still name it.
	if n := segCount(t, e, seg.ID); n != 3 {
		t.Errorf("archived count = %d, want 3", n)
	}
	naming := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("Names archived"), Criteria: segCriteria(segMember(seg.ID))})
	if n := segCount(t, e, naming.ID); n != 3 {
		t.Errorf("count of a segment naming an archived one = %d, want 3", n)
	}
}

// TestSegmentDuplicateName: a name is unique in the brand, archived
// segments included, and a rename may free it (D15).
func TestSegmentDuplicateName(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	vip := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("VIP")})
	other := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("Other")})
	before := e.State(t)
	for _, body := range []string{`{"name":"VIP"}`, `{"name":"  VIP "}`} {
		wantError(t, hardSend(t, e, "POST", "/api/v1/segments", body), http.StatusConflict, parley.EDuplicate)
	}
	wantError(t, hardSend(t, e, "POST", "/api/v1/segments/"+strconv.FormatInt(other.ID, 10), `{"name":"VIP"}`), http.StatusConflict, parley.EDuplicate)
	if e.State(t) != before {
		t.Error("a refused duplicate changed the database")
	}
	// Names are per brand, and compared exactly.
	if _, err := e.B.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("VIP")}); err != nil {
		t.Errorf("brand B's VIP: %v", err)
	}
	segCreate(t, e, parley.SegmentCreate{Name: parley.Some("vip")})
	// Archived: the name stays taken until the archived segment is renamed.
	if _, err := e.A.ArchiveSegment(e.Ctx, vip.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.A.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("VIP")}); apiCode(err) != parley.EDuplicate {
		t.Errorf("VIP after archiving: %v, want duplicate_record_found", err)
	}
	if up, err := e.A.UpdateSegment(e.Ctx, vip.ID, parley.SegmentUpdate{Name: parley.Some("VIP (old)")}); err != nil || !up.IsArchived {
		t.Fatalf("rename archived = %+v, %v", up, err)
	}
	segCreate(t, e, parley.SegmentCreate{Name: parley.Some("VIP")})
}

// TestSegmentOtherBrand: another brand's segment id, or none, is 404
// segment_not_found on every endpoint, and changes nothing (D15).
func TestSegmentOtherBrand(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	theirs, err := e.B.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Theirs")})
	if err != nil {
		t.Fatal(err)
	}
	before := e.State(t)
	for _, id := range []int64{theirs.ID, theirs.ID + 1000} {
		p := "/api/v1/segments/" + strconv.FormatInt(id, 10)
		for _, c := range []struct{ method, target, body string }{
			{"GET", p, ""},
			{"POST", p, `{"name":"Mine"}`},
			{"POST", p, `{}`},
			{"DELETE", p, ""},
			{"GET", p + "/users", ""},
			{"GET", p + "/users?limit=1", ""},
			{"GET", p + "/count", ""},
		} {
			t.Run(c.method+strings.ReplaceAll(c.target, "/", "_"), func(t *testing.T) {
				msg := wantError(t, hardSend(t, e, c.method, c.target, c.body), http.StatusNotFound, parley.ESegmentNotFound)
				if !strings.Contains(msg, strconv.FormatInt(id, 10)) {
					t.Errorf("msg %q does not name the id", msg)
				}
			})
		}
	}
	if e.State(t) != before {
		t.Error("a request for another brand's segment changed the database")
	}
	if got, err := e.B.GetSegment(e.Ctx, theirs.ID); err != nil || got.Name != "Theirs" || got.IsArchived {
		t.Errorf("brand B's segment = %+v, %v", got, err)
	}
}

// TestSegmentBadInput: malformed bodies and criteria are 422 naming the
// member — for criteria, its index — or 400 for a body that is not JSON;
// they change nothing (D3, D4, D14).
func TestSegmentBadInput(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	seg := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("Gold"), Criteria: segCriteria(segTier("gold"))})
	theirs, err := e.B.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Theirs")})
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(seg.ID, 10)
	const tier = `{"attribute":{"dimension_type":2,"field_name":"tier","field_type":3},"operator_type":1,"and_group_num":0,"str_field_value":"x"}`
	crit := func(cs ...string) string { return `[` + strings.Join(cs, ",") + `]` }
	cases := []struct {
		name, method, target, body string
		status                     int
		typ, field                 string
	}{
		{"NotJSON", "POST", "/api/v1/segments", `{"name":`, 400, parley.EInvalidRequest, ""},
		{"NotObject", "POST", "/api/v1/segments", `[]`, 400, parley.EInvalidRequest, ""},
		{"NameMissing", "POST", "/api/v1/segments", `{}`, 422, parley.EValidation, "name"},
		{"NameNull", "POST", "/api/v1/segments", `{"name":null}`, 422, parley.EValidation, "name"},
		{"NameBlank", "POST", "/api/v1/segments", `{"name":"  "}`, 422, parley.EValidation, "name"},
		{"NameTooLong", "POST", "/api/v1/segments", `{"name":"` + strings.Repeat("n", parley.MaxSegmentName+1) + `"}`, 422, parley.EValidation, "name"},
		{"NameNotString", "POST", "/api/v1/segments", `{"name":5}`, 422, parley.EValidation, "name"},
		{"DescriptionTooLong", "POST", "/api/v1/segments", `{"name":"d","description":"` + strings.Repeat("d", parley.MaxSegmentDescription+1) + `"}`, 422, parley.EValidation, "description"},
		{"TypeUnknown", "POST", "/api/v1/segments", `{"name":"t","type":"WEEKLY"}`, 422, parley.EValidation, "type"},
		{"TypeLowercase", "POST", "/api/v1/segments", `{"name":"t","type":"standard"}`, 422, parley.EValidation, "type"},
		{"ColorNotInteger", "POST", "/api/v1/segments", `{"name":"c","color_id":"3"}`, 422, parley.EValidation, "color_id"},
		{"ColorNegative", "POST", "/api/v1/segments", `{"name":"c","color_id":-1}`, 422, parley.EValidation, "color_id"},
		{"PinnedNotBoolean", "POST", "/api/v1/segments", `{"name":"p","is_pinned":"yes"}`, 422, parley.EValidation, "is_pinned"},
		{"UnknownMember", "POST", "/api/v1/segments", `{"name":"u","foo":1}`, 422, parley.EValidation, "foo"},
		{"ReadOnlyMember", "POST", "/api/v1/segments", `{"name":"r","is_archived":false}`, 422, parley.EValidation, "is_archived"},
		{"SourceNotSettable", "POST", "/api/v1/segments", `{"name":"r","source":"SHOPIFY"}`, 422, parley.EValidation, "source"},
		{"CriteriaNotArray", "POST", "/api/v1/segments", `{"name":"c","criteria":{}}`, 422, parley.EValidation, "criteria"},
		{"CriteriaString", "POST", "/api/v1/segments", `{"name":"c","criteria":"tier = gold"}`, 422, parley.EValidation, "criteria"},
		{"CriteriaNull", "POST", "/api/v1/segments", `{"name":"c","criteria":null}`, 422, parley.EValidation, "criteria"},
		{"CriterionNotObject", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(tier, `1`) + `}`, 422, parley.EValidation, "criteria[1]"},
		{"OperatorString", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(tier, strings.Replace(tier, `"operator_type":1`, `"operator_type":"1"`, 1)) + `}`, 422, parley.EValidation, "criteria[1].operator_type"},
		{"DimensionString", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(strings.Replace(tier, `"dimension_type":2`, `"dimension_type":"two"`, 1)) + `}`, 422, parley.EValidation, "criteria[0].attribute.dimension_type"},
		{"ValueWrongType", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(strings.Replace(tier, `"str_field_value":"x"`, `"str_field_value":7`, 1)) + `}`, 422, parley.EValidation, "criteria[0].str_field_value"},
		{"CriterionUnknownMember", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(tier, strings.Replace(tier, `"and_group_num":0`, `"and_group_num":0,"negate":true`, 1)) + `}`, 422, parley.EValidation, "criteria[1].negate"},
		{"OperatorDoesNotFit", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(tier, strings.Replace(tier, `"operator_type":1`, `"operator_type":3`, 1)) + `}`, 422, parley.EValidation, "criteria[1].operator_type"},
		{"ValueMissing", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(strings.Replace(tier, `"str_field_value":"x"`, `"str_field_value":null`, 1)) + `}`, 422, parley.EValidation, "criteria[0].str_field_value"},
		{"UnknownField", "POST", "/api/v1/segments", `{"name":"c","criteria":` + crit(strings.Replace(tier, `"tier"`, `"shoe_size"`, 1)) + `}`, 422, parley.EValidation, "criteria[0].attribute.field_name"},
		{"OtherBrandsSegment", "POST", "/api/v1/segments", `{"name":"c","criteria":[{"attribute":{"dimension_type":4,"field_name":"","field_type":1},"operator_type":1,"and_group_num":0,"int_field_value":` + strconv.FormatInt(theirs.ID, 10) + `}]}`, 422, parley.EValidation, "criteria[0].int_field_value"},
		{"UpdateBadCriteria", "POST", "/api/v1/segments/" + id, `{"criteria":` + crit(strings.Replace(tier, `"operator_type":1`, `"operator_type":99`, 1)) + `}`, 422, parley.EValidation, "criteria[0].operator_type"},
		{"UpdateCriteriaNotArray", "POST", "/api/v1/segments/" + id, `{"criteria":3}`, 422, parley.EValidation, "criteria"},
		{"UpdateNameNull", "POST", "/api/v1/segments/" + id, `{"name":null}`, 422, parley.EValidation, "name"},
		{"UpdateTypeNull", "POST", "/api/v1/segments/" + id, `{"type":null}`, 422, parley.EValidation, "type"},
		{"UpdateTypeEmpty", "POST", "/api/v1/segments/" + id, `{"type":""}`, 422, parley.EValidation, "type"},
		{"UpdateReadOnly", "POST", "/api/v1/segments/" + id, `{"is_archived":true}`, 422, parley.EValidation, "is_archived"},
		{"UpdateSelfMember", "POST", "/api/v1/segments/" + id, `{"criteria":[{"attribute":{"dimension_type":4,"field_name":"","field_type":1},"operator_type":1,"and_group_num":0,"int_field_value":` + id + `}]}`, 422, parley.EValidation, "criteria[0].int_field_value"},
		{"PreviewBadCriteria", "POST", "/api/v1/segments/preview", `{"criteria":` + crit(tier, strings.Replace(tier, `"operator_type":1`, `"operator_type":"EQUALS"`, 1)) + `}`, 422, parley.EValidation, "criteria[1].operator_type"},
		{"PreviewRuleBroken", "POST", "/api/v1/segments/preview", `{"criteria":` + crit(strings.Replace(tier, `"operator_type":1`, `"operator_type":12`, 1)) + `}`, 422, parley.EValidation, "criteria[0].operator_type"},
		{"PreviewUnknownMember", "POST", "/api/v1/segments/preview", `{"criteria":[],"name":"x"}`, 422, parley.EValidation, "name"},
		{"PreviewCriteriaNull", "POST", "/api/v1/segments/preview", `{"criteria":null}`, 422, parley.EValidation, "criteria"},
		{"PathIDNotInteger", "GET", "/api/v1/segments/abc", "", 422, parley.EValidation, "segment_id"},
		{"PathIDZero", "GET", "/api/v1/segments/0/count", "", 422, parley.EValidation, "segment_id"},
		{"LimitBad", "GET", "/api/v1/segments/" + id + "/users?limit=0", "", 422, parley.EValidation, "limit"},
		{"LimitTooHigh", "GET", "/api/v1/segments/" + id + "/users?limit=101", "", 422, parley.EValidation, "limit"},
		{"CursorBad", "GET", "/api/v1/segments/" + id + "/users?cursor=nope", "", 422, parley.EValidation, "cursor"},
		{"PreviewIsPOSTOnly", "GET", "/api/v1/segments/preview", "", 405, parley.EMethodNotAllowed, ""},
	}
	before := e.State(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := hardSend(t, e, c.method, c.target, c.body)
			wantError(t, r, c.status, c.typ)
			if _, _, field := authEnvelope(t, r.body); field != c.field {
				t.Errorf("field = %q, want %q (%s)", field, c.field, r.body)
			}
			if c.status == 405 && r.header.Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", r.header.Get("Allow"))
			}
		})
	}
	if e.State(t) != before {
		t.Error("refused requests changed the database")
	}
}

// TestSegmentCycles: criteria that make a chain of memberships lead back
// to the segment are refused, on update and on a type change that makes
// a frozen segment's criteria live again (D14).
func TestSegmentCycles(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	a := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("A"), Criteria: segCriteria(segTier("gold"))})
	b := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("B"), Criteria: segCriteria(segMember(a.ID))})
	before := e.State(t)
	_, err := e.A.UpdateSegment(e.Ctx, a.ID, parley.SegmentUpdate{Criteria: segCriteria(segMember(b.ID))})
	if apiCode(err) != parley.EValidation || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("A ⊂ B ⊂ A: %v, want validation_error naming a cycle", err)
	}
	if e.State(t) != before {
		t.Error("a refused cycle changed the database")
	}
	// A POINT IN TIME segment reads its frozen members, not its criteria:
	// naming it makes no cycle until it becomes STANDARD again.
	p := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("P"), Type: parley.Some(parley.SegmentPointInTime),
		Criteria: segCriteria(segMember(a.ID))})
	if _, err := e.A.UpdateSegment(e.Ctx, a.ID, parley.SegmentUpdate{Criteria: segCriteria(segMember(p.ID))}); err != nil {
		t.Fatalf("A naming frozen P: %v", err)
	}
	before = e.State(t)
	_, err = e.A.UpdateSegment(e.Ctx, p.ID, parley.SegmentUpdate{Type: parley.Some(parley.SegmentStandard)})
	if apiCode(err) != parley.EValidation || !strings.Contains(err.Error(), "criteria[0].int_field_value") {
		t.Errorf("P made STANDARD while A names it: %v, want validation_error on criteria[0].int_field_value", err)
	}
	if e.State(t) != before {
		t.Error("a refused type change changed the database")
	}
}

// TestSegmentPointInTime: a POINT IN TIME segment made through v1 freezes
// its members; sending criteria freezes them again, and a type change
// freezes or thaws them (D14, D15).
func TestSegmentPointInTime(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	g1, g2 := segUser(t, e, 1, "gold"), segUser(t, e, 2, "gold")
	segUser(t, e, 3, "silver")
	pit := segCreate(t, e, parley.SegmentCreate{Name: parley.Some("Frozen"), Type: parley.Some(parley.SegmentPointInTime),
		Criteria: segCriteria(segTier("gold"))})
	if pit.Type != parley.SegmentPointInTime {
		t.Fatalf("type = %q", pit.Type)
	}
	g3 := segUser(t, e, 4, "gold")
	if n := segCount(t, e, pit.ID); n != 2 {
		t.Errorf("count after a new gold contact = %d, want the 2 frozen", n)
	}
	if ids := segUserIDs(t, e, pit.ID, 1); !slices.Equal(ids, []int64{g1.ID, g2.ID}) {
		t.Errorf("users = %v, want %v", ids, []int64{g1.ID, g2.ID})
	}
	// Preview of the same criteria is live.
	if p, err := e.A.PreviewSegment(e.Ctx, []parley.SegmentCriterion{segTier("gold")}); err != nil || p.Count != 3 {
		t.Errorf("preview = %+v, %v; want 3", p, err)
	}
	// Other members change nothing of the members.
	if _, err := e.A.UpdateSegment(e.Ctx, pit.ID, parley.SegmentUpdate{Name: parley.Some("Frozen gold")}); err != nil {
		t.Fatal(err)
	}
	if n := segCount(t, e, pit.ID); n != 2 {
		t.Errorf("count after a rename = %d, want 2", n)
	}
	// Criteria sent, even unchanged, freeze the members again as of now.
	if _, err := e.A.UpdateSegment(e.Ctx, pit.ID, parley.SegmentUpdate{Criteria: segCriteria(segTier("gold"))}); err != nil {
		t.Fatal(err)
	}
	if ids := segUserIDs(t, e, pit.ID, 10); !slices.Equal(ids, []int64{g1.ID, g2.ID, g3.ID}) {
		t.Errorf("users after re-freezing = %v, want %v", ids, []int64{g1.ID, g2.ID, g3.ID})
	}
	// Deleted users drop out.
	if _, err := e.A.DeleteUser(e.Ctx, g1.ID); err != nil {
		t.Fatal(err)
	}
	if n := segCount(t, e, pit.ID); n != 2 {
		t.Errorf("count after deleting a member = %d, want 2", n)
	}
	// STANDARD: live again; POINT IN TIME again: frozen as of the change.
	if _, err := e.A.UpdateSegment(e.Ctx, pit.ID, parley.SegmentUpdate{Type: parley.Some(parley.SegmentStandard)}); err != nil {
		t.Fatal(err)
	}
	segUser(t, e, 5, "gold")
	if n := segCount(t, e, pit.ID); n != 3 {
		t.Errorf("STANDARD count = %d, want 3", n)
	}
	if n := e.Count(t, "segment_members"); n != 0 {
		t.Errorf("%d frozen members kept by a STANDARD segment", n)
	}
	if _, err := e.A.UpdateSegment(e.Ctx, pit.ID, parley.SegmentUpdate{Type: parley.Some(parley.SegmentPointInTime)}); err != nil {
		t.Fatal(err)
	}
	segUser(t, e, 6, "gold")
	if n := segCount(t, e, pit.ID); n != 3 {
		t.Errorf("count once frozen again = %d, want 3", n)
	}
}

// TestSegmentIdempotentCreate: POST /segments with an Idempotency-Key
// runs once; a repeat gets the first answer, and the key with another
// body is refused (D13).
func TestSegmentIdempotentCreate(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	body := `{"name":"Once","criteria":[]}`
	first := keyed(t, e, "POST", "/api/v1/segments", body, "seg-1")
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := keyed(t, e, "POST", "/api/v1/segments", body, "seg-1")
	if again.status != http.StatusCreated || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("repeat: %d %s (replayed %q), want the first answer", again.status, again.body, again.header.Get("Idempotent-Replayed"))
	}
	if n := e.Count(t, "segments"); n != 1 {
		t.Errorf("%d segments, want 1", n)
	}
	wantError(t, keyed(t, e, "POST", "/api/v1/segments", `{"name":"Twice"}`, "seg-1"), http.StatusConflict, parley.EIdempotencyReused)
	// An update with a key is stored with its change too.
	var seg parley.Segment
	json.Unmarshal(first.body, &seg)
	target := "/api/v1/segments/" + strconv.FormatInt(seg.ID, 10)
	u1 := keyed(t, e, "POST", target, `{"name":"Renamed"}`, "seg-2")
	u2 := keyed(t, e, "POST", target, `{"name":"Renamed"}`, "seg-2")
	if u1.status != 200 || u2.status != 200 || string(u1.body) != string(u2.body) || u2.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("keyed update: %d %s / %d %s", u1.status, u1.body, u2.status, u2.body)
	}
	// Brand B's key space is its own.
	if s, err := e.B.CreateSegment(e.Ctx, parley.SegmentCreate{Name: parley.Some("Once")}); err != nil || s.BrandID != e.BrandB.ID {
		t.Errorf("brand B: %+v, %v", s, err)
	}
}

// TestSegmentConcurrentCycle: two updates that would each close a cycle
// with the other, sent at once, never both commit: criteria are checked
// in the write's transaction under the brand's segment lock (D14).
func TestSegmentConcurrentCycle(t *testing.T) {
	t.Parallel()
	e := segEnv(t)
	for round := range 5 {
		a := segCreate(t, e, parley.SegmentCreate{Name: parley.Some(fmt.Sprintf("A%d", round))})
		b := segCreate(t, e, parley.SegmentCreate{Name: parley.Some(fmt.Sprintf("B%d", round))})
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, pair := range [][2]int64{{a.ID, b.ID}, {b.ID, a.ID}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.A.UpdateSegment(e.Ctx, pair[0], parley.SegmentUpdate{Criteria: segCriteria(segMember(pair[1]))})
			}()
		}
		wg.Wait()
		if errs[0] == nil && errs[1] == nil {
			t.Fatalf("round %d: both updates committed: %d and %d name each other", round, a.ID, b.ID)
		}
		for _, err := range errs {
			if err != nil && apiCode(err) != parley.EValidation {
				t.Errorf("round %d: %v, want validation_error", round, err)
			}
		}
	}
}
