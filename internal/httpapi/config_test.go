package httpapi_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// cfgSegmentMembers are the members of a Segment, exactly (D10).
var cfgSegmentMembers = []string{"id", "brand_id", "name", "source", "type", "is_active", "is_archived",
	"criteria", "date_created", "date_last_updated", "description", "is_pinned", "color_id", "ltv",
	"average_order_value", "average_purchase_frequency"}

// cfgCriterionMembers are the members of a segment criterion (spec "Segment criterion").
var cfgCriterionMembers = []string{"attribute", "operator_type", "and_group_num", "str_field_value",
	"bool_field_value", "int_field_value", "float_field_value", "date_field_value"}

// cfgFieldMembers are the members of a Custom data field, exactly (D10).
var cfgFieldMembers = []string{"id", "field_name", "custom_data_type", "description", "subtype",
	"available_enum_values", "include_in_ai_prompt", "include_user_answers", "is_append",
	"is_auto_collected", "extraction_prompt", "is_emphasize_current", "is_emphasize_personal"}

// cfgGetList fetches a JSON array as c, with its raw body.
func cfgGetList(t *testing.T, c *client.Client, path string) ([]map[string]any, []byte) {
	t.Helper()
	resp := mustDo(t, c, "GET", path, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status = %d (%s), want 200 (D3)", path, resp.StatusCode, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q (D1)", ct)
	}
	var out []map[string]any
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatalf("GET %s = %s, want a JSON array: %v", path, resp.Body, err)
	}
	if out == nil {
		t.Fatalf("GET %s = %s, want an array, never null (D10)", path, resp.Body)
	}
	return out, resp.Body
}

// cfgIDs returns the id member of each item.
func cfgIDs(items []map[string]any) []int64 {
	out := make([]int64, 0, len(items))
	for _, it := range items {
		id, _ := it["id"].(float64)
		out = append(out, int64(id))
	}
	return out
}

// cfgSegment creates a segment or fails the test.
func cfgSegment(t *testing.T, e *apitest.Env, s *parley.Segment) *parley.Segment {
	t.Helper()
	if _, err := e.App.Service.CreateSegment(e.Ctx, parley.Origin{}, s.BrandID, s); err != nil {
		t.Fatalf("CreateSegment %q: %v", s.Name, err)
	}
	return s
}

// cfgWantNull asserts m[k] is present and null.
func cfgWantNull(t *testing.T, m map[string]any, k string) {
	t.Helper()
	if v, ok := m[k]; !ok || v != nil {
		t.Errorf("%s = %#v (present %v), want present and null (D10)", k, v, ok)
	}
}

