package audience

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Kinds of a custom_data value, as the SQL compiler tells them apart
// (json_type / json_typeof).
const (
	kMissing uint8 = iota // no key, or JSON null
	kString
	kNumber
	kNumber0 // a number written "0": PostgreSQL's BOOLEAN test compares the text
	kNumber1 // a number written "1"
	kTrue    // JSON true / false: neither a BOOLEAN's value (D6 stores
	kFalse   // "true"/"false" or 1/0) nor any other type's
	kArray
	kObject
)

// item is an element of a LIST value.
type item struct {
	str bool // a JSON string (s lowered)
	s   string
	num bool // a JSON number n
	n   float64
}

// customCol holds one custom_data key. Its slices may be shorter than
// the table: rows past their end are missing.
type customCol struct {
	kind []uint8
	num  []float64 // allocated at the first number
	str  *textCol  // allocated at the first string
	list map[int32][]item
}

// set stores the JSON value v at row i; scratch is the caller's buffer
// for lowering text.
func (c *customCol) set(i int, v []byte, scratch *[]byte) {
	k, num, s, items := parseValue(v)
	if k == kMissing && i >= len(c.kind) {
		return
	}
	for len(c.kind) <= i {
		c.kind = append(c.kind, kMissing)
	}
	prev := c.kind[i]
	c.kind[i] = k
	switch k {
	case kNumber, kNumber0, kNumber1:
		for len(c.num) <= i {
			c.num = append(c.num, 0)
		}
		c.num[i] = num
	case kString:
		if c.str == nil {
			c.str = newTextCol()
		}
		*scratch = lowerAppend((*scratch)[:0], s)
		c.str.setBytes(i, *scratch, true)
	case kArray:
		if c.list == nil {
			c.list = map[int32][]item{}
		}
		c.list[int32(i)] = items
	}
	if prev == kString && k != kString {
		c.str.set(i, "", false)
	}
	if prev == kArray && k != kArray {
		delete(c.list, int32(i))
	}
}

// clear makes row i missing.
func (c *customCol) clear(i int) {
	if i < len(c.kind) && c.kind[i] != kMissing {
		c.set(i, nil, nil)
	}
}

func (c *customCol) permute(perm []int32) {
	c.kind = permuted(c.kind, perm)
	if c.num != nil {
		c.num = permuted(c.num, perm)
	}
	if c.str != nil {
		c.str.permute(perm)
	}
	if c.list != nil {
		inv := make(map[int32]int32, len(c.list))
		for i, p := range perm {
			if _, ok := c.list[p]; ok {
				inv[p] = int32(i)
			}
		}
		list := make(map[int32][]item, len(c.list))
		for p, items := range c.list {
			list[inv[p]] = items
		}
		c.list = list
	}
}

func (c *customCol) bytes() int64 {
	n := int64(len(c.kind)) + int64(len(c.num))*8 + int64(len(c.list))*64
	if c.str != nil {
		n += c.str.bytes()
	}
	return n
}

// parseValue reads one JSON value as the SQL compiler's tests see it; a
// string's text (not lowered) may share v's bytes.
func parseValue(v []byte) (k uint8, num float64, s []byte, items []item) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return kMissing, 0, nil, nil
	}
	switch v[0] {
	case 'n':
		return kMissing, 0, nil, nil
	case 't':
		return kTrue, 0, nil, nil
	case 'f':
		return kFalse, 0, nil, nil
	case '"':
		return kString, 0, jsonBytes(v), nil
	case '{':
		return kObject, 0, nil, nil
	case '[':
		var raw []json.RawMessage
		if json.Unmarshal(v, &raw) != nil {
			return kMissing, 0, nil, nil
		}
		items = make([]item, 0, len(raw))
		for _, e := range raw {
			ek, en, es, _ := parseValue(e)
			switch ek {
			case kString:
				items = append(items, item{str: true, s: string(lowerAppend(nil, es))})
			case kNumber, kNumber0, kNumber1:
				items = append(items, item{num: true, n: en})
			default:
				items = append(items, item{})
			}
		}
		return kArray, 0, nil, items
	}
	f, err := parseJSONNumber(v)
	if err != nil {
		return kMissing, 0, nil, nil
	}
	switch string(v) {
	case "0":
		return kNumber0, f, nil, nil
	case "1":
		return kNumber1, f, nil, nil
	}
	return kNumber, f, nil, nil
}

// parseJSONNumber reads a JSON number; a small integer (most custom data)
// without strconv's conversion to a string.
func parseJSONNumber(v []byte) (float64, error) {
	if len(v) > 0 && len(v) < 16 {
		n, neg, digits := 0.0, v[0] == '-', v
		if neg {
			digits = v[1:]
		}
		ok := len(digits) > 0 && (digits[0] != '0' || len(digits) == 1)
		for _, c := range digits {
			if c < '0' || c > '9' {
				ok = false
				break
			}
			n = n*10 + float64(c-'0')
		}
		if ok {
			if neg {
				n = -n
			}
			return n, nil
		}
	}
	return strconv.ParseFloat(string(v), 64)
}

// jsonBytes is a JSON string literal's text: its bytes without escapes,
// else decoded.
func jsonBytes(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 && len(v) >= 2 {
		return v[1 : len(v)-1]
	}
	return []byte(jsonString(v))
}

// jsonString decodes a JSON string literal; one without escapes is its
// bytes.
func jsonString(v []byte) string {
	if bytes.IndexByte(v, '\\') < 0 && len(v) >= 2 {
		return string(v[1 : len(v)-1])
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// eachMember calls fn with every top-level key and value of a JSON object;
// anything else has none. Custom data is a flat object written by the
// server, so it is scanned in place (a load parses a million of them);
// anything the scanner does not expect goes to encoding/json.
func eachMember(doc []byte, fn func(key, v []byte)) {
	doc = bytes.TrimSpace(doc)
	if len(doc) == 0 || doc[0] != '{' {
		return
	}
	type member struct {
		key, v []byte
	}
	var members [16]member
	found := members[:0]
	if scanObject(doc, func(k, v []byte) { found = append(found, member{k, v}) }) {
		for _, m := range found {
			fn(m.key, m.v)
		}
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return
	}
	for k, v := range m {
		fn([]byte(k), v)
	}
}

// scanObject walks {"key": value, …}, reporting false at anything
// unexpected; fn may have seen some members by then, so the caller
// buffers them.
func scanObject(doc []byte, fn func(key, v []byte)) bool {
	i := skipSpace(doc, 1)
	if i < len(doc) && doc[i] == '}' {
		return skipSpace(doc, i+1) == len(doc)
	}
	for i < len(doc) {
		if doc[i] != '"' {
			return false
		}
		end := stringEnd(doc, i)
		if end < 0 {
			return false
		}
		key := jsonBytes(doc[i:end])
		i = skipSpace(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return false
		}
		i = skipSpace(doc, i+1)
		vend := valueEnd(doc, i)
		if vend < 0 {
			return false
		}
		fn(key, doc[i:vend])
		i = skipSpace(doc, vend)
		if i >= len(doc) {
			return false
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return skipSpace(doc, i+1) == len(doc)
		default:
			return false
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// valueEnd returns the index after the value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i || !json.Valid(b[i:j]) {
		return -1
	}
	return j
}
