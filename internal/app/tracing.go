package app

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// tracer traces the API's requests; openTracing returns one when the
// OTEL_* variables turn tracing on.
type tracer interface {
	wrap(http.Handler) http.Handler
	// Shutdown flushes what is still to be exported.
	Shutdown(context.Context) error
}

// tracingEnabled reads the standard OpenTelemetry variables: tracing is on
// when OTEL_TRACES_EXPORTER is otlp, or unset with an OTLP endpoint given,
// and OTEL_SDK_DISABLED is not true.
func tracingEnabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, nil
		}
	default:
		return false, fmt.Errorf("app: OTEL_TRACES_EXPORTER=%q: only otlp or none is supported", exp)
	}
	// The signal's own variable wins over the general one.
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(k)); p != "" {
			if p != "http/protobuf" {
				return false, fmt.Errorf("app: %s=%q: only http/protobuf is supported", k, p)
			}
			break
		}
	}
	return true, nil
}