func TestListSegments(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	if err := e.App.Service.CreateCustomField(e.Ctx, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Loyalty Tier",
		CustomDataType: parley.CustomString}); err != nil {
		t.Fatal(err)
	}
	full := cfgSegment(t, e, &parley.Segment{
		BrandID: e.BrandA.ID, Name: "VIPs", Source: "SHOPIFY", Type: "POINT IN TIME", IsActive: true,
		Description: "Big spenders", IsPinned: true, ColorID: 7, LTV: 1234.5, AverageOrderValue: 99.25,
		AveragePurchaseFrequency: 2.5,
		Criteria: []parley.SegmentCriterion{
			{Attribute: parley.SegmentAttribute{DimensionType: 2, FieldName: "loyalty_tier", FieldType: 3},
				OperatorType: 1, AndGroupNum: 0, StrFieldValue: ptr("Gold")},
			{Attribute: parley.SegmentAttribute{DimensionType: 3, FieldName: "outbound_count", FieldType: 1},
				OperatorType: 4, AndGroupNum: 1, IntFieldValue: ptr(int64(3))},
		},
	})
	inactive := cfgSegment(t, e, &parley.Segment{BrandID: e.BrandA.ID, Name: "Dormant", IsActive: false})
	minimal := cfgSegment(t, e, &parley.Segment{BrandID: e.BrandA.ID, Name: "Everyone", IsActive: true})
	archivedAtBirth := cfgSegment(t, e, &parley.Segment{BrandID: e.BrandA.ID, Name: "Old", IsActive: true, IsArchived: true})
	toArchive := cfgSegment(t, e, &parley.Segment{BrandID: e.BrandA.ID, Name: "Holiday", IsActive: true})
	theirs := cfgSegment(t, e, &parley.Segment{BrandID: e.BrandB.ID, Name: "VIPs", IsActive: true})
	last := cfgSegment(t, e, &parley.Segment{BrandID: e.BrandA.ID, Name: "Newest", IsActive: true})

	t.Run("OnlyVisibleOwnOrderedByID", func(t *testing.T) {
		segs, _ := cfgGetList(t, e.A, "/segments")
		want := []int64{full.ID, minimal.ID, toArchive.ID, last.ID}
		if got := cfgIDs(segs); !slices.Equal(got, want) {
			t.Errorf("ids = %v, want %v: active, non-archived, brand A's, by id (D10); inactive %d, archived %d, brand B's %d excluded",
				got, want, inactive.ID, archivedAtBirth.ID, theirs.ID)
		}
		for _, s := range segs {
			msgWantMembers(t, s, cfgSegmentMembers)
			if s["brand_id"] != float64(e.BrandA.ID) || s["is_active"] != true || s["is_archived"] != false {
				t.Errorf("segment %v: brand_id %v is_active %v is_archived %v (D10)", s["id"], s["brand_id"], s["is_active"], s["is_archived"])
			}
			for _, k := range []string{"date_created", "date_last_updated"} {
				v, _ := s[k].(string)
				if _, err := time.Parse(parley.TimeFormat, v); err != nil {
					t.Errorf("%s %q is not RFC 3339 UTC with microseconds (D1)", k, v)
				}
			}
		}
	})

	t.Run("AllMembersAsConfigured", func(t *testing.T) {
		segs, _ := cfgGetList(t, e.A, "/segments")
		if len(segs) == 0 {
			t.Fatal("no segments")
		}
		s := segs[0]
		want := map[string]any{
			"id": float64(full.ID), "brand_id": float64(e.BrandA.ID), "name": "VIPs", "source": "SHOPIFY",
			"type": "POINT IN TIME", "is_active": true, "is_archived": false, "description": "Big spenders",
			"is_pinned": true, "color_id": float64(7), "ltv": 1234.5, "average_order_value": 99.25,
			"average_purchase_frequency": 2.5,
		}
		for k, v := range want {
			if s[k] != v {
				t.Errorf("%s = %#v, want %#v", k, s[k], v)
			}
		}
		crit, _ := s["criteria"].([]any)
		if len(crit) != 2 {
			t.Fatalf("criteria = %#v, want 2 criteria", s["criteria"])
		}
		c0, _ := crit[0].(map[string]any)
		msgWantMembers(t, c0, cfgCriterionMembers)
		attr, _ := c0["attribute"].(map[string]any)
		msgWantMembers(t, attr, []string{"dimension_type", "field_name", "field_type"})
		if attr["dimension_type"] != float64(2) || attr["field_name"] != "loyalty_tier" || attr["field_type"] != float64(3) {
			t.Errorf("attribute = %#v", attr)
		}
		if c0["operator_type"] != float64(1) || c0["and_group_num"] != float64(0) {
			t.Errorf("operator_type %v and_group_num %v, want 1 and 0 (never null)", c0["operator_type"], c0["and_group_num"])
		}
		// D10: only the value member that applies is set; the others are null.
		if c0["str_field_value"] != "Gold" {
			t.Errorf("str_field_value = %#v, want Gold", c0["str_field_value"])
		}
		for _, k := range []string{"bool_field_value", "int_field_value", "float_field_value", "date_field_value"} {
			cfgWantNull(t, c0, k)
		}
		c1, _ := crit[1].(map[string]any)
		msgWantMembers(t, c1, cfgCriterionMembers)
		if c1["int_field_value"] != float64(3) || c1["and_group_num"] != float64(1) || c1["operator_type"] != float64(4) {
			t.Errorf("criterion 2 = %#v, want int_field_value 3, operator 4, group 1", c1)
		}
		for _, k := range []string{"str_field_value", "bool_field_value", "float_field_value", "date_field_value"} {
			cfgWantNull(t, c1, k)
		}
	})

	t.Run("UnsetMembersAreDefaultsNotNull", func(t *testing.T) {
		segs, _ := cfgGetList(t, e.A, "/segments")
		var s map[string]any
		for _, x := range segs {
			if x["id"] == float64(minimal.ID) {
				s = x
			}
		}
		if s == nil {
			t.Fatalf("segment %d not listed", minimal.ID)
		}
		for _, k := range cfgSegmentMembers {
			if s[k] == nil {
				t.Errorf("%s is null; D10: members typed without \"or null\" are never null", k)
			}
		}
		defaults := map[string]any{"description": "", "is_pinned": false, "color_id": float64(0), "ltv": float64(0),
			"average_order_value": float64(0), "average_purchase_frequency": float64(0), "name": "Everyone"}
		for k, v := range defaults {
			if s[k] != v {
				t.Errorf("%s = %#v, want %#v (D10)", k, s[k], v)
			}
		}
		for _, k := range []string{"source", "type"} {
			if _, ok := s[k].(string); !ok {
				t.Errorf("%s = %#v, want a string (D10)", k, s[k])
			}
		}
		if crit, ok := s["criteria"].([]any); !ok || len(crit) != 0 {
			t.Errorf("criteria = %#v, want [] (D10)", s["criteria"])
		}
	})

	t.Run("OtherBrandSeesOnlyItsOwn", func(t *testing.T) {
		segs, _ := cfgGetList(t, e.B, "/segments")
		if got := cfgIDs(segs); !slices.Equal(got, []int64{theirs.ID}) {
			t.Errorf("brand B ids = %v, want only [%d] (D10)", got, theirs.ID)
		}
	})

	t.Run("ArchivedDisappears", func(t *testing.T) {
		if _, err := e.App.Service.ArchiveSegment(e.Ctx, parley.Origin{}, e.BrandA.ID, toArchive.ID); err != nil {
			t.Fatal(err)
		}
		segs, _ := cfgGetList(t, e.A, "/segments")
		want := []int64{full.ID, minimal.ID, last.ID}
		if got := cfgIDs(segs); !slices.Equal(got, want) {
			t.Errorf("ids after archiving %d = %v, want %v (D10)", toArchive.ID, got, want)
		}
	})
}

