// Package app wires Parley's adapters together: database, job queue, blob
// store, services and the HTTP server. The parley command and the end-to-end
// tests share it, so tests run exactly what ships.
package app

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/console"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/delivery/sim"
	"github.com/parleyhq/parley/internal/delivery/twilio"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/rules"
	"github.com/parleyhq/parley/internal/httpapi"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/metrics"
	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/service"
	"github.com/parleyhq/parley/internal/store"
)

// Config is everything an operator can set.
type Config struct {
	// DB is "sqlite:PATH"; default sqlite:<DataDir>/parley.db.
	DB string
	// DBMaxConns bounds each of the two connection pools, transactions and
	// reads (PostgreSQL), or the reader pool (SQLite); 0 picks a default
	// from the number of CPUs.
	DBMaxConns int
	// DataDir holds the default database, media, key file and dev credentials.
	DataDir string
	// Blob is a gocloud.dev bucket URL for media; default a directory under DataDir.
	Blob string
	// SecretKey is the server key (base64 or hex, 32 bytes); default a key
	// file generated in DataDir.
	SecretKey string
	// PhoneValidation is "strict" (default) or "possible" (D5).
	PhoneValidation string
	// MaxFileSize bounds uploads (D9); 0 means 5 MiB.
	MaxFileSize int64
	// MaxImportSize bounds a CSV import file (issue #7); 0 means 100 MiB.
	MaxImportSize int64
	// ClockSkew is the accepted x-date drift (D2); 0 means 300 s.
	ClockSkew time.Duration
	// BodyTimeout and UploadTimeout bound the time a request body may take
	// to arrive (#15); 0 means httpapi's defaults.
	BodyTimeout, UploadTimeout time.Duration
	// RequestTimeout bounds an API request's work; 0 means httpapi's default.
	RequestTimeout time.Duration
	Logger         *slog.Logger
	// Now replaces the clock in tests.
	Now func() time.Time

	// Role is what this node does: "all" (default), "api" (HTTP API only) or
	// "worker" (delivery workers; HTTP serves only health and metrics).
	Role string
	// Provider sends messages: "sim" (default) or "twilio".
	Provider string
	// PublicURL is where providers reach this service: media links and
	// Twilio's callbacks are built on it. Default: the listen address.
	PublicURL string
	// MetricsAddr, when set, is where the parley command serves /metrics,
	// which the API listener then leaves out.
	MetricsAddr string
	// Twilio configures the twilio provider.
	Twilio TwilioConfig
	// Workers is how many deliveries run at once on a worker node; 0 means
	// 200 (measured: more workers let River batch its job completions).
	Workers int
	// JobRescueAfter is how long a running job may stay silent before it is
	// taken over (after a crash); 0 means 1 minute.
	JobRescueAfter time.Duration
	// AdminToken enables the operators' HTTP API under /admin/v1 (D10),
	// authenticated with "Authorization: Bearer <token>"; empty disables it.
	AdminToken string
	// WebhookAllowPrivate lets webhook endpoints use http:// and private,
	// loopback and link-local addresses: development and tests only (D11).
	WebhookAllowPrivate bool
	// RateLimit is each credential's sustained requests per second and
	// RateBurst its bucket (D13); 0 means 100 and 200, a negative RateLimit
	// turns limiting off. Limits are per node.
	RateLimit float64
	RateBurst int
	// NoReplayProtection accepts a signed write again within the clock
	// skew window (D2): benchmarks and tests that resend identical requests.
	NoReplayProtection bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed for the console's sign-in throttle (--trusted-proxy).
	TrustedProxies []netip.Prefix
	// NoUSSendingRules leaves only the brands' sending windows on MARKETING
	// messages, without the US rules (D17: --us-sending-rules=false).
	NoUSSendingRules bool
	// CampaignBatch is how many campaign messages one batch sends; 0 means
	// service.DefaultCampaignBatch (a smaller one on SQLite, whose one
	// writer the API's writes wait for).
	CampaignBatch int
	// CampaignPoll is how often a worker node looks for campaigns whose
	// send_at has come; 0 means 200 ms.
	CampaignPoll time.Duration
	// SegmentQueries is how many segment queries (count, users, preview)
	// a brand runs at once on this node, and SegmentQueryWait how long one
	// more waits before 429; 0 means service's defaults (issue #31).
	SegmentQueries   int
	SegmentQueryWait time.Duration
	// SimDelay is how long the sim provider takes to report delivery; 0
	// means 500 ms, a negative value means at once.
	SimDelay time.Duration
	// Extractor fills contacts' auto-collected custom data from their
	// texts (D20); nil means the offline rules extractor.
	Extractor extract.Extractor
	// ExtractionSweep is how often the extraction sweep's job, on a worker
	// node, looks for inbound texts to extract from (#19); 0 means 250 ms,
	// negative never (tests then sweep through Service.SweepExtractions).
	ExtractionSweep time.Duration
}

