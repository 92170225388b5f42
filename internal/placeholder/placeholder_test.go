package placeholder

import (
	"slices"
	"strings"
	"testing"
)

// D21: the placeholders, their fallbacks and a missing value.
func TestRender(t *testing.T) {
	custom := FromMap(map[string]any{"vip_level": "Gold", "points": 1250.0, "member": true, "tags": []any{"a", 2.0}, "none": nil})
	event := FromMap(map[string]any{"order_id": "A-17", "total": 19.5, "ship": map[string]any{"city": "Boston"}})
	full := Values{FirstName: "Ana", LastName: "Ruiz", Custom: custom, Event: event}
	empty := Values{}
	for _, tc := range []struct {
		body string
		v    Values
		want string
	}{
		{"Hi there", full, "Hi there"},
		{"Hi {{first_name}}!", full, "Hi Ana!"},
		{"Hi {{ first_name }} {{last_name}}", full, "Hi Ana Ruiz"},
		{"Hi {{first_name}}!", empty, "Hi !"},
		{`Hi {{first_name | "there"}}!`, empty, "Hi there!"},
		{`Hi {{first_name|"there"}}!`, full, "Hi Ana!"},
		{`{{custom.vip_level}} {{custom.points}} {{custom.member}} {{custom.tags}}`, full, "Gold 1250 true a, 2"},
		{`{{custom.none | "-"}}{{custom.missing}}`, full, "-"},
		{`Order {{event.order_id}} to {{event.ship.city}}, {{event.total}}`, full, "Order A-17 to Boston, 19.5"},
		{`{{event.nope | "soon"}}`, empty, "soon"},
		{`{{first_name | "say \"hi\" \\ bye"}}`, empty, `say "hi" \ bye`},
		{`{{first_name | ""}}x`, empty, "x"},
		{"{first_name} stays", full, "{first_name} stays"},
		{"price }} {", full, "price }} {"},
	} {
		tpl, err := Parse(tc.body)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.body, err)
			continue
		}
		if got := tpl.Render(tc.v); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// D21: an unknown placeholder is refused when saved, with a message that
// names it.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ body, says string }{
		{"Hi {{frist_name}}", "unknown placeholder {{frist_name}}"},
		{"Hi {{ name }}", "unknown placeholder {{ name }}"},
		{"Hi {{first_name", `not closed`},
		{"Hi {{first_name | there}}", "double quotes"},
		{`Hi {{first_name | "a"b"}}`, `written \"`},
		{"{{custom.VIP Level}}", "snake_case"},
		{"{{custom.}}", "snake_case"},
		{"{{event.}}", "event property"},
		{"{{event.a..b}}", "event property"},
		{"{{}}", "unknown placeholder"},
	} {
		_, err := Parse(tc.body)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", tc.body, err, tc.says)
		}
	}
}

// D21: {{event.…}} only where the caller allows it; a custom key that is
// no custom data field of the brand is unknown.
func TestCheck(t *testing.T) {
	known := func(k string) bool { return k == "vip_level" }
	for _, tc := range []struct {
		body string
		r    Rules
		ok   bool
	}{
		{"{{event.order_id}}", Rules{}, false},
		{"{{event.order_id}}", Rules{Event: true}, true},
		{"{{custom.vip_level}}", Rules{CustomKey: known}, true},
		{"{{custom.vip_levl}}", Rules{CustomKey: known}, false},
		{"{{custom.anything}}", Rules{}, true},
		{"{{first_name}}", Rules{CustomKey: known}, true},
	} {
		tpl, err := Parse(tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if err := tpl.Check(tc.r); (err == nil) != tc.ok {
			t.Errorf("Check(%q, %+v) = %v, want ok %v", tc.body, tc.r, err, tc.ok)
		}
	}
}

func TestStaticAndUses(t *testing.T) {
	tpl, _ := Parse("Hi {{custom.a}}")
	if tpl.Static() || !tpl.Uses(Custom) || tpl.Uses(FirstName) {
		t.Error("Hi {{custom.a}}: want not static, uses custom only")
	}
	if tpl, _ := Parse("Hi {a}"); !tpl.Static() {
		t.Error("Hi {a}: want static")
	}
	if got := tpl.Placeholders()[0].Name(); got != "custom.a" {
		t.Errorf("Name = %q", got)
	}
}

// D21 (console): braces that look meant as placeholders but are not.
func TestSuspicious(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"Hi {first_name}, {{ frist_name }} and {{first_name}}", []string{"{first_name}", "{{ frist_name }}"}},
		{"Hi {{first_name}}", nil},
		{"a { b } c {}", []string{"{ b }"}},
		{"open {{first_name", []string{"{{first_name"}},
		{"no braces", nil},
	} {
		if got := Suspicious(tc.body); !slices.Equal(got, tc.want) {
			t.Errorf("Suspicious(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// The send path renders every campaign message: one Render per recipient.
func BenchmarkRender(b *testing.B) {
	tpl, err := Parse(`Hi {{first_name | "there"}}, your {{custom.vip_level}} points expire soon. Reply STOP to opt out.`)
	if err != nil {
		b.Fatal(err)
	}
	v := Values{FirstName: "Ana", Custom: FromMap(map[string]any{"vip_level": "Gold"})}
	b.ReportAllocs()
	for b.Loop() {
		_ = tpl.Render(v)
	}
}

func BenchmarkRenderStatic(b *testing.B) {
	tpl, _ := Parse("Our sale starts today. Reply STOP to opt out.")
	b.ReportAllocs()
	for b.Loop() {
		_ = tpl.Render(Values{})
	}
}
