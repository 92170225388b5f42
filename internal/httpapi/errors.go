package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/signing"
)

// statusOf is the one table from error code to HTTP status (D3).
var statusOf = map[string]int{
	parley.ENotAuthenticated:     http.StatusUnauthorized,
	parley.EUserNotFound:         http.StatusNotFound,
	parley.ENotFound:             http.StatusNotFound,
	parley.ESegmentNotFound:      http.StatusNotFound,
	parley.EMethodNotAllowed:     http.StatusMethodNotAllowed,
	parley.EDuplicate:            http.StatusConflict,
	parley.EIdempotencyReused:    http.StatusConflict,
	parley.EIdempotencyInUse:     http.StatusConflict,
	parley.EPayloadTooLarge:      http.StatusRequestEntityTooLarge,
	parley.EUnsupportedMediaType: http.StatusUnsupportedMediaType,
	parley.EInvalidPhoneNumber:   http.StatusUnprocessableEntity,
	parley.EInvalidPostalCode:    http.StatusUnprocessableEntity,
	parley.EInvalidCustomData:    http.StatusUnprocessableEntity,
	parley.EInvalidMediaItem:     http.StatusUnprocessableEntity,
	parley.EValidation:           http.StatusUnprocessableEntity,
	parley.EInvalidRequest:       http.StatusBadRequest,
	parley.ERateLimited:          http.StatusTooManyRequests,
	parley.EUnavailable:          http.StatusServiceUnavailable,
	parley.EInternal:             http.StatusInternalServerError,

	parley.ECampaignNotFound:      http.StatusNotFound, // D16
	parley.EFlowNotFound:          http.StatusNotFound, // D21
	parley.ECampaignNotCancelable: http.StatusConflict,
	parley.ECampaignNotEditable:   http.StatusConflict,
}

// retryUnavailable is the Retry-After of a 503 (seconds): a database
// that comes back, or a disk with space again, serves within it.
const retryUnavailable = "5"

// errorBody is the envelope of every error (spec "Errors").
type errorBody struct {
	Detail errorDetail `json:"detail"`
}

type errorDetail struct {
	Type  string `json:"type"`
	Msg   string `json:"msg"`
	Field string `json:"field,omitempty"`
}

// writeError answers err in the envelope. Only internal errors are logged
// here, with the request id, since their text never reaches the caller.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var se *signing.Error
	if errors.As(err, &se) {
		err = &parley.Error{Code: parley.ENotAuthenticated, Message: se.Error()}
	}
	code := parley.ErrorCode(err)
	if code == parley.EInternal && s.StorageFull != nil && s.StorageFull(err) {
		// Checked first: PostgreSQL's disk_full is also a class 53
		// "insufficient resources", which Unavailable takes.
		s.logger.LogAttrs(r.Context(), slog.LevelWarn, "storage full",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		err = parley.Errorf(parley.EUnavailable, "Service unavailable: the server's storage is full. Try again later.")
		code = parley.EUnavailable
	}
	if code == parley.EInternal && s.Unavailable != nil && s.Unavailable(err) {
		s.logger.LogAttrs(r.Context(), slog.LevelWarn, "database unavailable",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		err = parley.Errorf(parley.EUnavailable, "Service unavailable: the database cannot be reached. Try again shortly.")
		code = parley.EUnavailable
	}
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		// When to try again, for clients and proxies that read it; a
		// handler that knows better has set its own.
		w.Header().Set("Retry-After", retryUnavailable)
	}
	var field string
	var pe *parley.Error
	if errors.As(err, &pe) {
		field = pe.Field
	}
	if d, ok := parley.RetryAfter(err); ok {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(d.Seconds())))))
	}
	if code == parley.EInternal {
		s.logger.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	}
	writeJSON(w, status, errorBody{Detail: errorDetail{Type: code, Msg: parley.ErrorMessage(err), Field: field}})
}

// writeJSON encodes v as the response body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	a, err := encodeJSON(status, v)
	if err != nil {
		a = parley.Answer{Status: http.StatusInternalServerError, ContentType: jsonType,
			Body: []byte(`{"detail":{"type":"UNCAUGHT_ERROR","msg":"Internal server error"}}`)}
	}
	writeAnswer(w, &a)
}

const jsonType = "application/json; charset=utf-8"

// encodeJSON renders v as a JSON answer.
func encodeJSON(status int, v any) (parley.Answer, error) {
	b, err := json.Marshal(v)
	return parley.Answer{Status: status, ContentType: jsonType, Body: b}, err
}

// writeAnswer writes a rendered answer.
func writeAnswer(w http.ResponseWriter, a *parley.Answer) {
	if a.ContentType != "" {
		w.Header().Set("Content-Type", a.ContentType)
	}
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}
