//go:build !otel

package app

import (
	"context"
	"errors"
	"log/slog"
)

// errTracingNotBuilt: the OpenTelemetry SDK and its OTLP exporter (with
// their protobuf and gRPC dependencies) are left out of the default build
// (issue #35), so a server asked to trace refuses to start rather than run
// silently untraced.
var errTracingNotBuilt = errors.New(`app: the OTEL_* variables turn tracing on, which needs a parley built with the "otel" tag: go build -tags otel ./cmd/parley (see the README's build tags); OTEL_SDK_DISABLED=true turns tracing off`)

// openTracing returns nil when the environment leaves tracing off, and
// errTracingNotBuilt when it turns it on.
func openTracing(_ context.Context, getenv func(string) string, _ *slog.Logger) (tracer, error) {
	if on, err := tracingEnabled(getenv); !on || err != nil {
		return nil, err
	}
	return nil, errTracingNotBuilt
}
