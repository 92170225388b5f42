//go:build otel

package app_test

func init() { otelBuilt = true }
