package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apitest"
)

// TestServeMetricsAddr: PARLEY_METRICS_ADDR (--metrics-addr) serves
// /metrics on a listener of its own and takes it off the API's; both
// listeners shut down cleanly (issue #6).
func TestServeMetricsAddr(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &apitest.LogBuffer{}
	done := make(chan error, 1)
	getenv := env(map[string]string{"PARLEY_METRICS_ADDR": "127.0.0.1:0", "PARLEY_PPROF_ADDR": "127.0.0.1:0", "PARLEY_DATA_DIR": t.TempDir()})
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json"}, getenv, stdout, &apitest.LogBuffer{})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "Profiles are served on ") {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, stdout.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not announce its metrics address:\n%s", stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	out := stdout.String()
	api := serveURL(t, out)
	_, rest, _ := strings.Cut(out, "Metrics are served on ")
	metricsURL := strings.Fields(rest)[0]
	if !strings.HasSuffix(metricsURL, "/metrics") || strings.HasPrefix(metricsURL, api) {
		t.Fatalf("metrics URL %q, want /metrics on another address than %s", metricsURL, api)
	}
	base := strings.TrimSuffix(metricsURL, "/metrics")

	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(api + "/healthz"); code != 200 {
		t.Fatalf("API GET /healthz = %d", code)
	}
	if code, _ := get(api + "/metrics"); code != 404 {
		t.Errorf("API GET /metrics = %d, want 404 with --metrics-addr", code)
	}
	code, body := get(metricsURL)
	if code != 200 || !strings.Contains(body, `parley_http_requests_total{method="GET",route="/healthz",status="200"} 1`) {
		t.Errorf("GET %s = %d, want 200 counting the API's requests:\n%s", metricsURL, code, body)
	}
	if code, _ := get(base + "/healthz"); code != 404 {
		t.Errorf("metrics listener GET /healthz = %d, want 404: it serves /metrics alone", code)
	}
	// --pprof-addr: Go's profiles on their own address, never on the API's.
	_, rest, _ = strings.Cut(out, "Profiles are served on ")
	pprofURL := strings.Fields(rest)[0]
	if code, body := get(pprofURL + "goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("GET %sgoroutine = %d, want a goroutine profile", pprofURL, code)
	}
	if code, _ := get(api + "/debug/pprof/"); code != 404 {
		t.Errorf("API GET /debug/pprof/ = %d, want 404", code)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve did not shut down cleanly: %v", err)
	}
	if _, err := http.Get(metricsURL); err == nil {
		t.Errorf("the metrics listener still answers after shutdown")
	}
}
