package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/extract"
)

// maxText bounds a STRING value: an answer to a profile field, not an essay
// (D6 allows 16 KiB of custom data per contact in all).
const maxText = 500

// values reads the model's answer, content: the values that pass D6, in the
// order of r.Fields, each From the message that started the extraction. The
// rest is dropped and logged by key and reason; values are never logged.
func (x *Extractor) values(r extract.Request, content string, from int) []extract.Value {
	if strings.TrimSpace(content) == "" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &m); err != nil || m == nil {
		x.log.Warn("openai extractor: the answer is not a JSON object; nothing kept")
		return nil
	}
	fields := make(map[string]bool, len(r.Fields))
	var out []extract.Value
	for _, f := range r.Fields {
		if fields[f.Key] {
			continue // at most one value per key
		}
		fields[f.Key] = true
		raw, ok := m[f.Key]
		if !ok {
			continue
		}
		v, why := check(f, raw)
		if why != "" {
			x.log.Warn("openai extractor: value dropped", "key", f.Key, "reason", why)
			continue
		}
		if v != nil {
			out = append(out, extract.Value{Key: f.Key, Value: v, From: from})
		}
	}
	unknown := 0
	for k := range m {
		if !fields[k] {
			unknown++
		}
	}
	if unknown > 0 {
		// Their names are the model's words, which may quote the contact:
		// counted, not logged.
		x.log.Warn("openai extractor: values for keys that are no field dropped", "count", unknown)
	}
	return out
}

// check returns v as D6 stores it for field f; nil and "" when v is no
// answer (null, "", []); else why v is unusable.
func check(f extract.Field, v json.RawMessage) (json.RawMessage, string) {
	v = bytes.TrimSpace(v)
	if string(v) == "null" {
		return nil, ""
	}
	if f.Type != extract.List {
		return scalar(f.Type, f.Enum, v)
	}
	var items []json.RawMessage
	if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &items) != nil {
		return nil, "not an array (LIST field)"
	}
	out := make([]json.RawMessage, 0, len(items))
	seen := map[string]bool{}
	for _, it := range items {
		iv, why := scalar(f.Subtype, f.Enum, bytes.TrimSpace(it))
		if why == "" && iv == nil {
			why = "null or empty"
		}
		if why != "" {
			// A list with a bad item is dropped whole: a part of the
			// contact's answer would read as all of it.
			return nil, "an item is " + why
		}
		if !seen[string(iv)] {
			seen[string(iv)] = true
			out = append(out, iv)
		}
	}
	if len(out) == 0 {
		return nil, ""
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, "not an array (LIST field)"
	}
	return b, ""
}

// scalar checks one value of D6 type typ (0: a list item of no subtype,
// a string or a number) against enum, and returns it as D6 stores it,
// written as the enum value it matched.
func scalar(typ int, enum []string, v json.RawMessage) (json.RawMessage, string) {
	if string(v) == "null" {
		return nil, ""
	}
	if typ == 0 {
		typ = extract.String
		if isNumber(string(v)) {
			typ = extract.Float
		}
	}
	switch typ {
	case extract.Integer, extract.Float:
		n, ok := number(string(v))
		if !ok {
			return nil, "not a number"
		}
		if typ == extract.Integer && (n != math.Trunc(n) || math.Abs(n) > 1<<53) {
			return nil, "not a whole number (INTEGER field)"
		}
		if len(enum) > 0 {
			for _, e := range enum {
				if en, ok := number(e); ok && en == n {
					return json.RawMessage(e), ""
				}
			}
			return nil, "not one of the allowed values"
		}
		if typ == extract.Integer {
			if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
				return json.RawMessage(strconv.FormatInt(int64(n), 10)), "" // 3.0 → 3
			}
		}
		return v, ""
	case extract.Boolean:
		var s string
		switch string(v) {
		case "true", "false":
			s = string(v)
		default:
			return nil, "not true or false (BOOLEAN field)"
		}
		return enumString(enum, s, s)
	case extract.Date:
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, "not a string (DATE field)"
		}
		t, err := time.Parse("2006-01-02", strings.TrimSpace(s))
		if err != nil || !parley.InYearRange(t) {
			return nil, "not a date YYYY-MM-DD (DATE field)"
		}
		us := t.Format("01/02/2006") // as the rules extractor writes dates
		return enumString(enum, us, t.Format("2006-01-02"))
	default: // STRING
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, "not a string"
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, ""
		}
		if !utf8.ValidString(s) {
			return nil, "not valid UTF-8"
		}
		if rule := parley.ControlCharRule(s, false); rule != "" {
			return nil, "holds control characters"
		}
		if utf8.RuneCountInString(s) > maxText {
			return nil, "longer than " + strconv.Itoa(maxText) + " characters"
		}
		return enumString(enum, s, s)
	}
}

// enumString returns s as a JSON string; with enum set, the enum value
// equal to s or alt (ASCII case ignored), as the enum spells it.
func enumString(enum []string, s, alt string) (json.RawMessage, string) {
	if len(enum) > 0 {
		found := false
		for _, e := range enum {
			if strings.EqualFold(e, s) || strings.EqualFold(e, alt) {
				s, found = e, true
				break
			}
		}
		if !found {
			return nil, "not one of the allowed values"
		}
	}
	b, err := marshal(s)
	if err != nil {
		return nil, "not a string"
	}
	return b, ""
}

// isNumber reports whether s is a JSON number literal.
func isNumber(s string) bool {
	return s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') && json.Valid([]byte(s))
}

// number parses a JSON number literal that a float64 holds.
func number(s string) (float64, bool) {
	if !isNumber(s) {
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	return n, err == nil && !math.IsInf(n, 0)
}
