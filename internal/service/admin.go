package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/signing"
)

type cachedCredential struct {
	brandID  int64
	secret   []byte
	revokeAt time.Time // zero: not revoked, nor scheduled to be by a rotation
	expires  time.Time // of this cache entry
	// lastUsed is the last_used_at (µs) this node knows is stored.
	lastUsed *atomic.Int64
}

// LastUsedGranularity is how stale a credential's last_used_at may be: it
// is written at most this often per node, not on every request.
const LastUsedGranularity = time.Minute

// CredentialSecret implements parley.CredentialSource. Credentials are
// cached for CredentialTTL so that verifying a request costs no query.
func (s *Service) CredentialSecret(ctx context.Context, username string) (int64, []byte, error) {
	now := time.Now()
	s.credMu.RLock()
	c, ok := s.creds[username]
	s.credMu.RUnlock()
	if !ok || !now.Before(c.expires) {
		rec, err := s.db.FindCredential(ctx, username)
		if errors.Is(err, store.ErrNotFound) {
			s.credMu.Lock()
			delete(s.creds, username)
			s.credMu.Unlock()
			return 0, nil, errUnknownCredential
		}
		if err != nil {
			return 0, nil, err
		}
		secret, err := s.box.Open(rec.SealedSecret, []byte(rec.Username))
		if err != nil {
			return 0, nil, err
		}
		c = cachedCredential{brandID: rec.BrandID, secret: secret, expires: now.Add(s.CredentialTTL), lastUsed: new(atomic.Int64)}
		if rec.RevokedAt != nil {
			c.revokeAt = rec.RevokedAt.Time
		}
		if rec.LastUsedAt != nil {
			c.lastUsed.Store(rec.LastUsedAt.UnixMicro())
		}
		s.credMu.Lock()
		s.creds[username] = c
		s.credMu.Unlock()
	}
	if !c.revokeAt.IsZero() && !s.db.Now().Before(c.revokeAt) {
		return 0, nil, errUnknownCredential
	}
	return c.brandID, c.secret, nil
}

// errUnknownCredential never tells an unknown username from a revoked one (D2).
var errUnknownCredential = parley.Errorf(parley.ENotAuthenticated, "HMAC signature verification failed")

// CredentialUsed implements parley.CredentialSource: it records that the
// credential signed a request that verified, at most once per
// LastUsedGranularity per node.
func (s *Service) CredentialUsed(ctx context.Context, username string) {
	s.credMu.RLock()
	c, ok := s.creds[username]
	s.credMu.RUnlock()
	if !ok {
		return
	}
	now := s.db.Now()
	last := c.lastUsed.Load()
	if now.Sub(time.UnixMicro(last)) < LastUsedGranularity || !c.lastUsed.CompareAndSwap(last, now.UnixMicro()) {
		return
	}
	if err := s.db.TouchCredential(ctx, username, now); err != nil {
		c.lastUsed.Store(last) // the next request tries again
		s.logger.LogAttrs(ctx, slog.LevelWarn, "credential last-used not recorded",
			slog.String("username", username), slog.String("error", err.Error()))
	}
}

// CreateBrand creates a brand; its phone number must be valid E.164.
func (s *Service) CreateBrand(ctx context.Context, name, phoneNumber string) (*parley.Brand, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, invalid("name", "required")
	}
	e164, err := s.normalizePhone(phoneNumber)
	if err != nil {
		return nil, err
	}
	b := &parley.Brand{Name: name, PhoneNumber: e164}
	if err := s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateBrand(ctx, b) }); err != nil {
		return nil, err
	}
	return b, nil
}

// UpdateBrand changes a brand's name, number or keyword replies (D12).
func (s *Service) UpdateBrand(ctx context.Context, id int64, u store.BrandUpdate) (*parley.Brand, error) {
	if u.Name != nil && strings.TrimSpace(*u.Name) == "" {
		return nil, invalid("name", "must not be empty")
	}
	if u.PhoneNumber != nil {
		e164, err := s.normalizePhone(*u.PhoneNumber)
		if err != nil {
			return nil, err
		}
		u.PhoneNumber = &e164
	}
	err := s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.UpdateBrand(ctx, id, u) })
	if errors.Is(err, store.ErrNotFound) {
		return nil, brandNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return s.FindBrand(ctx, id)
}

// BrandReplies returns a brand's keyword replies ("" means the default).
func (s *Service) BrandReplies(ctx context.Context, id int64) (store.BrandReplies, error) {
	return s.db.FindBrandReplies(ctx, id)
}

// ListBrands returns every brand.
func (s *Service) ListBrands(ctx context.Context) ([]*parley.Brand, error) {
	return s.db.ListBrands(ctx)
}

// CreateCredential issues a credential for the brand. The returned Secret
// is the only time the secret is shown; it is stored sealed (D2).
func (s *Service) CreateCredential(ctx context.Context, brandID int64) (*parley.Credential, error) {
	if _, err := s.FindBrand(ctx, brandID); err != nil {
		return nil, err
	}
	c, rec := s.newCredential(brandID)
	if err := s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateCredential(ctx, rec) }); err != nil {
		return nil, err
	}
	c.CreatedAt = rec.CreatedAt
	return c, nil
}

