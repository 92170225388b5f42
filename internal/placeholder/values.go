package placeholder

import (
	"strconv"
	"strings"
)

// FromMap returns a lookup of the values of a decoded JSON object (a
// contact's custom data, an event's properties) for Values.Custom and
// Values.Event: a path's dots walk into nested objects; strings are
// themselves, numbers are written without exponent, booleans true or
// false, lists their items joined by ", "; null and objects are
// missing.
func FromMap(m map[string]any) func(string) (string, bool) {
	return func(path string) (string, bool) {
		var v any = m
		for seg := range strings.SplitSeq(path, ".") {
			obj, ok := v.(map[string]any)
			if !ok {
				return "", false
			}
			if v, ok = obj[seg]; !ok {
				return "", false
			}
		}
		return Format(v)
	}
}

// Format writes a JSON value as a message shows it.
func Format(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case int:
		return strconv.Itoa(v), true
	case []any: // a LIST field: its items, comma-separated
		items := make([]string, 0, len(v))
		for _, e := range v {
			if s, ok := Format(e); ok {
				items = append(items, s)
			}
		}
		return strings.Join(items, ", "), len(items) > 0
	}
	return "", false
}
