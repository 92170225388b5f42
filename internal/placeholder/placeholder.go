// Package placeholder reads and fills in the placeholders of a message
// body (D21): {{first_name}}, {{last_name}}, {{custom.<key>}} (the D6
// snake_case key of a custom data field) and {{event.<property>}} (only
// where the caller allows it: event-triggered flows), each with an
// optional fallback, {{first_name | "there"}}, used when the value is
// missing or empty. A missing value without a fallback renders empty.
//
// Parse reads a body once (when it is saved, and once per campaign batch);
// Template.Render fills it in per recipient, on the send path, without
// reading the body again.
package placeholder

import (
	"strconv"
	"strings"
)

// Kind is what a placeholder stands for.
type Kind int

// The kinds of placeholder (D21).
const (
	FirstName Kind = iota + 1
	LastName
	Custom // Key is the custom data key
	Event  // Key is the event property, dots into nested objects
)

// Placeholder is one {{…}} of a body.
type Placeholder struct {
	Kind        Kind
	Key         string // Custom and Event only
	Fallback    string
	HasFallback bool
	Text        string // as written, braces included
}

// Name is the placeholder's name as written without spaces:
// first_name, custom.vip_level, event.order_id.
func (p Placeholder) Name() string {
	switch p.Kind {
	case FirstName:
		return "first_name"
	case LastName:
		return "last_name"
	case Custom:
		return "custom." + p.Key
	default:
		return "event." + p.Key
	}
}

// Error is a body that does not parse, or holds a placeholder its caller
// does not allow. Its message is written for the person who typed the
// body.
type Error struct {
	Text string // the {{…}} at fault, or the rest of the body from an unclosed {{
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Template is a parsed body: literal text and placeholders in turn.
type Template struct {
	parts []part
	size  int // bytes of literal text
}

type part struct {
	lit string
	ph  *Placeholder // nil for literal text
}

// Parse reads body. Every "{{" must open a placeholder of a known kind
// with a well-formed name and fallback; anything else is an *Error that
// names it. A body without "{{" is one literal part.
func Parse(body string) (*Template, error) {
	t := &Template{}
	rest := body
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.addLit(rest)
			return t, nil
		}
		t.addLit(rest[:i])
		rest = rest[i:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return nil, &Error{Text: clip(rest), Msg: `"{{" is not closed by "}}": ` + strconv.Quote(clip(rest)) +
				`; a placeholder is written {{first_name}}`}
		}
		text := rest[:j+2]
		p, err := parseOne(text)
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, part{ph: p})
		rest = rest[j+2:]
	}
}

func (t *Template) addLit(s string) {
	if s != "" {
		t.parts = append(t.parts, part{lit: s})
		t.size += len(s)
	}
}

// clip shortens an unclosed "{{…" for an error message.
func clip(s string) string {
	if len(s) > 30 {
		return s[:30] + "…"
	}
	return s
}

// parseOne reads one "{{ name | "fallback" }}".
func parseOne(text string) (*Placeholder, error) {
	inner := strings.TrimSpace(text[2 : len(text)-2])
	p := &Placeholder{Text: text}
	name := inner
	if k := strings.IndexByte(inner, '|'); k >= 0 {
		name = strings.TrimSpace(inner[:k])
		fb, err := parseFallback(strings.TrimSpace(inner[k+1:]))
		if err != nil {
			return nil, &Error{Text: text, Msg: text + `: ` + err.Error()}
		}
		p.Fallback, p.HasFallback = fb, true
	}
	switch {
	case name == "first_name":
		p.Kind = FirstName
	case name == "last_name":
		p.Kind = LastName
	case strings.HasPrefix(name, "custom."):
		p.Kind, p.Key = Custom, name[len("custom."):]
		if !snakeKey(p.Key) {
			return nil, &Error{Text: text, Msg: text + `: a custom field is named by its key in snake_case, such as {{custom.vip_level}}`}
		}
	case strings.HasPrefix(name, "event."):
		p.Kind, p.Key = Event, name[len("event."):]
		if !eventPath(p.Key) {
			return nil, &Error{Text: text, Msg: text + `: an event property is named by letters, digits and _, such as {{event.order_id}}`}
		}
	default:
		return nil, &Error{Text: text, Msg: `unknown placeholder ` + text +
			`: use {{first_name}}, {{last_name}} or {{custom.<key>}}, optionally with a fallback: {{first_name | "there"}}`}
	}
	return p, nil
}

