package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Request bodies are read under a deadline (#15). net/http sets none once
// the headers are in, so without one a client that declares a body and
// sends it a byte at a time holds its connection and goroutine for ever;
// and a handler that answers without reading the body (a 401, say) would
// first wait for net/http to drain it.
//
// withBodyDeadline gives every request that has a body BodyTimeout for it,
// which authed extends to UploadTimeout for an upload once its signature is
// verified. Once the body is read to its end, net/http lifts the deadline
// itself (its background read starts with none), so it never cancels the
// handler's work. An answer written before the body is read to its end
// closes the connection and ends reading at once.

type bodyKey struct{}

// bodyGuard wraps a request body and owns its connection's read deadline.
type bodyGuard struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration // the deadline's current span, for the error message
	done    bool          // the body was read to its end
}

func (s *Server) withBodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		g := &bodyGuard{ReadCloser: r.Body, rc: http.NewResponseController(w)}
		g.extend(s.BodyTimeout)
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, g))
		r.Body = g
		next.ServeHTTP(&guardWriter{ResponseWriter: w, g: g}, r)
	})
}

// bodyGuardFrom returns the request's guard, nil when it has no body.
func bodyGuardFrom(ctx context.Context) *bodyGuard {
	g, _ := ctx.Value(bodyKey{}).(*bodyGuard)
	return g
}

// extend gives the rest of the body d from now. The error is ignored: a
// ResponseRecorder in tests has no connection.
func (g *bodyGuard) extend(d time.Duration) {
	if g == nil || g.done {
		return
	}
	g.timeout = d
	g.rc.SetReadDeadline(time.Now().Add(d))
}

func (g *bodyGuard) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	if err == io.EOF {
		g.done = true
	}
	return n, err
}

// readError is the answer to a failed body read: a deadline that passed
// says so, with its span.
func (g *bodyGuard) readError(err error) error {
	if g != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return badRequest(fmt.Sprintf("request body not received within %v", g.timeout))
	}
	return badRequest("could not read the request body")
}

// guardWriter closes the connection when the answer starts before the
// body was read to its end: the client may never send the rest, and
// net/http would otherwise wait to drain it before answering.
type guardWriter struct {
	http.ResponseWriter
	g       *bodyGuard
	started bool
}

func (w *guardWriter) start() {
	if w.started {
		return
	}
	w.started = true
	if !w.g.done {
		w.Header().Set("Connection", "close")
		w.g.rc.SetReadDeadline(time.Now()) // nothing more is read, not even to drain
	}
}

func (w *guardWriter) WriteHeader(code int) {
	if code >= 200 {
		w.start()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *guardWriter) Write(b []byte) (int, error) {
	w.start()
	return w.ResponseWriter.Write(b)
}

func (w *guardWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
