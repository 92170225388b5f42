package app

import "net/http"

// MetricsHandler serves GET /metrics alone, for the listener of
// Config.MetricsAddr.
func (a *App) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.Metrics.Handler())
	return mux
}

// apiMetrics is the /metrics route of the API listener: none when metrics
// have a listener of their own.
func (a *App) apiMetrics() http.Handler {
	if a.Config.MetricsAddr != "" {
		return nil
	}
	return a.Metrics.Handler()
}
