package httpapi

import (
	"net/http"
	"strings"
	"time"
)

// RequestMetrics observes every request the server answers.
type RequestMetrics interface {
	// RequestStarted counts a request in flight until its RequestDone.
	RequestStarted()
	// RequestDone observes a finished request. route is the pattern of the
	// route that matched without its method ("/api/v1/users/{user_id}"),
	// "" when none did: never the raw path, whose values are unbounded.
	RequestDone(route, method string, status int, d time.Duration)
}

// withPattern records in the request's info the ServeMux pattern that
// served it. The mux sets Pattern on the *Request it is handed, so only a
// wrapper right around the mux sees it: the middleware further out hold the
// copies that WithContext made before.
func withPattern(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer recordPattern(r) // a panic still has its route counted
		mux.ServeHTTP(w, r)
	})
}

func recordPattern(r *http.Request) {
	if info := infoFrom(r.Context()); info != nil {
		info.pattern = r.Pattern
	}
}

// requestDone reports a request that withRequestLog saw end.
func (s *Server) requestDone(info *requestInfo, method string, sw *statusWriter, start time.Time) {
	status := sw.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	s.RequestMetrics.RequestDone(routeLabel(info.pattern), method, status, time.Since(start))
}

// routeLabel is a pattern's path ("GET /users/{id}" → "/users/{id}"); the
// catch-all "/" that answers 404 is no route.
func routeLabel(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "/" {
		return ""
	}
	return pattern
}

// Route is the pattern of the route that served r without its method
// ("/api/v1/users/{user_id}"), or "" when none did. The router sets it on
// the *Request it is handed, so it is there once the router has served r.
func Route(r *http.Request) string { return routeLabel(r.Pattern) }
