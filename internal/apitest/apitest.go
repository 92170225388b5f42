// Package apitest starts a real Parley — HTTP server, SQLite database in a
// temp directory, blob store, services — for end-to-end tests that drive it
// with signed requests through the public client.
package apitest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/app"
)

// Env is one running Parley with two brands, A and B, each with a client.
type Env struct {
	App    *app.App
	Server *httptest.Server
	// A and B call the API as brand A and brand B.
	A, B           *client.Client
	BrandA, BrandB *parley.Brand
	CredA, CredB   *parley.Credential
	Ctx            context.Context
	clockMu        sync.Mutex
	now            time.Time
	tick           atomic.Int64
	cfg            app.Config
}

// Option adjusts the app's configuration before it opens.
type Option func(*app.Config)

// New starts a Parley for t and stops it when t ends.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{Ctx: context.Background(), now: time.Now().UTC()}
	cfg := app.Config{
		DataDir:   dir,
		DB:        MigratedDatabaseURL(t, dir),
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		Now:       e.Now,
	}
	// The server starts first so the app can know its public URL.
	var handler atomic.Value
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	cfg.PublicURL = e.Server.URL
	cfg.WebhookAllowPrivate = true // receivers are httptest servers on 127.0.0.1
	// The clock stands still unless a test moves it, so buckets would
	// never refill: rate-limit tests turn limiting on themselves.
	cfg.RateLimit = -1
	for _, o := range opts {
		o(&cfg)
	}
	e.cfg = cfg
	e.start(t, &handler)
	e.BrandA, e.CredA, e.A = e.NewBrand(t, "Brand A", "+14155550100")
	e.BrandB, e.CredB, e.B = e.NewBrand(t, "Brand B", "+14155550101")
	return e
}

func (e *Env) start(t testing.TB, handler *atomic.Value) {
	t.Helper()
	a, err := app.Open(e.Ctx, e.cfg)
	if err != nil {
		e.Server.Close()
		t.Fatalf("app.Open: %v", err)
	}
	e.App = a
	// Segment answers come from the audience engine at once (issue #34),
	// so every HTTP test of segments runs through it, not through the SQL
	// that answers while a brand loads in the background.
	a.Service.Audience().Eager = true
	handler.Store(a.Server.Handler())
	t.Cleanup(func() {
		e.Server.Close()
		a.Close()
	})
}

// Attach starts a second node on e's database, as another process would
// be: its own app and HTTP server, the same brands, credentials and clock.
func Attach(t testing.TB, e *Env) *Env {
	t.Helper()
	n := &Env{Ctx: e.Ctx, cfg: e.cfg, now: e.Now(),
		BrandA: e.BrandA, BrandB: e.BrandB, CredA: e.CredA, CredB: e.CredB}
	n.cfg.Now = e.Now
	var handler atomic.Value
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.Load().(http.Handler).ServeHTTP(w, r)
	}))
	n.start(t, &handler)
	n.A = n.Client(e.CredA.Username, e.CredA.Secret)
	n.B = n.Client(e.CredB.Username, e.CredB.Secret)
	return n
}

// Now is the server's clock: real time plus whatever Advance added.
func (e *Env) Now() time.Time {
	e.clockMu.Lock()
	defer e.clockMu.Unlock()
	return e.now
}

// SetNow sets the server's clock.
func (e *Env) SetNow(t time.Time) {
	e.clockMu.Lock()
	defer e.clockMu.Unlock()
	e.now = t
}

// Advance moves the server's clock forward.
func (e *Env) Advance(d time.Duration) {
	e.clockMu.Lock()
	defer e.clockMu.Unlock()
	e.now = e.now.Add(d)
}

// NewBrand creates a brand with a credential and a client that signs with
// the server's clock.
func (e *Env) NewBrand(t testing.TB, name, phone string) (*parley.Brand, *parley.Credential, *client.Client) {
	t.Helper()
	b, err := e.App.Service.CreateBrand(e.Ctx, name, phone)
	if err != nil {
		t.Fatalf("CreateBrand: %v", err)
	}
	c, err := e.App.Service.CreateCredential(e.Ctx, b.ID)
	if err != nil {
		t.Fatalf("CreateCredential: %v", err)
	}
	return b, c, e.Client(c.Username, c.Secret)
}

// Client returns a client for a credential. Its clock is the server's
// plus a second more for each request, wrapping well inside the allowed
// skew: the server's clock stands still, and replay protection (D2) would
// otherwise reject a test's second identical write as a replay.
func (e *Env) Client(username, secret string) *client.Client {
	return client.New(e.Server.URL, username, secret, client.WithClock(e.ClientNow))
}

// ClientNow is the clock of Env's clients (see Client).
func (e *Env) ClientNow() time.Time {
	return e.Now().Add(time.Duration(e.tick.Add(1)%240) * time.Second)
}

// MustCreateUser creates a user of brand A or fails the test.
func (e *Env) MustCreateUser(t testing.TB, c *client.Client, in parley.UserCreate) *parley.User {
	t.Helper()
	u, err := c.CreateUser(e.Ctx, in)
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u
}

// MustCreateField configures a custom data field for a brand.
func (e *Env) MustCreateField(t testing.TB, f *parley.CustomField) *parley.CustomField {
	t.Helper()
	if err := e.App.Service.CreateCustomField(e.Ctx, f); err != nil {
		t.Fatalf("CreateCustomField: %v", err)
	}
	return f
}

// Count returns a count(*) from the database, for "changed nothing" checks.
func (e *Env) Count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// Snapshot returns the rows of a table as text, to assert nothing changed.
func (e *Env) Snapshot(t testing.TB, query string) string {
	t.Helper()
	rows, err := e.App.DB.Writer().QueryContext(e.Ctx, query)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []byte
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		for _, v := range vals {
			out = append(out, []byte(fmtValue(v))...)
			out = append(out, '|')
		}
		out = append(out, '\n')
	}
	return string(out)
}

func fmtValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	default:
		return fmt.Sprint(x)
	}
}

// State snapshots every table the API writes, so a test can assert that a
// rejected request changed nothing.
func (e *Env) State(t testing.TB) string {
	t.Helper()
	var out string
	for _, table := range []string{"brands", "credentials", "users", "custom_fields", "segments", "files", "messages", "river_job"} {
		cols := "*"
		if table == "credentials" {
			cols = "id, brand_id, username, secret, created_at, revoked_at" // not last_used_at: any request moves it
		}
		where := ""
		if table == "river_job" {
			where = " WHERE kind <> 'extraction_sweep'" // the sweep's job hands over every run
		}
		out += table + ":\n" + e.Snapshot(t, "SELECT "+cols+" FROM "+table+where+" ORDER BY id")
	}
	return out
}