// TwilioConfig holds the Twilio account the twilio provider sends through.
type TwilioConfig struct {
	AccountSID, AuthToken, MessagingServiceSID string
	// BaseURL replaces Twilio's API origin: a Twilio-compatible API, or a
	// fake one in tests.
	BaseURL string
}

// DefaultDataDir is where a zero-setup install keeps its state.
const DefaultDataDir = "./parley-data"

// App is a running Parley.
type App struct {
	DB       *store.DB
	Queue    *jobs.Queue
	Bucket   *blob.Bucket
	Service  *service.Service
	Importer *service.Importer
	Server   *httpapi.Server
	Metrics  *metrics.Metrics
	Provider delivery.Provider
	Sim      *sim.Provider // when Provider is the simulator
	Config   Config

	// Operators signs operators in to the console (D19).
	Operators *service.Operators

	stop context.CancelFunc
	done chan struct{}
	// audStop ends the audience engine's warm-up and catch-ups (Start).
	audStop context.CancelFunc
	audDone chan struct{}

	// tracer is nil unless OTEL_* variables turn tracing on.
	tracer tracer
}

// Open opens the database (migrating it), the queue and the bucket, and
// builds the services and the HTTP server.
func Open(ctx context.Context, cfg Config) (_ *App, err error) {
	cfg = withDefaults(cfg)
	switch cfg.Role {
	case "all", "api", "worker":
	default:
		return nil, fmt.Errorf("app: unknown role %q (want all, api or worker)", cfg.Role)
	}
	mode, err := phone.ParseMode(cfg.PhoneValidation)
	if err != nil {
		return nil, err
	}
	key, err := serverKey(cfg)
	if err != nil {
		return nil, err
	}
	box, err := secretbox.New(key)
	if err != nil {
		return nil, err
	}
	// An answer is sealed per keyed request: a box whose random nonces
	// never run out, under a key of its own (issue #15).
	answers, err := secretbox.NewX(secretbox.DeriveKey(key, "parley idempotency answers"))
	if err != nil {
		return nil, err
	}

	a := &App{Config: cfg}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.DB, err = OpenDB(ctx, cfg.DB, store.Options{MaxConns: cfg.DBMaxConns, MaxReadConns: cfg.DBMaxConns,
		AnswerBox: answers, LegacyAnswerBox: box, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if cfg.Now != nil {
		a.DB.Now = cfg.Now
	}
	if a.Bucket, err = openBucket(ctx, cfg); err != nil {
		return nil, err
	}
	// Media links are signed under a subkey of their own (issue #31), as
	// the idempotency answers are sealed: each use of the server key has
	// its own. Links signed before (24 h at most, fetched by the provider
	// at once) stop working at the upgrade.
	mediaKey := secretbox.DeriveKey(key, "parley media links")
	// The service enqueues through the queue, and the queue's workers call
	// the service: the queue is set once both exist.
	enq := &lateQueue{}
	a.Service = service.New(a.DB, enq, a.Bucket, box, mediaKey)
	a.Service.PhoneMode = mode
	a.Service.MaxFileSize = cfg.MaxFileSize
	a.Importer = service.NewImporter(a.Service, enq)
	a.Importer.MaxSize = cfg.MaxImportSize
	a.Metrics = metrics.New(a.DB)
	a.Metrics.WatchReplayIndex(a.DB)

	var extra map[string]http.Handler
	var simulator parley.Simulator // D12: only the sim provider takes made-up inbound texts
	switch cfg.Provider {
	case "sim":
		a.Sim = sim.New(a.DB)
		a.Sim.Logger = cfg.Logger
		if cfg.Now != nil {
			a.Sim.Now = cfg.Now
		}
		if cfg.SimDelay != 0 {
			a.Sim.Delay = max(0, cfg.SimDelay)
		}
		a.Provider = a.Sim
		simulator = a.Service
	case "twilio":
		tw, err := twilio.New(twilio.Config{AccountSID: cfg.Twilio.AccountSID, AuthToken: cfg.Twilio.AuthToken,
			MessagingServiceSID: cfg.Twilio.MessagingServiceSID, PublicURL: cfg.PublicURL,
			BaseURL: cfg.Twilio.BaseURL, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		a.Provider = tw
		extra = map[string]http.Handler{
			"POST /providers/twilio/status":  tw.StatusHandler(a.Service),
			"POST /providers/twilio/inbound": tw.InboundHandler(a.Service),
		}
	default:
		return nil, fmt.Errorf("app: unknown provider %q (want sim or twilio)", cfg.Provider)
	}
	a.Service.SetDelivery(a.Provider, cfg.PublicURL, a.Metrics, cfg.Logger)
	a.Service.SetWebhooks(cfg.WebhookAllowPrivate, a.Metrics)
	a.Service.SetUSSendingRules(!cfg.NoUSSendingRules)
	a.Service.SetExtraction(cfg.Extractor, metrics.NewExtraction(a.Metrics))
	a.Service.SetSegmentQueries(cfg.SegmentQueries, cfg.SegmentQueryWait)

	var wc *jobs.WorkerConfig
	if cfg.Role != "api" {
		wc = &jobs.WorkerConfig{Deliverer: a.Service, Webhooks: a.Service, Purger: a.DB, Concurrency: cfg.Workers, RescueAfter: cfg.JobRescueAfter,
			Campaigns: a.Service, Logger: slog.New(slog.DiscardHandler), Gate: a.DB}
		// Campaigns (D16): a claim older than the rescue delay is one whose
		// sender died, as a job silent that long is.
		a.Service.SetCampaigns(cfg.CampaignBatch, cmp.Or(cfg.JobRescueAfter, time.Minute))
		// D20: a value within 10 s of its text with the rules extractor.
		if every := cmp.Or(cfg.ExtractionSweep, 250*time.Millisecond); every > 0 {
			wc.Extractions, wc.ExtractionEvery = a.Service, every
		}
	}
	if wc != nil {
		wc.Imports = a.Importer
	}
	if a.Queue, err = jobs.Open(a.DB.Writer(), a.DB.Engine(), wc); err != nil {
		return nil, err
	}
	enq.q = a.Queue
	a.Metrics.AddDBPools(a.DB.Pools())
	if a.tracer, err = openTracing(ctx, os.Getenv, cfg.Logger); err != nil {
		return nil, err
	}
	// The operator console (D19) on the API's port; a worker node serves
	// only health and metrics.
	a.Operators = service.NewOperators(a.Service, secretbox.DeriveKey(key, "parley operator password salts"))
	if cfg.Role != "worker" {
		if extra == nil {
			extra = map[string]http.Handler{}
		}
		con := console.New(console.Config{Service: a.Service, Operators: a.Operators, Importer: a.Importer, UploadTimeout: cfg.UploadTimeout, Logger: cfg.Logger, Now: cfg.Now,
			TrustedProxies: cfg.TrustedProxies, StorageFull: store.IsStorageFull})
		for pattern, h := range con.Routes() {
			extra[pattern] = h
		}
	}
	var trace func(http.Handler) http.Handler
	if a.tracer != nil {
		trace = a.tracer.wrap
	}
	a.Server = httpapi.New(httpapi.Config{
		Users: a.Service, Messages: a.Service, Files: a.Service, Brands: a.Service,
		Credentials: a.Service, Media: a.Service, DB: a.DB, Simulator: simulator,
		RequestMetrics: a.Metrics, Trace: trace,
		Logger:           cfg.Logger,
		Webhooks:         a.Service,
		History:          a.Service,
		Segments:         a.Service,
		Campaigns:        a.Service,
		Flows:            a.Service,
		AdminService:     a.Service,
		AdminToken:       cfg.AdminToken,
		Metrics:          a.apiMetrics(),
		ClockSkew:        cfg.ClockSkew,
		BodyTimeout:      cfg.BodyTimeout,
		UploadTimeout:    cfg.UploadTimeout,
		RequestTimeout:   cfg.RequestTimeout,
		Now:              cfg.Now,
		MaxUploadBody:    cfg.MaxFileSize + 1<<20, // room for the multipart framing
		Imports:          a.Importer,
		MaxImportBody:    cfg.MaxImportSize + 1<<20,
		Unavailable:      store.IsUnavailable,
		StorageFull:      store.IsStorageFull,
		ReplayProtection: !cfg.NoReplayProtection,
		Idempotency:      a.DB,
		Signatures:       a.DB,
		RateLimit:        max(0, cfg.RateLimit),
		RateBurst:        cfg.RateBurst,
		OpsOnly:          cfg.Role == "worker",
		Extra:            extra,
	})
	return a, nil
}

// lateQueue forwards to the queue once it exists.
type lateQueue struct{ q *jobs.Queue }

func (l *lateQueue) Insert(ctx context.Context, tx *sql.Tx, p *jobs.Pending) error {
	return l.q.Insert(ctx, tx, p)
}

func (l *lateQueue) Wake(queues []string) { l.q.Wake(queues) }

func (l *lateQueue) EnqueueImport(ctx context.Context, tx *sql.Tx, brandID, importID int64) error {
	return l.q.EnqueueImport(ctx, tx, brandID, importID)
}

// Start runs the background work of the node's role: the job workers and,
// with the sim provider, its status reports. Stop ends them.
func (a *App) Start(ctx context.Context) error {
	if a.Config.Role != "worker" && a.audStop == nil {
		// Nodes that answer segment questions load the brands with segments
		// and keep them current (issue #34).
		actx, stop := context.WithCancel(context.WithoutCancel(ctx))
		a.audStop, a.audDone = stop, make(chan struct{})
		go func() {
			defer close(a.audDone)
			a.Service.Audience().Run(actx)
		}()
	}
	if a.Config.Role == "api" {
		return nil
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	if err := a.Queue.Start(ctx); err != nil {
		// Not a.stop: Close would wait for background work that never
		// ran. The queue may have started before failing (a full disk).
		stop()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		a.Queue.Stop(sctx)
		cancel()
		return err
	}
	a.stop = stop
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		var wg sync.WaitGroup
		// D16: campaigns are resolved when send_at comes, by whichever
		// worker node looks first.
		wg.Go(func() { a.Service.RunCampaignScheduler(ctx, cmp.Or(a.Config.CampaignPoll, 200*time.Millisecond)) })
		// D21: each worker node runs the flow steps that are due.
		wg.Go(func() { a.Service.RunFlows(ctx) })
		wg.Go(func() { a.Service.RunFlowScans(ctx) })
		if a.Sim != nil {
			a.Sim.Run(ctx, a.Service)
		}
		wg.Wait()
	}()
	return nil
}

// Stop lets running deliveries finish (until ctx ends) and stops the
// background work.
func (a *App) Stop(ctx context.Context) error {
	if a.audStop != nil {
		a.audStop()
		<-a.audDone
		a.audStop = nil
	}
	if a.stop == nil {
		return nil
	}
	err := a.Queue.Stop(ctx)
	a.stop()
	<-a.done
	a.stop = nil
	return err
}

// OpenDB opens and migrates the database, River's tables included.
func OpenDB(ctx context.Context, dsn string, opt store.Options) (*store.DB, error) {
	db, err := store.Open(ctx, dsn, opt)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := jobs.Migrate(ctx, db.Writer(), db.Engine()); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close releases everything Open acquired.
func (a *App) Close() error {
	var errs []error
	if a.stop != nil || a.audStop != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, a.Stop(ctx))
		cancel()
	}
	if a.tracer != nil {
		// Flushes the spans still batched.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, a.tracer.Shutdown(ctx))
		cancel()
		a.tracer = nil
	}
	if a.Bucket != nil {
		errs = append(errs, a.Bucket.Close())
	}
	if a.DB != nil {
		errs = append(errs, a.DB.Close())
	}
	return errors.Join(errs...)
}

func withDefaults(cfg Config) Config {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.DB == "" {
		cfg.DB = "sqlite:" + filepath.Join(cfg.DataDir, "parley.db")
	}
	if cfg.PhoneValidation == "" {
		cfg.PhoneValidation = "strict"
	}
	if cfg.MaxFileSize == 0 {
		cfg.MaxFileSize = service.DefaultMaxFileSize
	}
	if cfg.MaxImportSize == 0 {
		cfg.MaxImportSize = service.DefaultMaxImportSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Role == "" {
		cfg.Role = "all"
	}
	if cfg.Provider == "" {
		cfg.Provider = "sim"
	}
	if cfg.Workers == 0 {
		cfg.Workers = 200
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = 100
	}
	if cfg.RateBurst == 0 {
		cfg.RateBurst = 200
	}
	if cfg.Extractor == nil {
		cfg.Extractor = rules.Extractor{}
	}
	return cfg
}

// serverKey returns the key that seals secrets: PARLEY_SECRET_KEY when set,
// else a key file in the data directory, created 0600 on first run.
func serverKey(cfg Config) ([]byte, error) {
	if cfg.SecretKey != "" {
		return secretbox.ParseKey(cfg.SecretKey)
	}
	key, _, err := secretbox.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "secret.key"))
	return key, err
}

func openBucket(ctx context.Context, cfg Config) (*blob.Bucket, error) {
	u := cfg.Blob
	if u == "" {
		dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "media"))
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		u = "file://" + filepath.ToSlash(dir)
		if !strings.HasPrefix(dir, "/") {
			u = "file:///" + filepath.ToSlash(dir) // Windows drive letters
		}
		u += "?" + url.Values{"create_dir": {"true"}}.Encode()
	}
	u = localTemp(u)
	if err := checkBlobScheme(u); err != nil {
		return nil, fmt.Errorf("app: blob store %q: %w", u, err)
	}
	b, err := blob.OpenBucket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("app: blob store %q: %w", u, err)
	}
	return b, nil
}

// localTemp makes a file:// bucket write its temporary files beside their
// destination, not in os.TempDir: fileblob renames them into place, and a
// rename across filesystems (a data directory on a container volume or
// another disk) fails with "invalid cross-device link" (issue #31 item 14).
// An operator's own no_tmp_dir stands.
func localTemp(bucketURL string) string {
	u, err := url.Parse(bucketURL)
	if err != nil || u.Scheme != "file" || u.Query().Has("no_tmp_dir") {
		return bucketURL // a bad URL is OpenBucket's to report
	}
	q := u.Query()
	q.Set("no_tmp_dir", "true")
	u.RawQuery = q.Encode()
	return u.String()
}
