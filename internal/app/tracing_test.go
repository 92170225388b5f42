package app_test

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// TestMain runs the tests on SQLite and, when PARLEY_TEST_POSTGRES_URL is
// set, again on PostgreSQL.
func TestMain(m *testing.M) { apitest.Main(m) }

// otelBuilt is set by tracing_otel_test.go in a build with the otel tag,
// which brings in the tracer (issue #35).
var otelBuilt bool

// wantOTELTag fails the test unless err is the default build's refusal to
// trace, which names the otel tag.
func wantOTELTag(t *testing.T, err error) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "-tags otel") {
		t.Fatalf("app.Open with tracing on in a build without the otel tag: %v, want an error naming -tags otel", err)
	}
}

// otlpReceiver is an OTLP/HTTP trace collector: it keeps the spans of
// every export POSTed to /v1/traces.
type otlpReceiver struct {
	*httptest.Server
	mu           sync.Mutex
	posts        int
	contentTypes []string
	spans        []*tracepb.Span
	services     []string // the service.name of each resource
}

func newReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = gz
		}
		b, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.posts++
		rc.contentTypes = append(rc.contentTypes, r.Header.Get("Content-Type"))
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					rc.services = append(rc.services, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				rc.spans = append(rc.spans, ss.GetSpans()...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *otlpReceiver) span(name string) *tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, s := range rc.spans {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

func (rc *otlpReceiver) names() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var names []string
	for _, s := range rc.spans {
		names = append(names, s.GetName())
	}
	return names
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			if v, ok := kv.GetValue().GetValue().(*commonpb.AnyValue_IntValue); ok {
				return strconv.FormatInt(v.IntValue, 10)
			}
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

// setOTEL gives the test exactly the OTEL_* variables in env, whatever the
// test process inherited.
func setOTEL(t *testing.T, env map[string]string) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
}

// node is an app behind an httptest server, with a brand and a client
// whose requests carry a W3C traceparent.
type node struct {
	app    *app.App
	srv    *httptest.Server
	client *client.Client
	closed bool
}

const (
	callerTrace = "0af7651916cd43dd8448eb211c80319c"
	callerSpan  = "b7ad6b7169203331"
)

type traceparent struct{}

func (traceparent) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
	return http.DefaultTransport.RoundTrip(r)
}

func openNode(t *testing.T, cfg app.Config) (*node, error) {
	t.Helper()
	dir := t.TempDir()
	cfg.DataDir, cfg.DB = dir, apitest.DatabaseURL(t, dir)
	cfg.SecretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	a, err := app.Open(t.Context(), cfg)
	if err != nil {
		return nil, err
	}
	n := &node{app: a, srv: httptest.NewServer(a.Server.Handler())}
	t.Cleanup(func() { n.close(t) })
	b, err := a.Service.CreateBrand(t.Context(), "Acme", "+14155550100")
	if err != nil {
		t.Fatal(err)
	}
	cred, err := a.Service.CreateCredential(t.Context(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	n.client = client.New(n.srv.URL, cred.Username, cred.Secret,
		client.WithHTTPClient(&http.Client{Transport: traceparent{}}))
	return n, nil
}

// close stops the node as the parley command does: the listener, then the
// app, which flushes the spans.
func (n *node) close(t *testing.T) {
	if n.closed {
		return
	}
	n.closed = true
	n.srv.Close()
	if err := n.app.Close(); err != nil {
		t.Errorf("app.Close: %v", err)
	}
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTracingExportsServerSpans: with OTEL_EXPORTER_OTLP_ENDPOINT set, each
// request is a server span named by its route pattern, continuing the
// caller's W3C trace, exported over OTLP/HTTP by the time the app has
// closed; health checks are not traced (issue #6). A build without the otel
// tag refuses to start instead (issue #35).
func TestTracingExportsServerSpans(t *testing.T) {
	rc := newReceiver(t)
	setOTEL(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL, "OTEL_SERVICE_NAME": "parley-test"})
	n, err := openNode(t, app.Config{})
	if !otelBuilt {
		wantOTELTag(t, err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.client.GetBrand(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := get(t, n.srv.URL+"/healthz"); got != 200 {
		t.Fatalf("/healthz = %d", got)
	}
	if got := get(t, n.srv.URL+"/no/such/path"); got != 404 {
		t.Fatalf("/no/such/path = %d", got)
	}
	n.close(t)

	s := rc.span("GET /api/v1/brand")
	if s == nil {
		t.Fatalf("no span GET /api/v1/brand among %q (%d exports)", rc.names(), rc.posts)
	}
	if got := hex.EncodeToString(s.GetTraceId()); got != callerTrace {
		t.Errorf("trace id %s, want the caller's %s", got, callerTrace)
	}
	if got := hex.EncodeToString(s.GetParentSpanId()); got != callerSpan {
		t.Errorf("parent span %s, want the caller's %s", got, callerSpan)
	}
	if s.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span kind %v, want server", s.GetKind())
	}
	if got := attr(s, "http.route"); got != "/api/v1/brand" {
		t.Errorf("http.route = %q, want /api/v1/brand", got)
	}
	if got := attr(s, "http.response.status_code"); got != "200" {
		t.Errorf("http.response.status_code = %q, want 200", got)
	}
	if rc.span("GET") == nil {
		t.Errorf("a path no route matched has no span named by its method alone: %q", rc.names())
	}
	for _, name := range rc.names() {
		if strings.Contains(name, "healthz") || strings.Contains(name, "/no/such") {
			t.Errorf("span %q: health checks are not traced and raw paths never name spans", name)
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, ct := range rc.contentTypes {
		if ct != "application/x-protobuf" {
			t.Errorf("export Content-Type %q, want application/x-protobuf", ct)
		}
	}
	if len(rc.services) == 0 || rc.services[0] != "parley-test" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's parley-test", rc.services)
	}
}

// TestTracingSwitches: only the standard OTEL_* variables turn tracing on
// or off, and settings Parley cannot honour stop it from starting, as does
// tracing turned on in a build without the otel tag (issue #35).
func TestTracingSwitches(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     func(url string) map[string]string
		on      bool
		wantErr string
	}{
		{"NothingSet", func(string) map[string]string { return nil }, false, ""},
		{"Endpoint", func(u string) map[string]string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u} }, true, ""},
		{"ExporterAndTracesEndpoint", func(u string) map[string]string {
			return map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": u + "/v1/traces"}
		}, true, ""},
		{"SDKDisabled", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_SDK_DISABLED": "true"}
		}, false, ""},
		{"ExporterNone", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_TRACES_EXPORTER": "none"}
		}, false, ""},
		{"TracesProtocolWins", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
				"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}
		}, true, ""},
		{"UnsupportedExporter", func(string) map[string]string {
			return map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}
		}, false, "OTEL_TRACES_EXPORTER"},
		{"UnsupportedProtocol", func(u string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": u, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
		}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := newReceiver(t)
			setOTEL(t, c.env(rc.URL))
			n, err := openNode(t, app.Config{})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("app.Open: %v, want an error naming %s", err, c.wantErr)
				}
				return
			}
			if c.on && !otelBuilt {
				wantOTELTag(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := n.client.GetBrand(t.Context()); err != nil {
				t.Fatal(err)
			}
			n.close(t)
			if got := rc.span("GET /api/v1/brand") != nil; got != c.on {
				t.Errorf("span exported = %v, want %v (%d exports)", got, c.on, rc.posts)
			}
			if !c.on && rc.posts != 0 {
				t.Errorf("%d exports with tracing off", rc.posts)
			}
		})
	}
}