func TestListSegmentsEmpty(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	cfgSegment(t, e, &parley.Segment{BrandID: e.BrandB.ID, Name: "B only", IsActive: true})
	cfgSegment(t, e, &parley.Segment{BrandID: e.BrandA.ID, Name: "Inactive", IsActive: false})
	_, raw := cfgGetList(t, e.A, "/segments")
	if got := string(bytes.TrimSpace(raw)); got != "[]" {
		t.Errorf("body = %s, want [] (D10: an empty list is [], not null)", got)
	}
}

func TestListCustomFields(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	tier := e.MustCreateField(t, &parley.CustomField{
		BrandID: e.BrandA.ID, FieldName: "Loyalty Tier", CustomDataType: parley.CustomString,
		Description: "Customer tier", AvailableEnumValues: []string{"Gold", "Silver"},
		IncludeInAIPrompt: true, IncludeUserAnswers: true, IsAutoCollected: true,
		ExtractionPrompt: "What tier?", IsEmphasizeCurrent: true, IsEmphasizePersonal: true,
	})
	theirs := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandB.ID, FieldName: "Shoe Size", CustomDataType: parley.CustomInteger})
	birthday := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Birthday", CustomDataType: parley.CustomDate})
	tags := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Tags", CustomDataType: parley.CustomList,
		Subtype: parley.CustomString, IsAppend: true})

	fields, _ := cfgGetList(t, e.A, "/custom_data")
	t.Run("AllOwnOrderedByID", func(t *testing.T) {
		want := []int64{tier.ID, birthday.ID, tags.ID}
		if got := cfgIDs(fields); !slices.Equal(got, want) {
			t.Errorf("ids = %v, want %v (D10: all the brand's fields by id; brand B's %d excluded)", got, want, theirs.ID)
		}
		for _, f := range fields {
			msgWantMembers(t, f, cfgFieldMembers)
			for _, k := range cfgFieldMembers {
				if f[k] == nil {
					t.Errorf("field %v: %s is null (D10: never null)", f["id"], k)
				}
			}
		}
	})
	if len(fields) != 3 {
		t.Fatalf("got %d fields, want 3", len(fields))
	}
	t.Run("AllMembersAsConfigured", func(t *testing.T) {
		want := map[string]any{
			"id": float64(tier.ID), "field_name": "Loyalty Tier", "custom_data_type": float64(3),
			"description": "Customer tier", "subtype": float64(0), "include_in_ai_prompt": true,
			"include_user_answers": true, "is_append": false, "is_auto_collected": true,
			"extraction_prompt": "What tier?", "is_emphasize_current": true, "is_emphasize_personal": true,
		}
		for k, v := range want {
			if fields[0][k] != v {
				t.Errorf("%s = %#v, want %#v (D10: field_name as configured, not snake_cased)", k, fields[0][k], v)
			}
		}
		enum, _ := fields[0]["available_enum_values"].([]any)
		if len(enum) != 2 || enum[0] != "Gold" || enum[1] != "Silver" {
			t.Errorf("available_enum_values = %#v, want [Gold Silver]", fields[0]["available_enum_values"])
		}
		if fields[2]["subtype"] != float64(3) || fields[2]["is_append"] != true || fields[2]["custom_data_type"] != float64(4) {
			t.Errorf("Tags = %#v, want LIST of STRING, is_append", fields[2])
		}
	})
	t.Run("UnsetMembersAreDefaults", func(t *testing.T) {
		b := fields[1]
		want := map[string]any{"field_name": "Birthday", "custom_data_type": float64(6), "description": "",
			"subtype": float64(0), "include_in_ai_prompt": false, "include_user_answers": false, "is_append": false,
			"is_auto_collected": false, "extraction_prompt": "", "is_emphasize_current": false, "is_emphasize_personal": false}
		for k, v := range want {
			if b[k] != v {
				t.Errorf("%s = %#v, want %#v (D10)", k, b[k], v)
			}
		}
		if enum, ok := b["available_enum_values"].([]any); !ok || len(enum) != 0 {
			t.Errorf("available_enum_values = %#v, want [] when unset (D10)", b["available_enum_values"])
		}
	})
	t.Run("OtherBrandSeesOnlyItsOwn", func(t *testing.T) {
		got, _ := cfgGetList(t, e.B, "/custom_data")
		if ids := cfgIDs(got); !slices.Equal(ids, []int64{theirs.ID}) || got[0]["field_name"] != "Shoe Size" {
			t.Errorf("brand B fields = %v, want only its Shoe Size %d (D10)", got, theirs.ID)
		}
	})
}

