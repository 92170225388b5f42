package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
	"github.com/parleyhq/parley/internal/webhook"
)

const (
	maxWebhookDescription = 500
	secretGrace           = 24 * time.Hour
	failingDisableAfter   = 5 * 24 * time.Hour
)

// SetWebhooks configures event delivery: allowPrivate lets endpoints be
// http:// and on private addresses (development and tests only).
func (s *Service) SetWebhooks(allowPrivate bool, m WebhookMetrics, opts ...webhook.Option) {
	s.webhookAllowPrivate = allowPrivate
	s.webhookClient = webhook.Client(allowPrivate, opts...)
	s.webhookMetrics = m
}

// findWebhook is tx.FindWebhook with the API's not-found error.
func findWebhook(ctx context.Context, tx *store.Tx, brandID, id int64) (*store.WebhookRecord, error) {
	w, err := tx.FindWebhook(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, webhookNotFound(id)
	}
	return w, err
}

func webhookNotFound(id int64) *parley.Error {
	return parley.Errorf(parley.ENotFound, "Webhook with ID [%d] not found.", id)
}

// webhookAD binds a sealed secret to its brand.
func webhookAD(brandID int64) []byte { return []byte("webhook:" + strconv.FormatInt(brandID, 10)) }

// webhookURL checks an endpoint URL and returns it as stored: its host in
// the ASCII form that is checked and dialed.
func (s *Service) webhookURL(raw string) (string, error) {
	u, err := webhook.NormalizeURL(raw, s.webhookAllowPrivate)
	if err != nil {
		return "", invalid("url", err.Error())
	}
	return u, nil
}

func checkEventTypes(types []string) error {
	if len(types) == 0 {
		return invalid("event_types", "at least one event type, or \"*\" for all")
	}
	for i, t := range types {
		if t != "*" && !slices.Contains(parley.EventTypes, t) {
			return invalid("event_types", "["+strconv.Itoa(i)+"] "+strconv.Quote(t)+" is not an event type; known: "+strings.Join(parley.EventTypes, ", "))
		}
	}
	return nil
}

func checkDescription(d string) error {
	if utf8.RuneCountInString(d) > maxWebhookDescription {
		return invalid("description", "at most "+strconv.Itoa(maxWebhookDescription)+" characters")
	}
	return nil
}

