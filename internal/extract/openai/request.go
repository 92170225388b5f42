package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/parleyhq/parley/internal/extract"
)

// chatRequest is the body of POST /v1/chat/completions. It has no
// temperature or token limit: some models refuse any temperature but their
// default, and the schema keeps the answer short.
type chatRequest struct {
	Model          string         `json:"model"`
	Messages       []chatMessage  `json:"messages"`
	ResponseFormat responseFormat `json:"response_format"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type responseFormat struct {
	Type       string     `json:"type"` // "json_schema"
	JSONSchema jsonSchema `json:"json_schema"`
}

type jsonSchema struct {
	Name   string         `json:"name"`
	Strict bool           `json:"strict"`
	Schema map[string]any `json:"schema"`
}

// schemaName names the schema for the server; OpenAI wants [a-zA-Z0-9_-]{1,64}.
const schemaName = "custom_data"

// newChatRequest builds the request for r, whose inbound message trigger
// started the extraction.
func newChatRequest(model string, r extract.Request, trigger int) chatRequest {
	return chatRequest{
		Model: model,
		Messages: []chatMessage{
			{Role: "system", Content: systemPrompt(r)},
			{Role: "user", Content: transcript(r, trigger)},
		},
		ResponseFormat: responseFormat{Type: "json_schema", JSONSchema: jsonSchema{
			Name: schemaName, Strict: true, Schema: schema(r.Fields),
		}},
	}
}

// systemPrompt states the task, each field's D20 flags, today's date and the
// current values of Request.Known.
func systemPrompt(r extract.Request) string {
	var b strings.Builder
	b.WriteString("You read a text message conversation between a brand and one of its contacts, " +
		"and fill in the contact's profile fields from what the contact says. " +
		"Answer with a JSON object holding every field of the schema. A field's value is null " +
		"unless the contact's messages state it clearly: never guess, and never take a value " +
		"from the brand's messages alone (a brand's question only tells what the contact's reply answers). " +
		"Each field's description says what it holds; use its allowed values exactly as written. " +
		"Dates are YYYY-MM-DD; a date without a year is null.\n")
	if !r.Now.IsZero() {
		fmt.Fprintf(&b, "Today is %s.\n", r.Now.Format("Monday, 2006-01-02"))
	}
	b.WriteString("\nHow to read each field:\n")
	for _, f := range r.Fields {
		fmt.Fprintf(&b, "- %s:", f.Key)
		if f.IncludeUserAnswers {
			b.WriteString(" read all of the contact's messages.")
		} else {
			b.WriteString(" read only the contact's last message.")
		}
		if f.EmphasizeCurrent {
			b.WriteString(" When statements disagree, take the latest one.")
		} else {
			b.WriteString(" When statements disagree, answer null.")
		}
		if f.EmphasizePersonal {
			b.WriteString(" Only statements about the contact themself count, not about anyone else " +
				"(\"my son's size is S\" is not the contact's size).")
		}
		b.WriteByte('\n')
	}
	if len(r.Known) > 0 {
		known, _ := json.Marshal(r.Known) // keys sorted: the same request for the same values
		b.WriteString("\nWhat is already known about the contact (context; answer null for a field " +
			"unless the conversation states its value):\n")
		b.Write(compact(known))
		b.WriteByte('\n')
	}
	return b.String()
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// line is one message of the transcript.
type line struct {
	From string `json:"from"` // "brand" or "contact"
	Text string `json:"text"`
}

// transcript is the conversation the model reads, as JSON so that a text
// cannot pass itself off as another speaker. Without a field that reads
// earlier answers (include_user_answers), only the trigger and the brand's
// message before it are sent: the others would be read for nothing. Times
// and media are left out.
func transcript(r extract.Request, trigger int) string {
	all := false
	for _, f := range r.Fields {
		all = all || f.IncludeUserAnswers
	}
	var lines []line
	for i, m := range r.Conversation[:trigger+1] {
		if strings.TrimSpace(m.Body) == "" {
			continue
		}
		if !all && i != trigger {
			continue
		}
		who := "brand"
		if m.Inbound {
			who = "contact"
		}
		lines = append(lines, line{who, m.Body})
	}
	if !all {
		for i := trigger - 1; i >= 0; i-- {
			if m := r.Conversation[i]; !m.Inbound && strings.TrimSpace(m.Body) != "" {
				lines = append([]line{{"brand", m.Body}}, lines...)
				break
			}
		}
	}
	b, _ := marshal(lines)
	return "The conversation, oldest message first; the last one is the contact's latest:\n" + string(b)
}

// marshal is json.Marshal without the HTML escapes (<, >, & stay as they are).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// schema is the strict JSON schema of the answer: one property per field,
// each required and nullable (OpenAI's strict mode wants every property
// required; null is "no answer").
func schema(fs []extract.Field) map[string]any {
	props := make(map[string]any, len(fs))
	required := make([]string, 0, len(fs))
	for _, f := range fs {
		var p map[string]any
		if f.Type == extract.List {
			p = map[string]any{"type": []any{"array", "null"}, "items": valueSchema(f.Subtype, f.Enum, false)}
		} else {
			p = valueSchema(f.Type, f.Enum, true)
		}
		p["description"] = description(f)
		props[f.Key] = p
		required = append(required, f.Key)
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

// valueSchema is the schema of one value of D6 type typ (an item's subtype
// for lists, 0 when unset).
func valueSchema(typ int, enum []string, nullable bool) map[string]any {
	var t string
	s := map[string]any{}
	switch typ {
	case extract.Integer:
		t = "integer"
	case extract.Float:
		t = "number"
	case extract.Boolean:
		t = "boolean"
		enum = nil // true or false says it all
	case extract.Date:
		t = "string"
		s["format"] = "date"
	case extract.String:
		t = "string"
	default: // a list item without a subtype
		if len(enum) == 0 {
			s["type"] = []any{"string", "number"}
			return s
		}
		t = "string"
	}
	if nullable {
		s["type"] = []any{t, "null"}
	} else {
		s["type"] = t
	}
	if len(enum) > 0 {
		vals := make([]any, 0, len(enum)+1)
		for _, e := range enum {
			if t == "integer" || t == "number" {
				n, ok := number(e)
				if !ok || t == "integer" && n != math.Trunc(n) {
					continue // an enum value the type cannot hold: never valid
				}
				vals = append(vals, json.Number(e))
				continue
			}
			vals = append(vals, e)
		}
		if nullable {
			vals = append(vals, nil) // strict mode: a nullable enum lists null
		}
		s["enum"] = vals
	}
	return s
}

// description tells the model what a field holds: its name and its
// extraction_prompt, and the form of its values.
func description(f extract.Field) string {
	d := f.Name
	if p := strings.TrimSpace(f.Prompt); p != "" {
		d += ": " + p
	}
	if !strings.HasSuffix(d, ".") {
		d += "."
	}
	switch f.Type {
	case extract.Date:
		d += " A date, YYYY-MM-DD."
	case extract.Integer:
		d += " A whole number."
	case extract.List:
		d += " A list; null when none is named."
	}
	return d
}
