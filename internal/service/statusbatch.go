package service

import (
	"context"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/store"
)

var _ delivery.BatchSink = (*Service)(nil)

// ApplyStatuses implements delivery.BatchSink: ApplyStatus for many
// reports in one transaction, the reports that make the same change moved
// by one statement. A campaign's 100,000 delivery reports then cost a few
// hundred transactions instead of 100,000 (on PostgreSQL each also takes
// the activity trigger's lock, which serializes them).
func (s *Service) ApplyStatuses(ctx context.Context, us []delivery.StatusUpdate) ([]error, error) {
	errs := make([]error, len(us))
	name := s.provider.Name()
	// Reports that carry Parley's id (the simulator's) are found by it;
	// the others, and those whose message has another provider id, by the
	// provider's id.
	var mids []int64
	for _, u := range us {
		if u.MessageID != 0 {
			mids = append(mids, u.MessageID)
		}
	}
	byID, err := s.db.ReportedByIDs(ctx, mids)
	if err != nil {
		return nil, err
	}
	var pids []string
	for _, u := range us {
		if m := byID[u.MessageID]; m == nil || m.Provider != name || m.ProviderID != u.ProviderID {
			pids = append(pids, u.ProviderID)
		}
	}
	byPID, err := s.db.ReportedByProviderIDs(ctx, name, pids)
	if err != nil {
		return nil, err
	}
	for _, m := range byID {
		if m.Provider == name && m.ProviderID != "" {
			byPID[m.ProviderID] = m
		}
	}
	type key struct {
		brand             int64
		status, code, msg string
		providerCode      string // the provider's code of an opt-out (history detail)
		at                time.Time
		unsubscribed      bool
	}
	type member struct {
		id, userID int64
		providerID string // set when the message does not carry it yet
	}
	groups := map[key][]member{}
	var order []key
	now := s.db.Now()
	for i, u := range us {
		r := byPID[u.ProviderID]
		setPID := ""
		if r == nil && u.MessageID != 0 {
			// As ApplyStatus: a report about a message whose send is not
			// recorded yet is reported again; one naming a message this
			// provider was not asked to send is ignored.
			switch m := byID[u.MessageID]; {
			case m == nil:
			case m.Provider == "" && m.Status == parley.StatusQueued:
				errs[i] = delivery.ErrNotYet
				continue
			case m.Provider == name:
				r, setPID = m, u.ProviderID
			}
		}
		if r == nil {
			s.logger.Info("status update for an unknown provider id: ignored", "provider", name, "provider_id", u.ProviderID)
			continue
		}
		at := u.At
		if at.IsZero() {
			at = now
		}
		k := key{brand: r.BrandID, status: u.Status, at: at.UTC(), unsubscribed: u.Unsubscribed}
		if u.Status == parley.StatusFailed || u.Status == parley.StatusUndelivered {
			k.code, k.msg = u.ErrorCode, u.ErrorMessage
			if u.Unsubscribed {
				k.code, k.providerCode = CodeUnsubscribed, u.ErrorCode
			}
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], member{id: r.ID, userID: r.UserID, providerID: setPID})
	}
	if len(order) == 0 {
		return errs, nil
	}
	err = s.db.WithOriginTx(ctx, parley.Origin{Source: parley.SourceCarrier}, func(tx *store.Tx) error {
		// The caller records that the reports were applied with a commit
		// of its own afterwards (delivery.BatchSink), which puts this one
		// on disk too; lost with it in a crash, the reports come again.
		if err := tx.RelaxCommit(ctx); err != nil {
			return err
		}
		for _, k := range order {
			ms := groups[k]
			ids := make([]int64, len(ms))
			for i, m := range ms {
				ids[i] = m.id
			}
			t := store.Transition{Status: k.status, At: k.at}
			if k.status == parley.StatusFailed || k.status == parley.StatusUndelivered {
				code, msg := k.code, k.msg
				t.ErrorCode, t.ErrorMessage = &code, &msg
			}
			moved, err := tx.TransitionMany(ctx, k.brand, ids, t)
			if err != nil {
				return err
			}
			status := k.status
			tx.AfterCommit(func() {
				for range moved {
					s.observeTransition(status)
				}
			})
			if err := s.emitMany(ctx, tx, k.brand, "message."+k.status, moved); err != nil {
				return err
			}
			did := make(map[int64]bool, len(moved))
			for _, id := range moved {
				did[id] = true
			}
			for _, m := range ms {
				if !did[m.id] {
					continue // a repeated or late update changes nothing
				}
				if m.providerID != "" {
					if err := tx.SetProviderID(ctx, k.brand, m.id, m.providerID); err != nil {
						return err
					}
				}
				if k.unsubscribed {
					if err := s.setConsent(ctx, tx, k.brand, m.userID, false, parley.SourceCarrier, name+":"+k.providerCode, m.id); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}
