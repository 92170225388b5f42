package app_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/parleyhq/parley/internal/app"
)

// TestMetricsAddrMovesMetrics: with MetricsAddr set the API handler leaves
// /metrics out and MetricsHandler serves it alone (issue #6).
func TestMetricsAddrMovesMetrics(t *testing.T) {
	setOTEL(t, nil)
	n, err := openNode(t, app.Config{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, n.srv.URL+"/metrics"); got != 404 {
		t.Errorf("API GET /metrics = %d, want 404", got)
	}
	ms := httptest.NewServer(n.app.MetricsHandler())
	defer ms.Close()
	resp, err := http.Get(ms.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`parley_http_requests_total{method="GET",route="unmatched",status="404"} 1`)) {
		t.Errorf("metrics listener GET /metrics = %d, want 200 counting the API's 404:\n%s", resp.StatusCode, body)
	}
	for _, p := range []string{"/healthz", "/api/v1/brand"} {
		if got := get(t, ms.URL+p); got != 404 {
			t.Errorf("metrics listener GET %s = %d, want 404", p, got)
		}
	}
}
