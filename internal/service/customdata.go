package service

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

// custom_data limits per user (D6).
const (
	maxCustomKeys  = 100
	maxCustomBytes = 16 << 10
)

func customErr(key, rule string) *parley.Error {
	field := "custom_data"
	if key != "" {
		field += "." + key
	}
	return parley.FieldError(parley.EInvalidCustomData, field, rule)
}

// customFields returns the brand's fields by custom_data key.
func (s *Service) customFields(ctx context.Context, brandID int64) (map[string]*parley.CustomField, error) {
	list, err := s.db.ListCustomFields(ctx, brandID)
	if err != nil {
		return nil, err
	}
	m := make(map[string]*parley.CustomField, len(list))
	for _, f := range list {
		m[parley.CustomDataKey(f.FieldName)] = f
	}
	return m, nil
}

// parseCustomData checks an input custom_data object against the brand's
// fields (D6). A key whose value is null maps to nil: "remove this key".
func parseCustomData(raw json.RawMessage, fields map[string]*parley.CustomField) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, customErr("", "must be an object or null")
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, customErr("", "must be an object or null")
	}
	if len(in) > maxCustomKeys {
		return nil, customErr("", "at most "+strconv.Itoa(maxCustomKeys)+" keys")
	}
	out := make(map[string]json.RawMessage, len(in))
	for key, v := range in {
		f, ok := fields[key]
		if !ok {
			return nil, customErr(key, "unknown field; keys are the snake_case names of the brand's custom data fields (GET /custom_data)")
		}
		v = bytes.TrimSpace(v)
		if string(v) == "null" {
			out[key] = nil
			continue
		}
		switch v[0] {
		case '{':
			return nil, customErr(key, "objects are not allowed")
		case 't', 'f':
			return nil, customErr(key, `JSON booleans are not allowed; use "true"/"false" or 1/0`)
		}
		if rule := checkCustomValue(f, v); rule != "" {
			return nil, customErr(key, rule)
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, customErr(key, "is not valid JSON")
		}
		out[key] = buf.Bytes()
	}
	return out, nil
}

// checkCustomValue returns the rule v breaks for field f, "" when it is fine.
func checkCustomValue(f *parley.CustomField, v json.RawMessage) string {
	if f.CustomDataType != parley.CustomList {
		if rule := checkScalar(f.CustomDataType, v); rule != "" {
			return rule
		}
		return checkEnum(f.AvailableEnumValues, v)
	}
	if v[0] != '[' {
		return "must be an array (LIST field)"
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return "must be an array (LIST field)"
	}
	for i, item := range items {
		if f.Subtype != 0 {
			if rule := checkScalar(f.Subtype, item); rule != "" {
				return "item " + strconv.Itoa(i) + " " + rule
			}
		}
		if rule := checkEnum(f.AvailableEnumValues, item); rule != "" {
			return "item " + strconv.Itoa(i) + " " + rule
		}
	}
	return ""
}

// checkScalar tests v against a custom data type code (D6).
func checkScalar(typ int, v json.RawMessage) string {
	isString := len(v) > 0 && v[0] == '"'
	isNumber := len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9'))
	switch typ {
	case parley.CustomInteger:
		if !isNumber {
			return "must be a whole number (INTEGER field)"
		}
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return ""
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return "must be a whole number (INTEGER field)"
		}
	case parley.CustomFloat:
		if !isNumber {
			return "must be a number (FLOAT field)"
		}
	case parley.CustomString:
		if !isString {
			return "must be a string (STRING field)"
		}
	case parley.CustomList:
		if len(v) == 0 || v[0] != '[' {
			return "must be an array (LIST field)"
		}
	case parley.CustomBoolean:
		if isNumber && (string(v) == "1" || string(v) == "0") {
			return ""
		}
		var s string
		if isString && json.Unmarshal(v, &s) == nil && (strings.EqualFold(s, "true") || strings.EqualFold(s, "false")) {
			return ""
		}
		return `must be "true", "false", 1 or 0 (BOOLEAN field)`
	case parley.CustomDate:
		var s string
		if isString && json.Unmarshal(v, &s) == nil {
			if _, ok := parseDate(s, "01/02/2006"); ok {
				return ""
			}
			if _, ok := parseDate(s, "2006-01-02"); ok {
				return ""
			}
		}
		return "must be a date string MM/DD/YYYY or YYYY-MM-DD, year 0001 to 9999 (DATE field)"
	}
	return ""
}

// checkEnum tests a scalar against the field's allowed values, when it has any.
func checkEnum(allowed []string, v json.RawMessage) string {
	if len(allowed) == 0 {
		return ""
	}
	s := string(v)
	if len(v) > 0 && v[0] == '"' {
		if json.Unmarshal(v, &s) != nil {
			return "must be one of " + strings.Join(allowed, ", ")
		}
	}
	for _, a := range allowed {
		if a == s {
			return ""
		}
	}
	return "must be one of " + strings.Join(allowed, ", ")
}

// mergeCustomData applies an update to the stored custom_data (D6): null
// removes a key, an is_append LIST gains the new items it lacks, any other
// value replaces. It returns the encoded result.
func mergeCustomData(stored json.RawMessage, upd map[string]json.RawMessage, fields map[string]*parley.CustomField) (json.RawMessage, error) {
	cur := map[string]json.RawMessage{}
	if len(stored) > 0 {
		if err := json.Unmarshal(stored, &cur); err != nil {
			return nil, err
		}
	}
	for key, v := range upd {
		if v == nil {
			delete(cur, key)
			continue
		}
		if f := fields[key]; f != nil && f.CustomDataType == parley.CustomList && f.IsAppend && cur[key] != nil {
			merged, err := appendItems(cur[key], v)
			if err != nil {
				return nil, err
			}
			v = merged
		}
		cur[key] = v
	}
	return encodeCustomData(cur)
}

// appendItems appends the items of add that old lacks, in order.
func appendItems(old, add json.RawMessage) (json.RawMessage, error) {
	var a, b []json.RawMessage
	if err := json.Unmarshal(old, &a); err != nil {
		// The stored value is not a list (the field changed type): replace it.
		return add, nil
	}
	if err := json.Unmarshal(add, &b); err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(a)+len(b))
	for _, it := range a {
		seen[string(it)] = true
	}
	for _, it := range b {
		if !seen[string(it)] {
			seen[string(it)] = true
			a = append(a, it)
		}
	}
	return json.Marshal(a)
}

// encodeCustomData encodes with sorted keys and enforces the size limits.
func encodeCustomData(m map[string]json.RawMessage) (json.RawMessage, error) {
	if len(m) > maxCustomKeys {
		return nil, customErr("", "at most "+strconv.Itoa(maxCustomKeys)+" keys")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if len(b) > maxCustomBytes {
		return nil, customErr("", "at most 16 KiB of JSON")
	}
	return b, nil
}
