package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
)

// exportUsers streams the brand's users as CSV in the import format, the
// file `parley export` writes, formula-safe (#15). Nothing is sent until
// the export has started, so a refusal is still an error envelope.
func (s *Server) exportUsers(w http.ResponseWriter, r *http.Request, req *request) error {
	var f parley.ExportFilter
	if q := r.URL.Query(); q.Has("segment_id") {
		v := q.Get("segment_id")
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 || v[0] == '+' || v[0] == '0' {
			return parley.FieldError(parley.EValidation, "segment_id", "must be an integer ≥ 1")
		}
		f.SegmentID = id
	}
	out := &csvAnswer{w: w, name: "users-" + strconv.FormatInt(req.brandID, 10) + ".csv"}
	if r.Method == http.MethodHead {
		out.start()
		return nil
	}
	_, err := s.Imports.ExportUsers(r.Context(), req.brandID, out, f)
	if err != nil && !out.started {
		return err
	}
	if err != nil {
		// The status is sent: all that is left is to cut the answer short,
		// so the client sees a broken transfer, not a short file.
		s.logger.LogAttrs(r.Context(), slog.LevelError, "users export: answer cut short",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		panic(http.ErrAbortHandler)
	}
	if !out.started { // an empty brand still gets its header row
		out.start()
	}
	return nil
}

// csvAnswer writes a CSV attachment, its headers sent with the first byte.
type csvAnswer struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (a *csvAnswer) start() {
	a.started = true
	h := a.w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+a.name+`"`)
	a.w.WriteHeader(http.StatusOK)
}

func (a *csvAnswer) Write(p []byte) (int, error) {
	if !a.started {
		a.start()
	}
	return a.w.Write(p)
}

// streamed is authed for a GET whose answer streams for as long as the
// data lasts (an export). RequestTimeout then bounds each wait — for the
// database, for the client — rather than the whole answer: a large
// brand's export is not cut at 15 s, and a database that stops answering
// still ends it.
func (s *Server) streamed(h apiHandler) http.Handler {
	inner := s.verified(noBody, h, 0)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		idle := time.AfterFunc(s.RequestTimeout, cancel)
		defer idle.Stop()
		inner.ServeHTTP(&progressWriter{ResponseWriter: w, idle: idle, d: s.RequestTimeout}, r.WithContext(ctx))
	})
}

// progressWriter restarts the idle timer whenever a part of the answer
// has gone out.
type progressWriter struct {
	http.ResponseWriter
	idle *time.Timer
	d    time.Duration
}

func (w *progressWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.idle.Reset(w.d)
	return n, err
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
