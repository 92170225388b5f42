package placeholder

import "strings"

// Suspicious returns the brace groups of body that look meant as
// placeholders but are not (D21): single braces such as {first_name},
// and "{{…}}" that do not parse, such as {{ frist_name }}. They are sent
// as they are written; a form shows them as a warning.
func Suspicious(body string) []string {
	var out []string
	for i := 0; i < len(body); i++ {
		if body[i] != '{' {
			continue
		}
		if strings.HasPrefix(body[i:], "{{") {
			j := strings.Index(body[i:], "}}")
			if j < 0 {
				out = append(out, clip(body[i:]))
				return out
			}
			text := body[i : i+j+2]
			if _, err := parseOne(text); err != nil {
				out = append(out, text)
			}
			i += j + 1
			continue
		}
		// A single brace group with a word in it: {first_name}.
		j := strings.IndexAny(body[i+1:], "{}\n")
		if j < 0 || body[i+1+j] != '}' || j == 0 || j > 40 {
			continue
		}
		out = append(out, body[i:i+j+2])
		i += j + 1
	}
	return out
}
