// Package httpapi serves Parley's HTTP API: routing, request signing checks,
// decoding, encoding and the one error-to-status table. It knows the
// services only through the interfaces of package parley.
package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/signing"
)

// DefaultMaxJSONBody is the largest JSON body accepted (D4).
const DefaultMaxJSONBody = 1 << 20

// DefaultBodyTimeout and DefaultUploadTimeout are the defaults of
// Config.BodyTimeout and Config.UploadTimeout.
const (
	DefaultBodyTimeout   = 30 * time.Second
	DefaultUploadTimeout = 10 * time.Minute
)

// MediaOpener serves signed media links (D9).
type MediaOpener interface {
	OpenMedia(ctx context.Context, brand, id, expires, sig string) (*parley.File, io.ReadCloser, error)
}

// Pinger reports whether the database answers, and takes writes after
// one failed for want of space, for /readyz.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config are the dependencies and settings of a Server.
type Config struct {
	Users       parley.UserService
	Messages    parley.MessageService
	Files       parley.FileService
	Brands      parley.BrandService
	Credentials parley.CredentialSource
	Webhooks    parley.WebhookService
	History     parley.HistoryService
	Segments    parley.SegmentService
	Campaigns   parley.CampaignService
	// Flows serves /flows and /events (D21).
	Flows parley.FlowService
	Media MediaOpener
	// Simulator serves POST /api/v1/simulator/inbound (D12); nil, as with
	// every provider but sim, leaves the path out (404).
	Simulator parley.Simulator
	DB        Pinger
	Logger    *slog.Logger
	// Metrics serves /metrics; nil leaves the route out.
	Metrics http.Handler
	// RequestMetrics observes every request; nil observes none.
	RequestMetrics RequestMetrics
	// Trace wraps the router to trace requests (OpenTelemetry's otelhttp);
	// the router sets Pattern on the *Request it passes in. Nil traces nothing.
	Trace func(http.Handler) http.Handler

	// ClockSkew is the accepted x-date drift (D2); 0 means 300 s.
	ClockSkew time.Duration
	// Now is the clock for signature checks; nil means time.Now.
	Now func() time.Time
	// MaxJSONBody bounds JSON bodies; 0 means 1 MiB.
	MaxJSONBody int64
	// MaxUploadBody bounds a whole multipart upload body; 0 means 6 MiB.
	MaxUploadBody int64
	// Imports serves the CSV imports under /imports (issue #7).
	Imports parley.ImportService
	// MaxImportBody bounds a whole import upload body; 0 means 101 MiB.
	MaxImportBody int64
	// BodyTimeout bounds the time a request body may take to arrive, counted
	// from the end of its headers; 0 means DefaultBodyTimeout. A client
	// that trickles its body would otherwise hold its connection and
	// goroutine for as long as it likes (#15).
	BodyTimeout time.Duration
	// UploadTimeout replaces BodyTimeout for the body of an upload or an
	// import once its signature is verified; 0 means DefaultUploadTimeout.
	UploadTimeout time.Duration
	// TempDir holds upload bodies while their digest is checked; "" means os.TempDir.
	TempDir string
	// Unavailable reports errors that mean the database cannot answer now;
	// they are 503 service_unavailable instead of 500.
	Unavailable func(error) bool
	// StorageFull reports errors that mean a disk is full (the database's
	// or the media's); they are 503 service_unavailable too, saying so.
	StorageFull func(error) bool
	// AdminService and AdminToken enable the operators' API under /admin/v1
	// (D10); without a token it is not served at all.
	AdminService Admin
	AdminToken   string
	// OpsOnly serves only /healthz, /readyz and /metrics (a worker node).
	OpsOnly bool
	// Extra are more routes by pattern ("POST /providers/twilio/status"):
	// the provider's callbacks, which verify their own signatures.
	Extra map[string]http.Handler
	// RequestTimeout bounds the work of one API request, so a database
	// that stops answering yields a 503 instead of a hang; 0 means 15 s.
	RequestTimeout time.Duration

	// ReplayProtection makes a signed write run once (D2): its signature is
	// recorded with its change, and a copy fails as replayed.
	ReplayProtection bool
	// Signatures records the signatures of refused writes under
	// ReplayProtection; nil records only those of writes that committed.
	Signatures SignatureStore
	// Idempotency stores responses to Idempotency-Key requests (D13);
	// nil ignores the header.
	Idempotency IdempotencyStore
	// RateLimit is each credential's sustained requests per second and
	// RateBurst its bucket size (D13); RateLimit 0 turns limiting off.
	RateLimit float64
	RateBurst int
}

// Server is the HTTP API.
type Server struct {
	Config
	logger   *slog.Logger
	verifier signing.Verifier
	handler  http.Handler
	limits   *limiter
}

// New returns a Server; Handler gives its http.Handler.
func New(cfg Config) *Server {
	s := &Server{Config: cfg, logger: cfg.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.MaxJSONBody == 0 {
		s.MaxJSONBody = DefaultMaxJSONBody
	}
	if s.MaxUploadBody == 0 {
		s.MaxUploadBody = 6 << 20
	}
	if s.MaxImportBody == 0 {
		s.MaxImportBody = 101 << 20
	}
	if s.RequestTimeout == 0 {
		s.RequestTimeout = 15 * time.Second
	}
	if s.BodyTimeout <= 0 {
		s.BodyTimeout = DefaultBodyTimeout
	}
	if s.UploadTimeout <= 0 {
		s.UploadTimeout = DefaultUploadTimeout
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.ClockSkew <= 0 {
		s.ClockSkew = signing.DefaultSkew
	}
	s.limits = newLimiter(s.RateLimit, s.RateBurst, s.Now)
	s.verifier = signing.Verifier{Skew: cfg.ClockSkew, Now: cfg.Now}
	mux := http.NewServeMux()
	s.routes(mux)
	var h http.Handler = mux
	if s.RequestMetrics != nil {
		h = withPattern(h)
	}
	h = s.withRecover(h)
	if s.Trace != nil {
		h = s.Trace(h) // outside withRecover, so a span sees its panic's 500
	}
	s.handler = s.withBodyDeadline(s.withRequestLog(h))
	return s
}

// Handler returns the server's root handler.
func (s *Server) Handler() http.Handler { return s.handler }
