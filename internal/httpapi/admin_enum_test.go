package httpapi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestAdminFieldEnumBounds: available_enum_values holds at most 500
// values of at most 100 characters each (issue #31 item 7, D6, D10): more
// is a 422 naming the member, on create and on update, and changes
// nothing; a list stored before the bounds does not block other changes.
func TestAdminFieldEnumBounds(t *testing.T) {
	t.Parallel()
	e := admEnv(t)
	base := "/brands/" + itoa(e.BrandA.ID) + "/custom_data_fields"
	values := func(n, chars int) []string {
		vs := make([]string, n)
		for i := range vs {
			vs[i] = fmt.Sprintf("v%0*d", chars-1, i)
		}
		return vs
	}
	st, f := admDo(t, e, admTok, "POST", base, map[string]any{"field_name": "Model", "custom_data_type": 3,
		"available_enum_values": values(parley.MaxEnumValues, parley.MaxEnumValueChars), "is_auto_collected": true})
	if st != 201 {
		t.Fatalf("create with 500 values of 100 characters: %d %v", st, f)
	}
	path := base + "/" + itoa(int64(f["id"].(float64)))
	before := e.State(t)
	for _, tc := range []struct {
		name, method, path string
		body               map[string]any
		field              string
	}{
		{"create, 501 values", "POST", base, map[string]any{"field_name": "Other", "custom_data_type": 3,
			"available_enum_values": values(parley.MaxEnumValues+1, 5)}, "available_enum_values: at most 500 values (501 given)"},
		{"create, a value of 101 characters", "POST", base, map[string]any{"field_name": "Other", "custom_data_type": 4,
			"available_enum_values": append(values(3, 5), strings.Repeat("é", 101))}, "available_enum_values[3]: at most 100 characters (101 given)"},
		{"update, 501 values", "POST", path, map[string]any{"available_enum_values": values(parley.MaxEnumValues+1, 5)},
			"available_enum_values: at most 500 values"},
		{"update, a value of 101 characters", "POST", path, map[string]any{"available_enum_values": []string{strings.Repeat("x", 101)}},
			"available_enum_values[0]: at most 100 characters"},
	} {
		st, body := admDo(t, e, admTok, tc.method, tc.path, tc.body)
		detail, _ := body["detail"].(map[string]any)
		if st != 422 || detail["type"] != parley.EValidation || !strings.Contains(fmt.Sprint(detail["msg"]), tc.field) {
			t.Errorf("%s: %d %v, want 422 validation_error %q", tc.name, st, body, tc.field)
		}
	}
	if e.State(t) != before {
		t.Error("a refused field changed the database")
	}
	// A list stored before the bounds (written through the store) does
	// not block turning auto-collection off.
	campExec(t, &campEnv{Env: e}, `UPDATE custom_fields SET available_enum_values = ? WHERE id = ?`,
		`["`+strings.Join(values(parley.MaxEnumValues+100, 5), `","`)+`"]`, int64(f["id"].(float64)))
	if st, f := admDo(t, e, admTok, "POST", path, map[string]any{"is_auto_collected": false}); st != 200 {
		t.Errorf("turning auto-collection off a field with a long stored list: %d %v", st, f)
	}
}
