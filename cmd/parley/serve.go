package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/store"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("serve")
	dbf := addDBFlags(fs, getenv)
	addr := stringFlag(fs, getenv, "addr", "127.0.0.1:8080", "address to listen on")
	metricsAddr := stringFlag(fs, getenv, "metrics-addr", "", "serve /metrics on this separate address instead of on --addr")
	blobURL := stringFlag(fs, getenv, "blob", "", "media store, a gocloud.dev bucket URL (default: a directory in data-dir)")
	maxFile := stringFlag(fs, getenv, "max-file-size", "5242880", "largest upload in bytes")
	maxImport := stringFlag(fs, getenv, "max-import-size", "104857600", "largest CSV import file in bytes")
	skew := stringFlag(fs, getenv, "clock-skew", "300s", "accepted x-date drift of signed requests")
	bodyTimeout := stringFlag(fs, getenv, "body-timeout", "30s", "time a request body may take to arrive")
	uploadTimeout := stringFlag(fs, getenv, "upload-timeout", "10m", "time the body of a signed upload or import may take to arrive")
	logFormat := stringFlag(fs, getenv, "log-format", "", "text or json (default: text on a terminal, json otherwise)")
	role := stringFlag(fs, getenv, "role", "all", "what this node does: all, api (HTTP API only) or worker (delivery only)")
	provider := stringFlag(fs, getenv, "provider", "sim", "SMS provider: sim (local simulator) or twilio")
	publicURL := stringFlag(fs, getenv, "public-url", "", "URL at which providers reach this service (default: http://<addr>)")
	workers := stringFlag(fs, getenv, "workers", "200", "deliveries worked at once on this node")
	rescue := stringFlag(fs, getenv, "job-rescue-after", "1m", "how long a silent running job waits before it is taken over")
	simDelay := stringFlag(fs, getenv, "sim-delay", "500ms", "sim provider: time from sent to delivered")
	twSID := stringFlag(fs, getenv, "twilio-account-sid", "", "Twilio account SID")
	twToken := stringFlag(fs, getenv, "twilio-auth-token", "", "Twilio auth token")
	twService := stringFlag(fs, getenv, "twilio-messaging-service-sid", "", "Twilio Messaging Service SID (instead of the brand's number as From)")
	adminToken := stringFlag(fs, getenv, "admin-token", "", "enables the operators' API under /admin/v1 with this bearer token (at least 32 characters)")
	allowPrivate := boolFlag(fs, getenv, "webhook-allow-private", false, "let webhook endpoints use http:// and private or loopback addresses (development only)")
	pprofAddr := stringFlag(fs, getenv, "pprof-addr", "", "serve Go's /debug/pprof profiles on this address (keep it private; off by default)")
	rateLimit := stringFlag(fs, getenv, "rate-limit", "100", "requests per second per credential, per node (0 turns limiting off)")
	rateBurst := stringFlag(fs, getenv, "rate-burst", "200", "requests a credential may send at once")
	usRules := boolFlag(fs, getenv, "us-sending-rules", true, "hold MARKETING messages to the US quiet hours as well as each brand's sending window (D17)")
	replay := boolFlag(fs, getenv, "replay-protection", true, "reject a signed write sent twice (only benchmarks should turn it off)")
	trustedProxy := stringFlag(fs, getenv, "trusted-proxy", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client (console sign-in throttling)")
	aif := addAIFlags(fs, getenv) // extractor.go
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		// "--webhook-allow-private true" leaves "true" here: say so.
		return fmt.Errorf("unexpected argument %q (a boolean flag takes its value as --flag=false)", fs.Arg(0))
	}
	cfg, err := dbf.config()
	if err != nil {
		return err
	}
	cfg.Blob = *blobURL
	if cfg.MaxFileSize, err = strconv.ParseInt(*maxFile, 10, 64); err != nil || cfg.MaxFileSize < 1 {
		return fmt.Errorf("--max-file-size: want a positive number of bytes")
	}
	if cfg.MaxImportSize, err = strconv.ParseInt(*maxImport, 10, 64); err != nil || cfg.MaxImportSize < 1 {
		return fmt.Errorf("--max-import-size: want a positive number of bytes")
	}
	if cfg.ClockSkew, err = time.ParseDuration(*skew); err != nil || cfg.ClockSkew <= 0 {
		return fmt.Errorf("--clock-skew: want a positive duration such as 300s")
	}
	if cfg.BodyTimeout, err = time.ParseDuration(*bodyTimeout); err != nil || cfg.BodyTimeout <= 0 {
		return fmt.Errorf("--body-timeout: want a positive duration such as 30s")
	}
	if cfg.UploadTimeout, err = time.ParseDuration(*uploadTimeout); err != nil || cfg.UploadTimeout <= 0 {
		return fmt.Errorf("--upload-timeout: want a positive duration such as 10m")
	}
	if cfg.Workers, err = strconv.Atoi(*workers); err != nil || cfg.Workers < 1 {
		return fmt.Errorf("--workers: want a positive number")
	}
	if cfg.JobRescueAfter, err = time.ParseDuration(*rescue); err != nil || cfg.JobRescueAfter <= 0 {
		return fmt.Errorf("--job-rescue-after: want a positive duration such as 1m")
	}
	if cfg.SimDelay, err = time.ParseDuration(*simDelay); err != nil || cfg.SimDelay < 0 {
		return fmt.Errorf("--sim-delay: want a duration such as 500ms")
	}
	if cfg.SimDelay == 0 {
		cfg.SimDelay = -1 // at once
	}
	cfg.Role, cfg.Provider = *role, *provider
	cfg.MetricsAddr = *metricsAddr
	if cfg.AdminToken = *adminToken; cfg.AdminToken != "" && len(cfg.AdminToken) < 32 {
		return fmt.Errorf("--admin-token: use at least 32 characters")
	}
	cfg.WebhookAllowPrivate = *allowPrivate
	if cfg.RateLimit, err = strconv.ParseFloat(*rateLimit, 64); err != nil || cfg.RateLimit < 0 {
		return fmt.Errorf("--rate-limit: want requests per second, 0 for none")
	}
	if cfg.RateLimit == 0 {
		cfg.RateLimit = -1 // off
	}
	if cfg.RateBurst, err = strconv.Atoi(*rateBurst); err != nil || cfg.RateBurst < 1 {
		return fmt.Errorf("--rate-burst: want a positive number")
	}
	if cfg.TrustedProxies, err = parseTrustedProxies(*trustedProxy); err != nil {
		return err
	}
	cfg.NoReplayProtection = !*replay
	cfg.NoUSSendingRules = !*usRules
	cfg.Twilio = app.TwilioConfig{AccountSID: *twSID, AuthToken: *twToken, MessagingServiceSID: *twService}
	logger, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	cfg.Logger = logger
	// The extractor of auto-collected custom data (D20, extractor.go), for
	// the extraction sweep's app.Config.Extractor; its budget gets the
	// database once app.Open has opened it.
	extractor, err := aif.extractor(getenv, logger)
	if err != nil {
		return err
	}
	cfg.Extractor = extractor
	tuneGC(getenv)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var metricsLn net.Listener
	if cfg.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		defer metricsLn.Close()
	}
	baseURL := "http://" + displayAddr(ln.Addr())
	cfg.PublicURL = *publicURL
	if cfg.PublicURL == "" {
		cfg.PublicURL = baseURL
	}

	a, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	if getenv("GOMEMLIMIT") == "" {
		// The audience engine's brands are live heap: the soft limit rises
		// with them, or the collector would run without end (issue #34).
		a.Service.Audience().Resized = func(n int64) { debug.SetMemoryLimit(gcLimit + n + n/4) }
	}
	extractor.Bind(a.DB)
	if err := firstRun(ctx, a, baseURL, stdout); err != nil {
		ln.Close()
		return err
	}
	if err := a.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Parley is serving on %s (database %s, role %s, provider %s)\n",
		baseURL, store.Redact(a.Config.DB), a.Config.Role, a.Config.Provider)
	if err := consoleBanner(ctx, a, baseURL, stdout); err != nil {
		return err
	}

	srv := &http.Server{
		Handler:           a.Server.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	servers := []*http.Server{srv}
	errc := make(chan error, 3)
	go func() { errc <- srv.Serve(ln) }()
	if metricsLn != nil {
		msrv := &http.Server{Handler: a.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: srv.ErrorLog}
		servers = append(servers, msrv)
		go func() { errc <- msrv.Serve(metricsLn) }()
		fmt.Fprintf(stdout, "Metrics are served on http://%s/metrics\n", displayAddr(metricsLn.Addr()))
	}
	if *pprofAddr != "" {
		pln, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("--pprof-addr: %w", err)
		}
		psrv := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: srv.ErrorLog}
		servers = append(servers, psrv)
		go func() { errc <- psrv.Serve(pln) }()
		fmt.Fprintf(stdout, "Profiles are served on http://%s/debug/pprof/\n", displayAddr(pln.Addr()))
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Ctrl-C: stop accepting, let in-flight requests finish.
	fmt.Fprintln(stdout, "Shutting down…")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(shutdownCtx); err != nil {
			return err
		}
	}
	if err := a.Stop(shutdownCtx); err != nil {
		return err
	}
	for range servers {
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

// firstRun gives an empty database a demo brand and credential and saves
// them where `parley call` finds them, so a fresh checkout works at once.
func firstRun(ctx context.Context, a *app.App, baseURL string, stdout io.Writer) error {
	brands, err := a.Service.ListBrands(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(a.Config.DataDir, devCredentialsFile)
	if len(brands) > 0 {
		if creds, err := readDevCredentials(path); err == nil {
			// The address may have changed since the file was written.
			creds.URL = baseURL
			if err := writeDevCredentials(path, creds); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "Dev credentials: %s (try: go run ./cmd/parley call GET /api/v1/brand)\n", path)
		}
		return nil
	}
	b, err := a.Service.CreateBrand(ctx, "Demo Brand", "+15005550006")
	if err != nil {
		return err
	}
	c, err := a.Service.CreateCredential(ctx, b.ID)
	if err != nil {
		return err
	}
	// An inactive Welcome flow shows what flows do (issue #33).
	if _, err := a.Service.CreateDemoFlows(ctx, b.ID); err != nil {
		return err
	}
	creds := devCredentials{URL: baseURL, Username: c.Username, Secret: c.Secret, BrandID: b.ID}
	if err := writeDevCredentials(path, creds); err != nil {
		return err
	}
	fmt.Fprintf(stdout, `Created demo brand %q (id %d) with credential %s.
Saved it to %s (keep it private).
Call the API from another terminal:
  go run ./cmd/parley call GET /api/v1/brand
`, b.Name, b.ID, c.Username, path)
	return nil
}

func displayAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if ok && tcp.IP.IsUnspecified() {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	return a.String()
}

func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	if format == "" {
		format = "json"
		if isTerminal(w) {
			format = "text"
		}
	}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("--log-format: want text or json, not %q", format)
}

// pprofHandler serves Go's profiles, for finding a bottleneck under load.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// gcLimit is serve's soft memory limit before the audience engine's.
const gcLimit = 100 << 20

// tuneGC trades memory the service does not use for CPU it does: the
// collector runs at 4× the live heap (not 2×) until the heap nears 100 MiB,
// then as often as it must. Measured on `parley bench --scenario lookup`:
// +13 % requests/s, peak RSS 140 MiB instead of 90. GOGC and GOMEMLIMIT,
// when set, win.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(gcLimit)
	}
}
