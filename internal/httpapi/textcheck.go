package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/parleyhq/parley"
)

// linesMembers are the top-level members whose text may span lines: an SMS
// text and the descriptions and prompts an operator writes. Every other
// string — names, addresses, ids, every value inside custom_data — is one
// line (#15).
var linesMembers = map[string]bool{
	"body":              true, // messages, simulated inbound texts
	"description":       true, // webhooks, custom data fields, segments
	"extraction_prompt": true, // custom data fields (D20)
	"help_reply":        true, // brand replies to keywords (D12)
	"stop_reply":        true,
	"start_reply":       true,
}

// linesObjects are the top-level objects whose string members may span
// lines: the brand settings' keyword replies (D22), as the *_reply members.
var linesObjects = map[string]bool{"keyword_replies": true}

// memberCode is the error type of a top-level member whose problems D3
// gives their own type; validation_error for the others.
var memberCode = map[string]string{
	"custom_data":  parley.EInvalidCustomData,
	"phone_number": parley.EInvalidPhoneNumber,
	"postal_code":  parley.EInvalidPostalCode,
}

// checkText refuses a JSON body with a C0 control character in any string,
// nested ones included (parley.ControlCharRule). Every JSON body passes
// here after it decoded, so the rule holds on every endpoint and engine
// alike, and nothing reaches the database. body is valid JSON. carrier
// names a top-level member that stands for a carrier's text (the
// simulator's body): it is stored cleaned, never refused (#31), so it is
// not checked here; "" for none.
func checkText(body []byte, carrier string) error {
	if !mayHoldControl(body) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	return walkText(dec, "", "", carrier)
}

// mayHoldControl reports whether body has an escape that decodes to a
// control character (\b \f \n \r \t \u0000–\u001f): valid JSON carries
// none raw, so most bodies are cleared by this scan alone.
func mayHoldControl(body []byte) bool {
	for i := bytes.IndexByte(body, '\\'); i >= 0 && i+1 < len(body); {
		switch c := body[i+1]; c {
		case 'b', 'f', 'n', 'r', 't':
			return true
		case 'u':
			if i+5 < len(body) && body[i+2] == '0' && body[i+3] == '0' && (body[i+4] == '0' || body[i+4] == '1') {
				return true
			}
		}
		next := bytes.IndexByte(body[i+2:], '\\') // past the escape, so \\ is one
		if next < 0 {
			return false
		}
		i += 2 + next
	}
	return false
}

// walkText reads one value at path; top is its top-level member.
func walkText(dec *json.Decoder, path, top, carrier string) error {
	tok, err := dec.Token()
	if err != nil {
		return nil // cannot happen: the body decoded already
	}
	switch v := tok.(type) {
	case string:
		if path == top && top == carrier {
			break
		}
		if rule := parley.ControlCharRule(v, path == top && linesMembers[top] || linesObjects[top]); rule != "" {
			return textError(path, top, v, rule)
		}
	case json.Delim:
		for i := 0; dec.More(); i++ {
			child := path + "[" + strconv.Itoa(i) + "]"
			if v == '{' {
				key, _ := dec.Token()
				name, _ := key.(string)
				if path == "" {
					child, top = name, name
				} else {
					child = path + "." + name
				}
				if rule := parley.ControlCharRule(name, false); rule != "" {
					return textError(child, top, name, "member names "+rule)
				}
			}
			if err := walkText(dec, child, top, carrier); err != nil {
				return err
			}
		}
		dec.Token() // the closing delimiter
	}
	return nil
}

func textError(field, top, value, rule string) error {
	code := memberCode[top]
	if code == "" {
		code = parley.EValidation
	}
	if code == parley.EInvalidPhoneNumber && field == top { // D5's message
		return &parley.Error{Code: code, Field: field, Message: "Invalid phone number [" + value + "] provided."}
	}
	return parley.FieldError(code, field, rule)
}
