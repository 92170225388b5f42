package parley_test

import (
	"strings"
	"testing"
	"unicode/utf8"

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

// TestCarrierText: a carrier's text is stored, never refused (#31 item 8):
// refused controls and invalid UTF-8 become U+FFFD, lines stay, and the
// text is cut after MaxMessageBody characters with the cut reported.
func TestCarrierText(t *testing.T) {
	long := strings.Repeat("é", parley.MaxMessageBody)
	for _, c := range []struct {
		in, want  string
		truncated bool
	}{
		{"hello", "hello", false},
		{"a\x00b", "a\uFFFDb", false},
		{"line 1\r\nline 2\tend", "line 1\r\nline 2\tend", false},
		{"\x1b[31mred\x07", "\uFFFD[31mred\uFFFD", false},
		{"bad \xff\xfe utf-8", "bad \uFFFD utf-8", false},
		{long, long, false},
		{long + "x", long, true},
		{"\x00" + long, "\uFFFD" + long[:len(long)-len("é")], true},
	} {
		got, cut := parley.CarrierText(c.in)
		if got != c.want || cut != c.truncated {
			t.Errorf("CarrierText(%.20q…) = %.20q… (%d chars), %v; want %.20q… (%d chars), %v",
				c.in, got, utf8.RuneCountInString(got), cut, c.want, utf8.RuneCountInString(c.want), c.truncated)
		}
		if rule := parley.ControlCharRule(got, true); rule != "" || !utf8.ValidString(got) {
			t.Errorf("CarrierText(%.20q) = %.20q still breaks the text rules: %s", c.in, got, rule)
		}
	}
}
