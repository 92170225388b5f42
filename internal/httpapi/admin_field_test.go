package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestAdminFieldAutoCollection: the admin API sets is_auto_collected,
// extraction_prompt and include_in_ai_prompt on a field's create and on
// its update (#19, D10, D20); v1 GET /custom_data returns them as stored;
// a bad value is a 422 naming its member and changes nothing (D3).
func TestAdminFieldAutoCollection(t *testing.T) {
	t.Parallel()
	e := admEnv(t)
	base := "/brands/" + itoa(e.BrandA.ID) + "/custom_data_fields"
	v1 := func() map[string]any {
		t.Helper()
		fields, _ := cfgGetList(t, e.A, "/custom_data")
		if len(fields) != 1 {
			t.Fatalf("GET /custom_data: %d fields, want 1", len(fields))
		}
		return fields[0]
	}
	wantMembers := func(what string, got map[string]any, want map[string]any) {
		t.Helper()
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %#v, want %#v", what, k, got[k], v)
			}
		}
	}

	prompt := "The contact's clothing size.\nOnly S, M or L.\tNothing else."
	st, f := admDo(t, e, admTok, "POST", base, map[string]any{"field_name": "Size", "custom_data_type": 3,
		"available_enum_values": []string{"S", "M", "L"}, "is_auto_collected": true, "extraction_prompt": prompt,
		"include_in_ai_prompt": true})
	if st != 201 {
		t.Fatalf("create: %d %v", st, f)
	}
	created := map[string]any{"is_auto_collected": true, "extraction_prompt": prompt, "include_in_ai_prompt": true}
	wantMembers("create answer", f, created)
	wantMembers("v1 after create", v1(), created)
	path := base + "/" + itoa(int64(f["id"].(float64)))

	st, f = admDo(t, e, admTok, "POST", path, map[string]any{"is_auto_collected": false, "extraction_prompt": "Size?",
		"include_in_ai_prompt": false})
	if st != 200 {
		t.Fatalf("update: %d %v", st, f)
	}
	updated := map[string]any{"is_auto_collected": false, "extraction_prompt": "Size?", "include_in_ai_prompt": false,
		"field_name": "Size", "custom_data_type": float64(3)}
	wantMembers("update answer", f, updated)
	wantMembers("v1 after update", v1(), updated)

	// Members not sent stay.
	if st, f = admDo(t, e, admTok, "POST", path, map[string]any{"is_auto_collected": true}); st != 200 {
		t.Fatalf("update one member: %d %v", st, f)
	}
	after := map[string]any{"is_auto_collected": true, "extraction_prompt": "Size?", "include_in_ai_prompt": false}
	wantMembers("v1 after a one-member update", v1(), after)
	if enum, _ := v1()["available_enum_values"].([]any); len(enum) != 3 {
		t.Errorf("available_enum_values = %v after an update that did not send it, want [S M L]", enum)
	}

	before, _ := json.Marshal(v1())
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"extraction_prompt": "` + strings.Repeat("x", 2001) + `"}`, "extraction_prompt"},
		{`{"extraction_prompt": "x\u0000"}`, "extraction_prompt"},
		{`{"extraction_prompt": "x\u0007y"}`, "extraction_prompt"},
		{`{"extraction_prompt": null}`, "extraction_prompt"},
		{`{"extraction_prompt": 5}`, "extraction_prompt"},
		{`{"is_auto_collected": "yes"}`, "is_auto_collected"},
		{`{"is_auto_collected": null}`, "is_auto_collected"},
		{`{"include_in_ai_prompt": 1}`, "include_in_ai_prompt"},
		{`{"field_name": "Shirt Size"}`, "field_name"},
		{`{"custom_data_type": 4}`, "custom_data_type"},
		{`{"subtype": 3}`, "subtype"},
		{`{"id": 9}`, "id"},
		{`{"is_append": true}`, "is_append"}, // a STRING field never appends
		{`{"available_enum_values": null}`, "available_enum_values"},
		{`{"is_auto_collected": false, "extraction_prompt": "x\u0000"}`, "extraction_prompt"}, // one bad member fails all
		{`{"colour": "red"}`, "colour"},
	} {
		st, body := admDo(t, e, admTok, "POST", path, json.RawMessage(c.body))
		detail, _ := body["detail"].(map[string]any)
		if st != 422 || detail["type"] != "validation_error" || detail["field"] != c.field {
			t.Errorf("%.60s: %d %v, want 422 validation_error on %q (D3)", c.body, st, body, c.field)
		}
	}
	if got, _ := json.Marshal(v1()); string(got) != string(before) {
		t.Errorf("refused updates changed the field:\n%s\nwas\n%s", got, before)
	}

	// The limit is 2,000 characters, not bytes.
	long := strings.Repeat("é", 2000)
	if st, f := admDo(t, e, admTok, "POST", path, map[string]any{"extraction_prompt": long}); st != 200 || f["extraction_prompt"] != long {
		t.Errorf("a 2,000-character prompt: %d, want 200", st)
	}
	if st, body := admDo(t, e, admTok, "POST", base, map[string]any{"field_name": "Other", "custom_data_type": 3,
		"extraction_prompt": strings.Repeat("x", 2001)}); st != 422 {
		t.Errorf("create with a 2,001-character prompt: %d %v, want 422", st, body)
	}

	// Another brand's field, or none, is 404.
	other := "/brands/" + itoa(e.BrandB.ID) + "/custom_data_fields/" + itoa(int64(f["id"].(float64)))
	for _, p := range []string{other, base + "/999999"} {
		if st, _ := admDo(t, e, admTok, "POST", p, map[string]any{"is_auto_collected": false}); st != 404 {
			t.Errorf("POST %s: %d, want 404", p, st)
		}
	}
	if st, _ := admDo(t, e, "wrong", "POST", path, map[string]any{"is_auto_collected": false}); st != 401 {
		t.Errorf("wrong token: %d, want 401", st)
	}
}
