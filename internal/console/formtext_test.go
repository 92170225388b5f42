package console_test

import (
	"net/http"
	"net/url"
	"testing"
)

// TestFormNULRefused: a console form posted with a NUL or bytes that are
// not UTF-8 in a value is refused with 422 and changes nothing (D3, D19).
// The forms call the service directly, past the API's check of JSON
// text, and PostgreSQL refuses such text: it was a 500.
func TestFormNULRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seg := e.mustSegment(t, false, "Everyone", nil)
	w := e.signedIn(t, "admin@a.example")
	before := e.Snapshot(t, `SELECT id FROM campaigns`) + e.Snapshot(t, `SELECT id, name FROM segments`)
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"/console/campaigns/new", campaignForm("Sale\x00", seg.ID, "Hi", "")},
		{"/console/campaigns/new", campaignForm("Sale", seg.ID, "Hi \xff", "")},
		{"/console/segments/new", url.Values{"name": {"Seg\x00"}, "type": {"standard"}, "action": {"save"}}},
		{"/console/signin", url.Values{"email": {"admin@a.example\x00"}, "password": {"whatever"}}},
	} {
		if p := w.post(tc.path, tc.form); p.Status != http.StatusUnprocessableEntity {
			t.Errorf("POST %s %q: %d, want 422\n%s", tc.path, tc.form.Encode(), p.Status, p.Body)
		}
	}
	if after := e.Snapshot(t, `SELECT id FROM campaigns`) + e.Snapshot(t, `SELECT id, name FROM segments`); after != before {
		t.Errorf("a refused form changed the database:\n%s\nwant\n%s", after, before)
	}
}