// newCredential makes a username and secret, and the record that stores them.
func (s *Service) newCredential(brandID int64) (*parley.Credential, *store.CredentialRecord) {
	var name [8]byte
	rand.Read(name[:])
	c := &parley.Credential{
		Username: "pk_" + hex.EncodeToString(name[:]),
		BrandID:  brandID,
		Secret:   signing.NewSecret(),
	}
	return c, &store.CredentialRecord{
		Username:     c.Username,
		BrandID:      brandID,
		SealedSecret: s.box.Seal([]byte(c.Secret), []byte(c.Username)),
	}
}

// ListCredentials returns the brand's credentials without their secrets.
func (s *Service) ListCredentials(ctx context.Context, brandID int64) ([]*parley.Credential, error) {
	recs, err := s.db.ListCredentials(ctx, brandID)
	if err != nil {
		return nil, err
	}
	out := make([]*parley.Credential, 0, len(recs))
	for _, r := range recs {
		out = append(out, credentialOf(r))
	}
	return out, nil
}

func credentialOf(r *store.CredentialRecord) *parley.Credential {
	return &parley.Credential{Username: r.Username, BrandID: r.BrandID,
		CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt, LastUsedAt: r.LastUsedAt}
}

// RevokeCredential stops a credential from signing requests, on this node
// at once and on others within CredentialTTL.
func (s *Service) RevokeCredential(ctx context.Context, username string) error {
	err := s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.RevokeCredentialAt(ctx, username, tx.Now()) })
	if errors.Is(err, store.ErrNotFound) {
		return parley.Errorf(parley.ENotFound, "No active credential [%s].", username)
	}
	if err != nil {
		return err
	}
	s.forgetCredential(username)
	return nil
}

// How long a rotated credential keeps working, by default and at most.
const (
	DefaultRotationGrace = 24 * time.Hour
	MaxRotationGrace     = 30 * 24 * time.Hour
)

// RotateCredential issues a new credential for the brand of username and
// lets the old one work for grace more (0 means DefaultRotationGrace), so
// clients can switch without a failed request. The new credential's secret
// is shown once; the old one's revoked_at says when it stops.
func (s *Service) RotateCredential(ctx context.Context, username string, grace time.Duration) (newCred, old *parley.Credential, err error) {
	if grace < 0 || grace > MaxRotationGrace {
		return nil, nil, invalid("grace", "must be between 0 and 30 days")
	}
	if grace == 0 {
		grace = DefaultRotationGrace
	}
	rec, err := s.db.FindCredential(ctx, username)
	if err == nil && rec.RevokedAt != nil && !s.db.Now().Before(rec.RevokedAt.Time) {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, parley.Errorf(parley.ENotFound, "No active credential [%s].", username)
	}
	if err != nil {
		return nil, nil, err
	}
	newCred, newRec := s.newCredential(rec.BrandID)
	err = s.db.WithTx(ctx, func(tx *store.Tx) error {
		// Already rotated and in its grace period: it keeps its earlier end.
		if err := tx.RevokeCredentialAt(ctx, username, tx.Now().Add(grace)); err != nil && (rec.RevokedAt == nil || !errors.Is(err, store.ErrNotFound)) {
			return err
		}
		return tx.CreateCredential(ctx, newRec)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, parley.Errorf(parley.ENotFound, "No active credential [%s].", username)
	}
	if err != nil {
		return nil, nil, err
	}
	newCred.CreatedAt = newRec.CreatedAt
	s.forgetCredential(username)
	if rec, err = s.db.FindCredential(ctx, username); err != nil {
		return nil, nil, err
	}
	return newCred, credentialOf(rec), nil
}

func (s *Service) forgetCredential(username string) {
	s.credMu.Lock()
	delete(s.creds, username)
	s.credMu.Unlock()
}

// CreateCustomField configures a custom data field for the brand.
func (s *Service) CreateCustomField(ctx context.Context, f *parley.CustomField) error {
	if _, err := s.FindBrand(ctx, f.BrandID); err != nil {
		return err
	}
	key := parley.CustomDataKey(f.FieldName)
	if key == "" {
		return invalid("field_name", "must contain a letter or digit")
	}
	if f.CustomDataType < parley.CustomInteger || f.CustomDataType > parley.CustomDate {
		return invalid("custom_data_type", "must be 1–6")
	}
	if f.Subtype != 0 && (f.CustomDataType != parley.CustomList || f.Subtype < parley.CustomInteger ||
		f.Subtype > parley.CustomDate || f.Subtype == parley.CustomList) {
		return invalid("subtype", "only a LIST field has a subtype, and it is a scalar type 1–3, 5 or 6")
	}
	if f.IsAppend && f.CustomDataType != parley.CustomList {
		return invalid("is_append", "only a LIST field appends")
	}
	if err := checkEnumBounds(f.AvailableEnumValues); err != nil {
		return err
	}
	if err := checkFieldText(f); err != nil {
		return err
	}
	return s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateCustomField(ctx, f, key) })
}

// DeleteCustomField removes a field; users keep values already stored.
func (s *Service) DeleteCustomField(ctx context.Context, brandID, id int64) error {
	err := s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.DeleteCustomField(ctx, brandID, id) })
	if errors.Is(err, store.ErrNotFound) {
		return parley.Errorf(parley.ENotFound, "Custom data field [%d] not found.", id)
	}
	return err
}

// AllSegments returns every segment of the brand, archived and inactive too.
func (s *Service) AllSegments(ctx context.Context, brandID int64) ([]*parley.Segment, error) {
	return s.db.ListSegments(ctx, brandID, false)
}