// parseFallback reads a double-quoted fallback; \" and \\ escape.
func parseFallback(s string) (string, error) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", errString(`a fallback is written in double quotes after "|", such as {{first_name | "there"}}`)
	}
	s = s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			i++
			b.WriteByte(s[i])
		case c == '"':
			return "", errString(`a double quote inside a fallback is written \"`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

type errString string

func (e errString) Error() string { return string(e) }

// snakeKey reports whether k is a D6 snake_case key: a-z, 0-9 and _.
func snakeKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// eventPath reports whether k is a property name, or names joined by
// dots into nested objects: letters, digits, _ and -.
func eventPath(k string) bool {
	for seg := range strings.SplitSeq(k, ".") {
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Rules say which placeholders a caller allows.
type Rules struct {
	// Event allows {{event.…}}: event-triggered flows only (D21).
	Event bool
	// CustomKey reports whether a custom data key is a custom field of
	// the brand; nil allows every key.
	CustomKey func(key string) bool
}

// Check returns an *Error for the first placeholder r does not allow.
func (t *Template) Check(r Rules) error {
	for _, p := range t.Placeholders() {
		switch {
		case p.Kind == Event && !r.Event:
			return &Error{Text: p.Text, Msg: p.Text + `: {{event.…}} placeholders are only for flows triggered by an event`}
		case p.Kind == Custom && r.CustomKey != nil && !r.CustomKey(p.Key):
			return &Error{Text: p.Text, Msg: `unknown placeholder ` + p.Text + `: there is no custom data field with the key ` +
				strconv.Quote(p.Key) + ` (create it first, or check the spelling)`}
		}
	}
	return nil
}

// Placeholders returns the template's placeholders in order.
func (t *Template) Placeholders() []Placeholder {
	var out []Placeholder
	for _, p := range t.parts {
		if p.ph != nil {
			out = append(out, *p.ph)
		}
	}
	return out
}

// Static reports whether the template has no placeholder: it renders the
// same for everyone.
func (t *Template) Static() bool {
	for _, p := range t.parts {
		if p.ph != nil {
			return false
		}
	}
	return true
}

// Uses reports whether the template has a placeholder of kind k.
func (t *Template) Uses(k Kind) bool {
	for _, p := range t.parts {
		if p.ph != nil && p.ph.Kind == k {
			return true
		}
	}
	return false
}

// Values are one recipient's: what the placeholders are filled in with.
// An empty string is a missing value (its fallback is used).
type Values struct {
	FirstName, LastName string
	// Custom returns the value of a custom data key; nil: none.
	Custom func(key string) (string, bool)
	// Event returns the value of an event property path; nil: none.
	Event func(path string) (string, bool)
}

// Render fills the template in with v.
func (t *Template) Render(v Values) string {
	if len(t.parts) == 1 && t.parts[0].ph == nil {
		return t.parts[0].lit
	}
	var b strings.Builder
	b.Grow(t.size + 16*len(t.parts))
	for _, p := range t.parts {
		if p.ph == nil {
			b.WriteString(p.lit)
			continue
		}
		s := lookup(p.ph, v)
		if s == "" && p.ph.HasFallback {
			s = p.ph.Fallback
		}
		b.WriteString(s)
	}
	return b.String()
}

func lookup(p *Placeholder, v Values) string {
	switch p.Kind {
	case FirstName:
		return v.FirstName
	case LastName:
		return v.LastName
	case Custom:
		if v.Custom != nil {
			s, _ := v.Custom(p.Key)
			return s
		}
	case Event:
		if v.Event != nil {
			s, _ := v.Event(p.Key)
			return s
		}
	}
	return ""
}
