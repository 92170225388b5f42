package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

func badRequest(msg string) *parley.Error {
	return &parley.Error{Code: parley.EInvalidRequest, Message: msg}
}

// checkJSONContentType insists on application/json (D3).
func checkJSONContentType(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return badRequest("Content-Type must be application/json")
	}
	return nil
}

// decodeJSON decodes a JSON object body into v, rejecting unknown members
// (D4) and control characters in any string (checkText, #15). notAllowed names members that exist elsewhere in the API but not in
// this body, so the message can say so ("phone_number: not allowed on update").
func decodeJSON(body []byte, v any, notAllowed map[string]string) error {
	if err := decodeJSONObject(body, v, notAllowed); err != nil {
		return err
	}
	return checkText(body, "")
}

// decodeJSONObject is decodeJSON without the text check.
func decodeJSONObject(body []byte, v any, notAllowed map[string]string) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return badRequest("request body must be a JSON object")
	}
	if trimmed[0] != '{' {
		if json.Valid(trimmed) {
			return badRequest("request body must be a JSON object")
		}
		return badRequest("request body is not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err, notAllowed)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("request body is not valid JSON: data after the object")
	}
	return nil
}

func decodeError(err error, notAllowed map[string]string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var pe *parley.Error
	switch {
	case errors.As(err, &pe):
		return pe // a member's own decoder names the fault (parley.Criteria)
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: "))
	case errors.As(err, &typ):
		field := typ.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:] // drop the embedded struct's name
		}
		if field == "" {
			return badRequest("request body must be a JSON object")
		}
		return parley.FieldError(parley.EValidation, field, "must be "+kindName(typ.Type))
	}
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, uerr := strconv.Unquote(rest)
		if uerr != nil {
			name = rest
		}
		if why, ok := notAllowed[name]; ok {
			return parley.FieldError(parley.EValidation, name, why)
		}
		return parley.FieldError(parley.EValidation, name, "unknown field")
	}
	return badRequest("request body is not valid JSON")
}

// kindName describes the JSON a Go type wants, for "must be …" messages.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(kindName(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another type"
}

// pathID parses a path id (D3: not an integer ≥ 1 → 422 validation_error).
// Only the canonical decimal form is an id: "+1" and "01" are not.
func pathID(r *http.Request, name string) (int64, error) {
	v := r.PathValue(name)
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id < 1 || v[0] == '+' || v[0] == '0' {
		return 0, parley.FieldError(parley.EValidation, name, "must be an integer ≥ 1")
	}
	return id, nil
}
