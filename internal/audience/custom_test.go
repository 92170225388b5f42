package audience

import (
	"encoding/json"
	"maps"
	"testing"
)

// TestEachMemberScansAsEncodingJSON: the in-place scanner of custom data
// reads the members encoding/json reads, whatever the spacing, nesting
// and escapes, and gives up (to encoding/json) on anything else.
func TestEachMemberScansAsEncodingJSON(t *testing.T) {
	for _, doc := range []string{
		`{}`, ` { } `, `{"a":1}`, `{ "a" : 1 , "b" : "x,}" }`, `{"t":"a\"b\\","n":-1.5e3,"z":null,"b":true}`,
		`{"l":["x",{"y":[1,"]"]},2],"o":{"p":{"q":"}"}}}`, "{\n\t\"a\":\t\"\\u00e9\"\n}", `{"a":1,"a":2}`,
		`{"a":}`, `{"a":1,}`, `[1]`, `{"a":tru}`, `{"a":"unterminated}`, `{"a":1}x`, `null`, ``,
	} {
		want := map[string]string{}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(doc), &m) == nil {
			for k, v := range m {
				want[k] = string(v)
			}
		}
		got := map[string]string{}
		eachMember([]byte(doc), func(kb, v []byte) {
			k := string(kb)
			var a, b any
			json.Unmarshal(v, &a)
			json.Unmarshal([]byte(want[k]), &b)
			if ja, jb := mustJSON(a), mustJSON(b); ja == jb {
				got[k] = want[k]
			} else {
				got[k] = string(v)
			}
		})
		if !maps.Equal(got, want) {
			t.Errorf("%q: scanned %v, encoding/json %v", doc, got, want)
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
