// Package app wires Parley's adapters together: database, job queue, blob
// store, services and the HTTP server. The parley command and the end-to-end
// tests share it, so tests run exactly what ships.
package app

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob:// buckets
	_ "gocloud.dev/blob/fileblob"  // file:// buckets
	_ "gocloud.dev/blob/gcsblob"   // gs:// buckets
	_ "gocloud.dev/blob/s3blob"    // s3:// buckets (AWS and S3-compatible stores)

	"github.com/parleyhq/parley/internal/httpapi"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/service"
	"github.com/parleyhq/parley/internal/store"
)

// Config is everything an operator can set.
type Config struct {
	// DB is "sqlite:PATH"; default sqlite:<DataDir>/parley.db.
	DB string
	// DBMaxConns bounds the connection pool (PostgreSQL) or the reader pool
	// (SQLite); 0 picks a default from the number of CPUs.
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
	// ClockSkew is the accepted x-date drift (D2); 0 means 300 s.
	ClockSkew time.Duration
	Logger    *slog.Logger
	// Now replaces the clock in tests.
	Now func() time.Time
}

// DefaultDataDir is where a zero-setup install keeps its state.
const DefaultDataDir = "./parley-data"

// App is a running Parley.
type App struct {
	DB      *store.DB
	Queue   *jobs.Queue
	Bucket  *blob.Bucket
	Service *service.Service
	Server  *httpapi.Server
	Config  Config
}

// Open opens the database (migrating it), the queue and the bucket, and
// builds the services and the HTTP server.
func Open(ctx context.Context, cfg Config) (_ *App, err error) {
	cfg = withDefaults(cfg)
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

	a := &App{Config: cfg}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.DB, err = OpenDB(ctx, cfg.DB, store.Options{MaxConns: cfg.DBMaxConns, MaxReadConns: cfg.DBMaxConns}); err != nil {
		return nil, err
	}
	if cfg.Now != nil {
		a.DB.Now = cfg.Now
	}
	if a.Queue, err = jobs.Open(a.DB.Writer(), a.DB.Engine()); err != nil {
		return nil, err
	}
	if a.Bucket, err = openBucket(ctx, cfg); err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("parley media links"))
	a.Service = service.New(a.DB, a.Queue, a.Bucket, box, mac.Sum(nil))
	a.Service.PhoneMode = mode
	a.Service.MaxFileSize = cfg.MaxFileSize
	a.Server = httpapi.New(httpapi.Config{
		Users: a.Service, Messages: a.Service, Files: a.Service, Brands: a.Service,
		Credentials: a.Service, Media: a.Service, DB: a.DB,
		Logger:        cfg.Logger,
		Metrics:       promhttp.Handler(),
		ClockSkew:     cfg.ClockSkew,
		Now:           cfg.Now,
		MaxUploadBody: cfg.MaxFileSize + 1<<20, // room for the multipart framing
		Unavailable:   store.IsUnavailable,
	})
	return a, nil
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
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
	b, err := blob.OpenBucket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("app: blob store %q: %w", u, err)
	}
	return b, nil
}
