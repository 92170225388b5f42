package service

import (
	"encoding/json"
	"testing"

	"github.com/parleyhq/parley"
)

var fuzzFields = map[string]*parley.CustomField{
	"tier":  {FieldName: "Tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"gold", "silver"}},
	"count": {FieldName: "Count", CustomDataType: parley.CustomInteger},
	"ltv":   {FieldName: "LTV", CustomDataType: parley.CustomFloat},
	"tags":  {FieldName: "Tags", CustomDataType: parley.CustomList, Subtype: parley.CustomString, IsAppend: true},
	"any":   {FieldName: "Any", CustomDataType: parley.CustomList},
	"vip":   {FieldName: "VIP", CustomDataType: parley.CustomBoolean},
	"born":  {FieldName: "Born", CustomDataType: parley.CustomDate},
}

// FuzzCustomData checks that validation never panics, that whatever it
// accepts obeys D6, and that merging accepted input stays within the limits.
func FuzzCustomData(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `"x"`, `{"tier":"gold"}`, `{"tier":"bronze"}`, `{"count":1.0}`, `{"count":1e3}`,
		`{"count":-0}`, `{"count":1e400}`, `{"ltv":-1.5e-3}`, `{"tags":["a","a"]}`, `{"tags":[1]}`,
		`{"any":[{"a":1},true,null]}`, `{"vip":"TrUe"}`, `{"vip":1}`, `{"vip":true}`, `{"born":"02/29/2024"}`,
		`{"born":"2023-02-29"}`, `{"born":"\u0030\u0031/01/2000"}`, `{"tier":"gol\u0064"}`, `{"x":1}`,
		`{"tier":null,"count":null}`, `{"tier":"gold","tier":5}`, `{"count":9007199254740993}`,
	} {
		f.Add(seed, `{"tags":["a"]}`)
	}
	f.Fuzz(func(t *testing.T, input, stored string) {
		upd, err := parseCustomData(json.RawMessage(input), fuzzFields)
		if err != nil {
			if parley.ErrorCode(err) != parley.EInvalidCustomData {
				t.Fatalf("error code %q for %q, want invalid_custom_data", parley.ErrorCode(err), input)
			}
			return
		}
		for key, v := range upd {
			f := fuzzFields[key]
			if f == nil {
				t.Fatalf("accepted unknown key %q", key)
			}
			if v == nil {
				continue
			}
			if !json.Valid(v) {
				t.Fatalf("accepted invalid JSON %q for %q", v, key)
			}
			if v[0] == '{' || v[0] == 't' || v[0] == 'f' {
				t.Fatalf("accepted object or boolean %s for %q (D6)", v, key)
			}
			if rule := checkCustomValue(f, v); rule != "" {
				t.Fatalf("accepted %s for %q though %s", v, key, rule)
			}
		}
		var prev json.RawMessage
		if json.Valid([]byte(stored)) && len(stored) > 0 && stored[0] == '{' {
			prev = json.RawMessage(stored)
		}
		out, err := mergeCustomData(prev, upd, fuzzFields)
		if err != nil {
			return // limits, or a stored document that is not an object
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("merge produced %q: %v", out, err)
		}
		if len(m) > maxCustomKeys || len(out) > maxCustomBytes {
			t.Fatalf("merge exceeded limits: %d keys, %d bytes", len(m), len(out))
		}
		for key, v := range upd {
			if v == nil {
				if _, ok := m[key]; ok {
					t.Fatalf("null did not remove %q", key)
				}
			}
		}
	})
}