// CreateWebhook implements parley.WebhookService.
func (s *Service) CreateWebhook(ctx context.Context, o parley.Origin, brandID int64, in parley.WebhookCreate) (*parley.Webhook, error) {
	if !in.URL.Valid {
		return nil, invalid("url", "required")
	}
	url, err := s.webhookURL(in.URL.Value)
	if err != nil {
		return nil, err
	}
	if !in.EventTypes.Valid {
		return nil, invalid("event_types", "required")
	}
	if err := checkEventTypes(in.EventTypes.Value); err != nil {
		return nil, err
	}
	if err := checkDescription(in.Description.Value); err != nil {
		return nil, err
	}
	secret := webhook.NewSecret()
	w := &store.WebhookRecord{Webhook: parley.Webhook{BrandID: brandID, URL: url, Description: in.Description.Value,
		EventTypes: in.EventTypes.Value}, Secret: s.box.Seal([]byte(secret), webhookAD(brandID))}
	var out parley.Webhook
	err = s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		if err := tx.LockBrand(ctx, brandID); err != nil {
			return err
		}
		n, err := tx.CountWebhooks(ctx, brandID)
		if err != nil {
			return err
		}
		if n >= parley.MaxWebhooks {
			return parley.Errorf(parley.EValidation, "At most %d webhooks per brand.", parley.MaxWebhooks)
		}
		if err := tx.InsertWebhook(ctx, w); err != nil {
			return err
		}
		out = w.Webhook
		out.Secret = secret
		tx.Answer(&out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWebhooks implements parley.WebhookService.
func (s *Service) ListWebhooks(ctx context.Context, brandID int64) ([]*parley.Webhook, error) {
	recs, err := s.db.ListWebhooks(ctx, nil, brandID, false)
	if err != nil {
		return nil, err
	}
	out := make([]*parley.Webhook, 0, len(recs))
	for _, r := range recs {
		w := r.Webhook
		out = append(out, &w)
	}
	return out, nil
}

// FindWebhook implements parley.WebhookService.
func (s *Service) FindWebhook(ctx context.Context, brandID, id int64) (*parley.Webhook, error) {
	r, err := s.db.FindWebhook(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, webhookNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	w := r.Webhook
	return &w, nil
}

// UpdateWebhook implements parley.WebhookService.
func (s *Service) UpdateWebhook(ctx context.Context, o parley.Origin, brandID, id int64, in parley.WebhookUpdate) (*parley.Webhook, error) {
	var url string
	if in.URL.Set {
		if !in.URL.Valid {
			return nil, invalid("url", "must not be null")
		}
		var err error
		if url, err = s.webhookURL(in.URL.Value); err != nil {
			return nil, err
		}
	}
	if in.EventTypes.Set {
		if !in.EventTypes.Valid {
			return nil, invalid("event_types", "must not be null")
		}
		if err := checkEventTypes(in.EventTypes.Value); err != nil {
			return nil, err
		}
	}
	if err := checkDescription(in.Description.Value); err != nil {
		return nil, err
	}
	if in.Disabled.Set && !in.Disabled.Valid {
		return nil, invalid("disabled", "must be a boolean, not null")
	}
	var out parley.Webhook
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		w, err := findWebhook(ctx, tx, brandID, id)
		if err != nil {
			return err
		}
		if in.URL.Set {
			w.URL = url
		}
		if in.EventTypes.Set {
			w.EventTypes = in.EventTypes.Value
		}
		if in.Description.Set {
			w.Description = in.Description.Value
		}
		if in.Disabled.Set {
			if w.Disabled && !in.Disabled.Value {
				w.FailingSince = nil // re-enabled: the failure clock starts again
			}
			w.Disabled = in.Disabled.Value
		}
		if err := tx.UpdateWebhook(ctx, w); err != nil {
			return err
		}
		out = w.Webhook
		tx.Answer(&out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteWebhook implements parley.WebhookService.
func (s *Service) DeleteWebhook(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Webhook, error) {
	var out parley.Webhook
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		w, err := findWebhook(ctx, tx, brandID, id)
		if err != nil {
			return err
		}
		out = w.Webhook
		return tx.DeleteWebhook(ctx, brandID, id)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// RotateWebhookSecret implements parley.WebhookService: the old secret keeps
// signing beside the new one for 24 h, so receivers can switch over.
func (s *Service) RotateWebhookSecret(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Webhook, error) {
	secret := webhook.NewSecret()
	var out parley.Webhook
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		w, err := findWebhook(ctx, tx, brandID, id)
		if err != nil {
			return err
		}
		until := tx.Now().Add(secretGrace)
		w.OldSecret, w.OldSecretUntil = w.Secret, &until
		w.Secret = s.box.Seal([]byte(secret), webhookAD(brandID))
		if err := tx.UpdateWebhook(ctx, w); err != nil {
			return err
		}
		out = w.Webhook
		out.Secret = secret
		tx.Answer(&out)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWebhookDeliveries implements parley.WebhookService.
func (s *Service) ListWebhookDeliveries(ctx context.Context, brandID, id int64, limit int, cursor string) ([]*parley.WebhookDelivery, string, error) {
	if _, err := s.FindWebhook(ctx, brandID, id); err != nil {
		return nil, "", err
	}
	limit, before, err := pageArgs(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	ds, err := s.db.ListWebhookDeliveries(ctx, brandID, id, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(ds) > limit {
		ds = ds[:limit]
		next = encodeCursor(ds[len(ds)-1].ID)
	}
	return ds, next, nil
}

// TestWebhook implements parley.WebhookService.
func (s *Service) TestWebhook(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Event, error) {
	var ev *parley.Event
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		w, err := findWebhook(ctx, tx, brandID, id)
		if err != nil {
			return err
		}
		data, _ := json.Marshal(map[string]any{"webhook_id": w.ID, "message": "This is a test event from Parley."})
		ev, err = s.writeEvent(ctx, tx, brandID, parley.EventWebhookTest, data)
		if err != nil {
			return err
		}
		s.jobsOf(tx).Webhook(brandID, ev.ID, w.ID)
		tx.Answer(ev)
		return nil
	})
	return ev, err
}

// RetryWebhookDelivery implements parley.WebhookService.
func (s *Service) RetryWebhookDelivery(ctx context.Context, o parley.Origin, brandID, id, deliveryID int64) (*parley.WebhookDelivery, error) {
	d, err := s.db.FindWebhookDelivery(ctx, brandID, id, deliveryID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotFound, "Delivery with ID [%d] not found.", deliveryID)
	}
	if err != nil {
		return nil, err
	}
	err = s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		s.jobsOf(tx).Webhook(brandID, d.EventID, id)
		tx.Answer(d)
		return nil
	})
	return d, err
}

// writeEvent appends an event to the outbox inside tx.
func (s *Service) writeEvent(ctx context.Context, tx *store.Tx, brandID int64, typ string, data json.RawMessage) (*parley.Event, error) {
	ev, payload, err := newEvent(tx.Now(), typ, data)
	if err != nil {
		return nil, err
	}
	return ev, tx.InsertEvent(ctx, brandID, ev, payload)
}

// newEvent builds an event with a new id, and its payload as delivered.
func newEvent(now time.Time, typ string, data json.RawMessage) (*parley.Event, []byte, error) {
	var b [12]byte
	rand.Read(b[:])
	ev := &parley.Event{ID: "evt_" + hex.EncodeToString(b[:]), Type: typ, CreatedAt: parley.Time{Time: now}, Data: data}
	payload, err := json.Marshal(ev)
	return ev, payload, err
}

// emit records an event of a change in the change's transaction and queues
// its delivery to every enabled endpoint of the brand that subscribes to
// it. A brand without such an endpoint gets no event row: nobody could
// receive it.
func (s *Service) emit(ctx context.Context, tx *store.Tx, brandID int64, typ string, resource any) error {
	hooks, err := s.hooksFor(ctx, tx, brandID, typ)
	if err != nil {
		return err
	}
	return s.emitTo(ctx, tx, brandID, typ, hooks, resource)
}

// hooksFor returns the enabled endpoints of the brand that take typ.
func (s *Service) hooksFor(ctx context.Context, tx *store.Tx, brandID int64, typ string) ([]*store.WebhookRecord, error) {
	hooks, err := s.db.ListWebhooks(ctx, tx, brandID, true)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(hooks, func(w *store.WebhookRecord) bool { return !subscribes(w.EventTypes, typ) }), nil
}

// emitTo writes the event and queues it to hooks; nothing when there are none.
func (s *Service) emitTo(ctx context.Context, tx *store.Tx, brandID int64, typ string, hooks []*store.WebhookRecord, resource any) error {
	if len(hooks) == 0 {
		return nil
	}
	data, err := json.Marshal(resource)
	if err != nil {
		return err
	}
	ev, err := s.writeEvent(ctx, tx, brandID, typ, data)
	if err != nil {
		return err
	}
	p := s.jobsOf(tx)
	for _, w := range hooks {
		p.Webhook(brandID, ev.ID, w.ID)
	}
	return nil
}

func subscribes(types []string, typ string) bool {
	return slices.Contains(types, "*") || slices.Contains(types, typ)
}

// DeliverWebhook makes one attempt to deliver an event to an endpoint. It
// returns an error when the attempt should be retried (River schedules it
// with webhook.NextRetry); final says no retry follows.
//
// The endpoint is checked afresh at every attempt: it must still exist, be
// enabled and take the event's type (webhook.test is sent whatever the
// types); otherwise the delivery ends, unlogged. An id found is the
// endpoint the event was queued for, as ids are never reused (#15).
func (s *Service) DeliverWebhook(ctx context.Context, brandID int64, eventID string, endpointID int64, attempt int, final bool) error {
	w, err := s.db.FindWebhook(ctx, brandID, endpointID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted since
	}
	if err != nil {
		return err
	}
	if w.Disabled {
		return nil
	}
	typ, payload, _, err := s.db.FindEvent(ctx, brandID, eventID)
	if err != nil {
		return err
	}
	if typ != parley.EventWebhookTest && !subscribes(w.EventTypes, typ) {
		return nil // unsubscribed since
	}
	now := s.db.Now()
	sealed := [][]byte{w.Secret}
	if w.OldSecret != nil && w.OldSecretUntil != nil && now.Before(*w.OldSecretUntil) {
		sealed = append(sealed, w.OldSecret) // rotation: both sign for 24 h
	}
	secrets := make([]string, 0, len(sealed))
	for _, sc := range sealed {
		secret, err := s.box.Open(sc, webhookAD(brandID))
		if err != nil {
			return err
		}
		secrets = append(secrets, string(secret))
	}
	h, err := webhook.Headers(secrets, eventID, now, payload)
	if err != nil {
		return err
	}
	res := webhook.Deliver(ctx, s.webhookClient, w.URL, h, payload)
	d := &parley.WebhookDelivery{WebhookID: w.ID, EventID: eventID, EventType: typ, Attempt: attempt,
		LatencyMS: res.Latency.Milliseconds(), Response: res.Response}
	if res.Status != 0 {
		st := res.Status
		d.Status = &st
	}
	d.Error = res.Reason // never res.Err: its addresses are not the tenant's to see
	log := s.logger.With("brand_id", brandID, "webhook_id", w.ID, "event_id", eventID, "attempt", attempt,
		"status", res.Status, "latency", res.Latency)

	var retry error
	// change moves the endpoint to its new state and reports whether it
	// changed; expired says the endpoint has now failed for too long.
	var change func(tx *store.Tx, fw *store.WebhookRecord) (changed, expired bool)
	switch {
	case res.OK:
		d.Outcome = "delivered"
		change = func(_ *store.Tx, fw *store.WebhookRecord) (bool, bool) {
			if fw.FailingSince == nil {
				return false, false
			}
			fw.FailingSince = nil
			return true, false
		}
	case res.Disable:
		d.Outcome = "disabled"
		log.Warn("webhook.disabled", "reason", "the endpoint answered 410 Gone")
		change = func(_ *store.Tx, fw *store.WebhookRecord) (bool, bool) { fw.Disabled = true; return true, false }
	default:
		d.Outcome = "retrying"
		if final {
			d.Outcome = "failed"
		} else {
			retry = errors.New("webhook: delivery failed: " + strings.TrimSpace(d.Error+" "+http.StatusText(res.Status)))
		}
		change = func(tx *store.Tx, fw *store.WebhookRecord) (bool, bool) {
			if fw.FailingSince == nil {
				t := tx.Now()
				fw.FailingSince = &t
				return true, false
			}
			if tx.Now().Sub(*fw.FailingSince) > failingDisableAfter && !fw.Disabled {
				fw.Disabled = true
				return true, true
			}
			return false, false
		}
	}
	// The endpoint's state first, so the attempt is logged with what
	// actually follows it: an endpoint disabled after 5 days of failures
	// gets no retry, and the log must not promise one. Both in one
	// transaction, so an endpoint deleted meanwhile keeps no entry.
	outcome := d.Outcome
	var expired bool
	var failingSince *time.Time
	err = s.db.WithTx(ctx, func(tx *store.Tx) error {
		expired, d.Outcome = false, outcome
		fw, err := tx.FindWebhook(ctx, brandID, endpointID)
		if err != nil {
			return err
		}
		changed, exp := change(tx, fw)
		if changed {
			if err := tx.UpdateWebhook(ctx, fw); err != nil {
				return err
			}
			expired, failingSince = exp, fw.FailingSince
		}
		if expired {
			d.Outcome = "disabled"
		}
		return tx.InsertWebhookDelivery(ctx, brandID, d)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile, and its delivery log with it
	}
	if err != nil {
		return err
	}
	if expired {
		retry = nil
		log.Warn("webhook.disabled", "reason", "failing for more than 5 days", "failing_since", failingSince)
	}
	if res.Err != nil {
		log = log.With("error", res.Err) // the whole error, for the operator only
	}
	log.Info("webhook delivery attempt", "outcome", d.Outcome)
	if s.webhookMetrics != nil {
		s.webhookMetrics.WebhookAttempt(d.Outcome, res.Latency)
	}
	return retry
}

// WebhookMetrics observes webhook deliveries.
type WebhookMetrics interface {
	WebhookAttempt(outcome string, latency time.Duration)
}
