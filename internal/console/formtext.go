package console

import (
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// formTextOK reports whether every value of a posted form is text: no NUL
// and only UTF-8 (D3). The forms call the service directly, past the
// API's check of JSON text, and PostgreSQL refuses such a value as a
// parameter (a 500) where SQLite would store it. Only urlencoded forms are
// read here: a multipart upload (imports) is streamed by its handler,
// which checks its rows itself.
func formTextOK(x *Ctx) bool {
	if x.R.Method != http.MethodPost {
		return true
	}
	if ct, _, _ := mime.ParseMediaType(x.R.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		return true
	}
	x.Form("") // parses the body, bounded as Form bounds it
	for _, vs := range x.R.PostForm {
		for _, v := range vs {
			if strings.ContainsRune(v, 0) || !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

// refuseFormText answers a form that formTextOK refused.
func (x *Ctx) refuseFormText() error {
	return x.fail(http.StatusUnprocessableEntity, "Cannot do that",
		"The form holds a character that is not text (a NUL byte or invalid UTF-8); nothing was changed.")
}
