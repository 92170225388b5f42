package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/delivery"
)

// fullDiskEnv starts Parley with its SQLite database and data directory
// on a tmpfs of its own, which the test can fill. Its workers are not
// started.
func fullDiskEnv(t *testing.T, opts ...apitest.Option) (*apitest.Env, string) {
	t.Helper()
	if apitest.Engine() != "sqlite" {
		t.Skip("a full disk under SQLite; PostgreSQL's disk is the server's")
	}
	dir := apitest.MountTmpfs(t, "24m")
	e := apitest.New(t, append([]apitest.Option{func(c *app.Config) {
		c.DataDir = dir
		c.DB = apitest.MigratedDatabaseURL(t, dir)
	}}, opts...)...)
	return e, dir
}

// readyz returns the status of GET /readyz.
func readyz(t *testing.T, e *apitest.Env) int {
	t.Helper()
	resp, err := http.Get(e.Server.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// gatedProvider accepts every message, idempotently as the simulator
// does, but holds the first call until open is closed.
type gatedProvider struct {
	entered chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (p *gatedProvider) Name() string     { return "sim" }
func (p *gatedProvider) Idempotent() bool { return true }
func (p *gatedProvider) Send(ctx context.Context, m delivery.Message) (delivery.Receipt, error) {
	p.once.Do(func() { close(p.entered); <-p.open })
	return delivery.Receipt{ProviderID: "P" + itoa(m.ID)}, nil
}

// TestFullDiskSQLite (issue #31 item 15): with SQLite's disk full, a
// write answers 503 service_unavailable with Retry-After and changes
// nothing, /readyz answers 503, and the store says so in the app's JSON
// log, not through the default logger; once space is back /readyz is
// 200, writes succeed, and a message whose delivery failed meanwhile is
// sent within seconds (it waited about 55 s for River's rescue before).
func TestFullDiskSQLite(t *testing.T) {
	// Not parallel: it replaces the default logger to catch what bypasses
	// the app's.
	var stray apitest.LogBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&stray, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	var logs apitest.LogBuffer
	e, dir := fullDiskEnv(t, func(c *app.Config) { c.Logger = slog.New(slog.NewJSONHandler(&logs, nil)) })
	p := &gatedProvider{entered: make(chan struct{}), open: make(chan struct{})}
	e.App.Service.SetDelivery(p, e.Server.URL, nil, nil)
	if err := e.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	u := dlvUser(t, e, "+14155552671", ptr(true))
	m := dlvSend(t, e, u.ID)
	<-p.entered // the provider has it; its "sent" is yet to be written
	// An empty WAL: the next write must grow it.
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	users := e.Count(t, "users")
	fill := apitest.Fill(t, dir)

	resp := mustDo(t, e.A, "POST", "/users", map[string]any{"phone_number": "+14155552672"})
	var body struct{ Detail struct{ Type, Msg string } }
	json.Unmarshal(resp.Body, &body)
	if resp.StatusCode != 503 || body.Detail.Type != parley.EUnavailable || !strings.Contains(body.Detail.Msg, "storage is full") {
		t.Errorf("write on a full disk: %d %s, want 503 service_unavailable saying the storage is full", resp.StatusCode, resp.Body)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Error("503 on a full disk without Retry-After")
	}
	if got := readyz(t, e); got != 503 {
		t.Errorf("/readyz on a full disk = %d, want 503", got)
	}
	close(p.open) // the delivery's write fails now
	// Longer than River's completer tries to record the failure (1 + 2 +
	// 4 s), after which it gave up and left the job to the rescuer.
	time.Sleep(10 * time.Second)
	if got := readyz(t, e); got != 503 {
		t.Errorf("/readyz on a full disk, later = %d, want 503", got)
	}

	fill.Free(t)
	freed := time.Now()
	if got := readyz(t, e); got != 200 {
		t.Errorf("/readyz once space is back = %d, want 200", got)
	}
	if n := e.Count(t, "users"); n != users {
		t.Errorf("%d users after the refused write, want %d: it changed nothing", n, users)
	}
	e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672")})
	// A generous deadline, well short of the 55 s of River's rescue.
	for {
		got, err := e.A.GetMessage(e.Ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == parley.StatusSent {
			t.Logf("message sent %v after space returned", time.Since(freed).Round(10*time.Millisecond))
			break
		}
		if time.Since(freed) > 30*time.Second {
			t.Fatalf("message still %s 30 s after space returned", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if !strings.Contains(logs.String(), `"msg":"store: the disk is full: writes fail until space is freed"`) ||
		!strings.Contains(logs.String(), `"msg":"store: writes succeed again"`) {
		t.Errorf("the app's log does not tell of the full disk and its end:\n%s", logs.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %s", line)
		}
	}
	if strings.Contains(stray.String(), "store:") {
		t.Errorf("the store logged through the default logger, not the app's:\n%s", stray.String())
	}
}