func TestListCustomFieldsEmpty(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandB.ID, FieldName: "B only", CustomDataType: parley.CustomString})
	_, raw := cfgGetList(t, e.A, "/custom_data")
	if got := string(bytes.TrimSpace(raw)); got != "[]" {
		t.Errorf("body = %s, want [] (D10: an empty list is [], not null)", got)
	}
}

func TestGetBrand(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, tc := range []struct {
		name      string
		c         *client.Client
		wantName  string
		wantPhone string
	}{
		{"BrandAGetsItsOwn", e.A, "Brand A", "+14155550100"},
		{"BrandBGetsItsOwn", e.B, "Brand B", "+14155550101"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := mustDo(t, tc.c, "GET", "/brand", nil)
			if resp.StatusCode != 200 {
				t.Fatalf("status = %d (%s), want 200 (D3)", resp.StatusCode, resp.Body)
			}
			var got map[string]any
			if err := json.Unmarshal(resp.Body, &got); err != nil {
				t.Fatalf("body %s: %v", resp.Body, err)
			}
			msgWantMembers(t, got, []string{"name", "phone_number"})
			if got["name"] != tc.wantName || got["phone_number"] != tc.wantPhone {
				t.Errorf("brand = %v, want {%s %s}: the credential's brand (spec, D10)", got, tc.wantName, tc.wantPhone)
			}
		})
	}
}
