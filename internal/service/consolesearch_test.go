package service_test

import (
	"testing"
)

// TestSearchContactsBadBytes: a console search (D19) typed or pasted with
// a NUL or bytes that are not UTF-8 finds nobody; it is no server error
// (PostgreSQL refuses such text as a parameter: D3, bad input is never a
// 500).
func TestSearchContactsBadBytes(t *testing.T) {
	t.Parallel()
	e := campEnv(t)
	campUsers(t, e, 1, 0)
	for _, q := range []string{"ann\x00", "\x00", "a\xffb", "x@example.com\x00", "\xff smith", "415\x00"} {
		if _, err := e.App.Service.SearchContacts(e.Ctx, e.BrandA.ID, q); err != nil {
			t.Errorf("search %q: %v, want no error", q, err)
		}
	}
}
