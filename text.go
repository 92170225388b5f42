package parley

import "fmt"

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
		if r >= 0x20 || (lines && (r == '\t' || r == '\n' || r == '\r')) {
			continue
		}
		if lines {
			return fmt.Sprintf("must not contain control characters other than tab, line feed and carriage return (U+%04X at character %d)", r, n)
		}
		return fmt.Sprintf("must not contain control characters (U+%04X at character %d)", r, n)
	}
	return ""
}
