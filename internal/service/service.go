// Package service holds Parley's business rules: validation, custom_data
// typing, brand scoping, and "persist + enqueue" in one transaction. It
// implements the service interfaces of package parley on top of the store.
package service

import (
	"context"
	"database/sql"
	"errors"
	"github.com/parleyhq/parley/internal/audience"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/webhook"
)

// Enqueuer puts jobs in the same transaction as the change that causes them.
type Enqueuer interface {
	Insert(ctx context.Context, tx *sql.Tx, p *jobs.Pending) error
	// Wake makes this process's workers of the queues look for jobs now
	// (they poll rarely: issue #35).
	Wake(queues []string)
}

// jobBatch holds the jobs of a transaction until it commits (store.Tx.Batch).
type jobBatch struct {
	q Enqueuer
	jobs.Pending
}

func (b *jobBatch) Flush(ctx context.Context, tx *store.Tx) error {
	queues := b.Queues()
	if err := b.q.Insert(ctx, tx.SQL(), &b.Pending); err != nil {
		return err
	}
	// Once committed, this process's workers start the jobs at once.
	tx.AfterCommit(func() { b.q.Wake(queues) })
	return nil
}

type jobBatchKey struct{}

// jobsOf returns the jobs tx will queue when it commits.
func (s *Service) jobsOf(tx *store.Tx) *jobs.Pending {
	return &tx.Batch(jobBatchKey{}, func() store.Flusher { return &jobBatch{q: s.queue} }).(*jobBatch).Pending
}

// DefaultMaxFileSize is the upload limit (D9).
const DefaultMaxFileSize = 5 << 20

// Service implements parley.UserService, MessageService, FileService,
// BrandService and CredentialSource.
type Service struct {
	db    *store.DB
	queue Enqueuer
	blob  *blob.Bucket
	box   *secretbox.Box
	// mediaKey signs media links (D9); derived from the server key.
	mediaKey []byte

	// PhoneMode is how strictly phone numbers are checked (D5).
	PhoneMode phone.Mode
	// MaxFileSize bounds uploads in bytes (D9).
	MaxFileSize int64
	// CredentialTTL is how long a credential stays cached in memory; a
	// revocation takes at most this long to reach every node.
	CredentialTTL time.Duration

	credMu sync.RWMutex
	creds  map[string]cachedCredential

	provider  delivery.Provider
	publicURL string
	metrics   DeliveryMetrics
	logger    *slog.Logger
	// usSendingRules intersects brands' sending windows with the US rules
	// (D17); on unless the server runs with --us-sending-rules=false.
	usSendingRules bool
	// aud answers segment counts, pages, previews and exports from memory
	// (issue #34); SQL while a brand loads.
	aud *audience.Engine
	// segGate bounds a brand's segment queries at once (segmentgate.go).
	segGate     *segmentGate
	segGateOnce sync.Once
	// resolveChunk is the users a resolution transaction reads (SetResolveChunk).
	resolveChunk int
	// campaignBatch and staleClaim tune the campaign sender (SetCampaigns).
	campaignBatch int
	staleClaim    time.Duration
	// beforeHandOver, set by tests only, runs just before a hand-over.
	beforeHandOver func(brandID int64, ids []int64)

	// extractor fills auto-collected custom data (D20); nil turns it off.
	extractor      extract.Extractor
	extractMetrics ExtractionMetrics

	// flowWake wakes this node's flow runner (RunFlows) when a run enters.
	flowWake chan struct{}
	// campaignWake wakes this node's campaign scheduler when a campaign
	// is scheduled or changed.
	campaignWake chan struct{}

	webhookAllowPrivate bool
	webhookClient       *http.Client
	webhookMetrics      WebhookMetrics
}

// New returns a Service on db, queue, the media bucket, the box that seals
// credential secrets, and the key that signs media links.
func New(db *store.DB, queue Enqueuer, bucket *blob.Bucket, box *secretbox.Box, mediaKey []byte) *Service {
	return &Service{
		db: db, queue: queue, blob: bucket, box: box,
		aud:            audience.New(db, nil),
		mediaKey:       mediaKey,
		PhoneMode:      phone.Strict,
		MaxFileSize:    DefaultMaxFileSize,
		CredentialTTL:  10 * time.Second,
		creds:          make(map[string]cachedCredential),
		flowWake:       make(chan struct{}, 1),
		campaignWake:   make(chan struct{}, 1),
		logger:         slog.New(slog.DiscardHandler),
		webhookClient:  webhook.Client(false),
		usSendingRules: true,
	}
}

var (
	_ parley.UserService      = (*Service)(nil)
	_ parley.MessageService   = (*Service)(nil)
	_ parley.FileService      = (*Service)(nil)
	_ parley.BrandService     = (*Service)(nil)
	_ parley.CredentialSource = (*Service)(nil)
	_ delivery.Sink           = (*Service)(nil)
	_ parley.WebhookService   = (*Service)(nil)
)

// FindBrand implements parley.BrandService.
func (s *Service) FindBrand(ctx context.Context, brandID int64) (*parley.Brand, error) {
	b, err := s.db.FindBrand(ctx, brandID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotFound, "Brand not found.")
	}
	return b, err
}

// ListSegments implements parley.BrandService.
func (s *Service) ListSegments(ctx context.Context, brandID int64) ([]*parley.Segment, error) {
	return s.db.ListSegments(ctx, brandID, true)
}

// ListCustomFields implements parley.BrandService.
func (s *Service) ListCustomFields(ctx context.Context, brandID int64) ([]*parley.CustomField, error) {
	return s.db.ListCustomFields(ctx, brandID)
}
