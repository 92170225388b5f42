package metrics_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/parleyhq/parley/internal/metrics"
)

// exposition renders the registry in the text format.
func exposition(t testing.TB, m *metrics.Metrics) string {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestRequestLabelsAreBounded: the route is the pattern given, "" is
// "unmatched", and methods outside the standard ones share one label.
func TestRequestLabelsAreBounded(t *testing.T) {
	m := metrics.New(nil)
	for range 3 {
		m.RequestStarted()
		m.RequestDone("/api/v1/users/{user_id}", "GET", 200, time.Millisecond)
	}
	m.RequestStarted()
	m.RequestDone("/api/v1/users/{user_id}", "GET", 404, time.Millisecond)
	m.RequestStarted()
	m.RequestDone("/api/v1/users/{user_id}", "HEAD", 200, time.Millisecond)
	for _, method := range []string{"BREW", "PROPFIND", "get"} {
		m.RequestStarted()
		m.RequestDone("", method, 404, time.Millisecond)
	}
	m.RequestStarted() // still in flight
	out := exposition(t, m)
	for _, want := range []string{
		`parley_http_requests_total{method="GET",route="/api/v1/users/{user_id}",status="200"} 3`,
		`parley_http_requests_total{method="GET",route="/api/v1/users/{user_id}",status="404"} 1`,
		`parley_http_requests_total{method="HEAD",route="/api/v1/users/{user_id}",status="200"} 1`,
		`parley_http_requests_total{method="OTHER",route="unmatched",status="404"} 3`,
		`parley_http_request_duration_seconds_count{method="GET",route="/api/v1/users/{user_id}"} 4`,
		`parley_http_request_duration_seconds_count{method="OTHER",route="unmatched"} 3`,
		"parley_http_requests_in_flight 1",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("exposition lacks %s", want)
		}
	}
	for _, never := range []string{"BREW", "PROPFIND", `"get"`} {
		if strings.Contains(out, never) {
			t.Errorf("exposition has the client's method %s as a label", never)
		}
	}
}

// BenchmarkRequestDone is the per-request cost of the request metrics
// once a route's series exist: no allocations.
func BenchmarkRequestDone(b *testing.B) {
	m := metrics.New(nil)
	routes := []string{"/api/v1/users", "/api/v1/users/{user_id}", "/api/v1/messages", ""}
	b.Run("Serial", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			m.RequestStarted()
			m.RequestDone(routes[i%len(routes)], "GET", 200, time.Millisecond)
			i++
		}
	})
	b.Run("Parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				m.RequestStarted()
				m.RequestDone(routes[i%len(routes)], "POST", 201, time.Millisecond)
				i++
			}
		})
	})
}
