//go:build otel

package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/parleyhq/parley/internal/httpapi"
)

// otelTracer traces requests with OpenTelemetry's SDK and exports the
// spans over OTLP/HTTP; the build tag otel brings it in, with the SDK,
// the exporter and their protobuf and gRPC dependencies (issue #35).
type otelTracer struct{ tp *sdktrace.TracerProvider }

func (t otelTracer) wrap(next http.Handler) http.Handler { return traceRequests(t.tp)(next) }

// Shutdown flushes the spans still batched.
func (t otelTracer) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// openTracing starts exporting traces over OTLP/HTTP when the environment
// asks for it, and returns nil when it does not. The exporter, sampler,
// batching and resource read their own OTEL_* variables.
func openTracing(ctx context.Context, getenv func(string) string, logger *slog.Logger) (tracer, error) {
	if on, err := tracingEnabled(getenv); !on || err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("app: tracing: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the name.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "parley")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("app: tracing: %w", err)
	}
	// Export failures go to the JSON log instead of the standard logger.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing", slog.String("error", err.Error()))
	}))
	return otelTracer{sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// traceRequests gives every request a server span named by its route
// pattern, continuing the caller's trace from its W3C traceparent header.
// Health checks and scrapes are left out: they would drown the rest.
func traceRequests(tp trace.TracerProvider) func(http.Handler) http.Handler {
	prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	return func(next http.Handler) http.Handler {
		withRoute := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if route := httpapi.Route(r); route != "" {
				trace.SpanFromContext(r.Context()).SetAttributes(attribute.String("http.route", route))
			}
		})
		return otelhttp.NewHandler(withRoute, "parley",
			otelhttp.WithTracerProvider(tp),
			otelhttp.WithPropagators(prop),
			otelhttp.WithSpanNameFormatter(spanName),
			otelhttp.WithFilter(func(r *http.Request) bool {
				switch r.URL.Path {
				case "/healthz", "/readyz", "/metrics":
					return false
				}
				return true
			}))
	}
}

// spanName is "{method} {route}", or the method alone when no route
// matched (semantic conventions for HTTP server spans).
func spanName(_ string, r *http.Request) string {
	method := r.Method
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
	default:
		method = "HTTP"
	}
	if route := httpapi.Route(r); route != "" {
		return method + " " + route
	}
	return method
}
