package parley

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ControlCharRule returns the rule s breaks as the value of a text member,
// "" when it breaks none: text holds no C0 control character (U+0000 to
// U+001F), except tab, line feed and carriage return in a member that
// allows lines. NUL is the reason it exists: PostgreSQL cannot store it in
// text and SQLite can, so both engines must be spared it before they
// differ (#15); the other controls garble logs, terminals and CSV files.
func ControlCharRule(s string, lines bool) string {
	n := 0
	for _, r := range s {
		n++
		if !refusedControl(r, lines) {
			continue
		}
		if lines {
			return fmt.Sprintf("must not contain control characters other than tab, line feed and carriage return (U+%04X at character %d)", r, n)
		}
		return fmt.Sprintf("must not contain control characters (U+%04X at character %d)", r, n)
	}
	return ""
}

// refusedControl reports whether ControlCharRule refuses r.
func refusedControl(r rune, lines bool) bool {
	return r < 0x20 && !(lines && (r == '\t' || r == '\n' || r == '\r'))
}

// CarrierText is a text from a carrier (or the simulator, which stands in
// for one) as Parley stores it (#31): a carrier's message is never refused,
// so what ControlCharRule refuses in a message body and invalid UTF-8 become
// U+FFFD, and the text is cut after MaxMessageBody characters; truncated
// reports the cut.
func CarrierText(s string) (text string, truncated bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if ControlCharRule(s, true) == "" && utf8.RuneCountInString(s) <= MaxMessageBody {
		return s, false
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n == MaxMessageBody {
			return b.String(), true
		}
		if refusedControl(r, true) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		n++
	}
	return b.String(), false
}
