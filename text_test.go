package parley_test

import (
	"testing"

	"github.com/parleyhq/parley"
)

// TestControlCharRule: C0 control characters are refused in text (#15);
// tab, LF and CR only where a member allows lines.
func TestControlCharRule(t *testing.T) {
	for _, c := range []struct {
		s     string
		lines bool
		bad   bool
	}{
		{"Ann", false, false},
		{"Ünal ☃ 𝄞", false, false},
		{"", false, false},
		{"a\x00b", false, true},
		{"a\x00b", true, true},
		{"\x01", true, true},
		{"\x1f", false, true},
		{"\x1b[31m", true, true},
		{"\x7f", false, false}, // DEL is not C0
		{"a\tb", false, true},
		{"a\nb", false, true},
		{"a\rb", false, true},
		{"a\tb\r\nc", true, false},
		{"\t=1+1", false, true},
	} {
		rule := parley.ControlCharRule(c.s, c.lines)
		if (rule != "") != c.bad {
			t.Errorf("ControlCharRule(%q, lines=%v) = %q, want refused %v", c.s, c.lines, rule, c.bad)
		}
	}
	if got, want := parley.ControlCharRule("a\x00", false), "must not contain control characters (U+0000 at character 2)"; got != want {
		t.Errorf("rule = %q, want %q", got, want)
	}
	if got, want := parley.ControlCharRule("é\x07", true), "must not contain control characters other than tab, line feed and carriage return (U+0007 at character 2)"; got != want {
		t.Errorf("rule = %q, want %q", got, want)
	}
}
