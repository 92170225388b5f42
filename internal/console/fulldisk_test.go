package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// TestConsoleFullDisk (issue #31 item 15): a console form whose write
// fails on SQLite's full disk answers 503 with Retry-After and says the
// storage is full, as the API does, not a 500; it works again once space
// is back.
func TestConsoleFullDisk(t *testing.T) {
	if apitest.Engine() != "sqlite" {
		t.Skip("a full disk under SQLite; PostgreSQL's disk is the server's")
	}
	dir := apitest.MountTmpfs(t, "24m")
	e := newEnv(t, func(c *app.Config) {
		c.DataDir = dir
		c.DB = apitest.MigratedDatabaseURL(t, dir)
	})
	in := parley.UserCreate{PhoneNumber: parley.Some("+14155552671")}
	in.MessagingConsent = parley.Some(true)
	u := e.MustCreateUser(t, e.A, in)
	w := e.signedIn(t, e.AgentA.Email)
	cu := "/console/contacts/" + strconv.FormatInt(u.ID, 10)
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	fill := apitest.Fill(t, dir)
	before := e.Count(t, "messages")
	got := w.post(cu, url.Values{"body": {"Hello"}})
	if got.Status != http.StatusServiceUnavailable || got.Header.Get("Retry-After") == "" || !strings.Contains(got.Body, "storage is full") {
		t.Errorf("reply on a full disk: %d Retry-After %q, want 503 with Retry-After saying the storage is full\n%s",
			got.Status, got.Header.Get("Retry-After"), got.Body)
	}
	if n := e.Count(t, "messages"); n != before {
		t.Errorf("%d messages after the failed reply, want %d", n, before)
	}
	fill.Free(t)
	if got := w.post(cu, url.Values{"body": {"Hello"}}); got.Status != http.StatusSeeOther {
		t.Errorf("reply once space is back: %d, want 303", got.Status)
	}
}
