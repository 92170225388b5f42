package httpapi_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestAccessLog: one line per request with method, path, status, duration,
// brand id and request id — never the query string, bodies or secrets (issue #2).
func TestAccessLog(t *testing.T) {
	t.Parallel()
	var buf logBuffer
	e := apitest.New(t, func(c *app.Config) { c.Logger = slog.New(slog.NewJSONHandler(&buf, nil)) })
	e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{FirstName: parley.Some("Zebediah")}})
	resp, err := e.A.Do(e.Ctx, "GET", "/users?phone_number=%2B14155552671", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Request-Id")

	buf.mu.Lock()
	logs := buf.b.String()
	buf.mu.Unlock()
	for _, secret := range []string{"14155552671", "Zebediah", e.CredA.Secret, "x-service-hmac"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains %q:\n%s", secret, logs)
		}
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" || rec["request_id"] != id {
			continue
		}
		found = true
		if rec["method"] != "GET" || rec["path"] != "/api/v1/users" || rec["status"] != 200.0 ||
			rec["brand_id"] != float64(e.BrandA.ID) || rec["duration"] == nil {
			t.Errorf("access log line = %v", rec)
		}
	}
	if !found {
		t.Errorf("no access log line for request %s:\n%s", id, logs)
	}
}
