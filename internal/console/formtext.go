package console

import (
	"errors"
	"mime"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
)

// MaxForm bounds a posted form's body (an upload has its own bound).
const MaxForm = 1 << 20

// checkForm reads a posted urlencoded form up front and answers what the
// API answers a body (#15, #31): over MaxForm is 413; a body that does
// not arrive within the body timeout, or breaks off, is 400 (logged as
// the client's fault, not an ERROR); a value that is not text — NUL or
// invalid UTF-8 (D3) — is 422, since the forms call the service directly,
// past the API's check of JSON text, and PostgreSQL refuses such a value
// as a parameter (a 500) where SQLite would store it. Only urlencoded
// forms are read here: a multipart upload (imports) is streamed by its
// handler, which bounds and checks it itself.
func (x *Ctx) checkForm() error {
	if x.R.Method != http.MethodPost {
		return nil
	}
	if ct, _, _ := mime.ParseMediaType(x.R.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return nil
	}
	x.R.Body = http.MaxBytesReader(x.W, x.R.Body, MaxForm)
	if err := x.R.ParseForm(); err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.As(err, &mb):
			return &parley.Error{Code: parley.EPayloadTooLarge,
				Message: "The form is too large: at most 1 MiB. Nothing was changed."}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return &parley.Error{Code: parley.EInvalidRequest,
				Message: "The form did not arrive in time. Nothing was changed; please send it again."}
		default:
			return &parley.Error{Code: parley.EInvalidRequest,
				Message: "The form could not be read. Nothing was changed; please send it again."}
		}
	}
	for _, vs := range x.R.PostForm {
		for _, v := range vs {
			if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
				return &parley.Error{Code: parley.EValidation,
					Message: "The form holds a character that is not text (a NUL byte or invalid UTF-8); nothing was changed."}
			}
		}
	}
	return nil
}
