package httpapi_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/httpapi"
	"github.com/parleyhq/parley/internal/metrics"
)

// scrape returns the text of GET /metrics.
func scrape(t *testing.T, e *apitest.Env) string {
	t.Helper()
	resp, err := http.Get(e.Server.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d %v", resp.StatusCode, err)
	}
	return string(b)
}

func rawRequest(t *testing.T, e *apitest.Env, method, path string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.Server.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRequestMetrics: every request is counted and timed under the route
// pattern that matched and the status it got; unknown paths and methods get
// fixed labels, so raw paths never become series (issue #6).
func TestRequestMetrics(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	for range 2 {
		if _, err := e.A.GetUser(e.Ctx, u.ID); err != nil {
			t.Fatal(err)
		}
	}
	var apiErr *client.Error
	if _, err := e.A.GetUser(e.Ctx, 987654321); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("GetUser of no user: %v, want a 404", err)
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/api/v1/brand", 401},         // unsigned
		{"GET", "/no/such/path/4242", 404},    // no route
		{"BREW", "/api/v1/users", 405},        // a method no route has, nor the label set
		{"DELETE", "/api/v1/messages/1", 405}, // a known path, another method
	} {
		if got := rawRequest(t, e, c.method, c.path); got != c.status {
			t.Fatalf("%s %s = %d, want %d", c.method, c.path, got, c.status)
		}
	}

	out := scrape(t, e)
	for _, want := range []string{
		`parley_http_requests_total{method="POST",route="/api/v1/users",status="201"} 1`,
		`parley_http_requests_total{method="GET",route="/api/v1/users/{user_id}",status="200"} 2`,
		`parley_http_requests_total{method="GET",route="/api/v1/users/{user_id}",status="404"} 1`,
		`parley_http_requests_total{method="GET",route="/api/v1/brand",status="401"} 1`,
		`parley_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`parley_http_requests_total{method="OTHER",route="/api/v1/users",status="405"} 1`,
		`parley_http_requests_total{method="DELETE",route="/api/v1/messages/{message_id}",status="405"} 1`,
		`parley_http_request_duration_seconds_count{method="GET",route="/api/v1/users/{user_id}"} 3`,
		`parley_http_request_duration_seconds_count{method="POST",route="/api/v1/users"} 1`,
		`parley_http_request_duration_seconds_bucket{method="POST",route="/api/v1/users",le="+Inf"} 1`,
		// The scrape itself is the one request in flight.
		"parley_http_requests_in_flight 1",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Names and labels only: a sample's value may hold any digits (a byte
	// count of 4.2424e+06, say).
	var names strings.Builder
	for line := range strings.Lines(out) {
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			names.WriteString(line[:i] + "\n")
		}
	}
	for _, never := range []string{"987654321", "4242", "/no/such", "BREW", `route="/api/v1/users/` + strconv.FormatInt(u.ID, 10)} {
		if strings.Contains(names.String(), never) {
			t.Errorf("/metrics holds %q from a request's path or method", never)
		}
	}

	// The scrape is counted once it is answered.
	if out := scrape(t, e); !strings.Contains(out, `parley_http_requests_total{method="GET",route="/metrics",status="200"} 1`+"\n") {
		t.Errorf("the first scrape is not counted:\n%s", grepLines(out, "parley_http_requests_total"))
	}
}

// TestOperationalMetrics: /metrics carries the database pools of the
// engine, the queue's backlog and the Go runtime and process (issue #6),
// and on SQLite the signatures its replay index holds in memory (issue
// #15) and the idempotency keys its key index holds (issue #35).
func TestOperationalMetrics(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")}) // one signed write
	keyed(t, e, "POST", "/api/v1/users", `{"phone_number":"+14155552672"}`, "one key")
	out := scrape(t, e)
	pools := []string{`go_sql_max_open_connections{db_name="writer"} 1`, `go_sql_open_connections{db_name="reader"}`,
		"\nparley_replay_signatures_indexed 2\n", "\nparley_idempotency_keys_indexed 1\n"}
	if apitest.Engine() == "postgres" {
		pools = []string{`go_sql_in_use_connections{db_name="writer"}`, `go_sql_in_use_connections{db_name="reader"}`}
		for _, name := range []string{"parley_replay_signatures_indexed", "parley_idempotency_keys_indexed"} {
			if strings.Contains(out, name) {
				t.Errorf("PostgreSQL has no index in memory, yet /metrics reports %s", name)
			}
		}
	}
	for _, want := range append(pools,
		`go_sql_wait_count_total{db_name=`, `go_sql_idle_connections{db_name=`,
		"parley_queue_jobs_waiting 0", "parley_queue_oldest_job_age_seconds 0", "parley_webhook_deliveries_pending 0",
		"go_goroutines", "go_memstats_heap_alloc_bytes", "go_gc_duration_seconds", "process_resident_memory_bytes",
	) {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// discard is a ResponseWriter that keeps nothing, so the benchmark measures
// the handler chain alone.
type discard struct{ h http.Header }

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(b []byte) (int, error) { return len(b), nil }
func (w *discard) WriteHeader(int)             {}

// BenchmarkRequestMetricsMiddleware is GET /healthz through the whole
// handler chain without and with request metrics: the difference is what
// the metrics cost every request.
func BenchmarkRequestMetricsMiddleware(b *testing.B) {
	for _, c := range []struct {
		name string
		m    httpapi.RequestMetrics
	}{{"Off", nil}, {"On", metrics.New(nil)}} {
		h := httpapi.New(httpapi.Config{RequestMetrics: c.m}).Handler()
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
		b.Run(c.name+"Parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest("GET", "/healthz", nil)
				w := &discard{h: http.Header{}}
				for pb.Next() {
					h.ServeHTTP(w, req)
				}
			})
		})
	}
}
