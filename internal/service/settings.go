package service

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/sendwindow"
	"github.com/parleyhq/parley/internal/store"
)

// MaxSendRate bounds a brand's send_rate: more than any provider account
// takes, and it keeps the pacing arithmetic exact.
const MaxSendRate = 10000

// BrandSettings returns a brand's sending rules (D17).
func (s *Service) BrandSettings(ctx context.Context, brandID int64) (*parley.BrandSettings, error) {
	st, err := s.db.BrandSettings(ctx, brandID)
	if err == nil {
		err = s.brandIdentity(ctx, brandID, st)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, brandNotFound(brandID)
	}
	return st, err
}

// UpdateBrandSettings changes the members of u that are set and returns
// the brand's settings; a bad value fails the whole update (D17).
func (s *Service) UpdateBrandSettings(ctx context.Context, brandID int64, u parley.BrandSettingsUpdate) (*parley.BrandSettings, error) {
	var out *parley.BrandSettings
	err := s.db.WithTx(ctx, func(tx *store.Tx) error {
		st, err := tx.BrandSettings(ctx, brandID)
		if err != nil {
			return err
		}
		if err := applySettings(st, u); err != nil {
			return err
		}
		out = st
		if err := tx.SaveBrandSettings(ctx, brandID, st); err != nil {
			return err
		}
		return s.updateBrandIdentity(ctx, tx, brandID, u.BrandIdentityUpdate, st)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, brandNotFound(brandID)
	}
	return out, err
}

func brandNotFound(id int64) error {
	return parley.Errorf(parley.ENotFound, "Brand [%d] not found.", id)
}

// applySettings checks u and applies it to st.
func applySettings(st *parley.BrandSettings, u parley.BrandSettingsUpdate) error {
	if u.SendingWindow.Set {
		w := u.SendingWindow.Value
		if !u.SendingWindow.Valid {
			return invalid("sending_window", `must be {"start": "HH:MM", "end": "HH:MM"}`)
		}
		var we *sendwindow.WindowError
		if _, err := sendwindow.ParseWindow(w.Start, w.End); errors.As(err, &we) {
			return invalid("sending_window."+we.Field, `must be a time of day "HH:MM", 00:00 to 23:59`)
		} else if err != nil {
			return err
		}
		st.SendingWindow = w
	}
	if u.TimeZone.Set {
		if !u.TimeZone.Valid || !validZone(u.TimeZone.Value) {
			return invalid("time_zone", "must be an IANA time zone name, such as America/Chicago")
		}
		st.TimeZone = u.TimeZone.Value
	}
	if u.FrequencyCap.Set {
		st.FrequencyCap = u.FrequencyCap.Ptr()
		if c := st.FrequencyCap; c != nil {
			switch {
			case c.MaxMessages < 1:
				return invalid("frequency_cap.max_messages", "must be an integer ≥ 1")
			case c.PerHours < 1 || c.PerHours > 24*366:
				return invalid("frequency_cap.per_hours", "must be an integer from 1 to 8784 (a year)")
			}
		}
	}
	if u.SendRate.Set {
		r := u.SendRate.Value
		if !u.SendRate.Valid || math.IsNaN(r) || r < 0 || r > MaxSendRate {
			return invalid("send_rate", "must be a number of messages per second from 0 (no limit) to 10000")
		}
		st.SendRate = r
	}
	if err := applyKeywordReplies(st, u.KeywordReplies); err != nil {
		return err
	}
	if u.ExtractWhenOptedOut.Set {
		if !u.ExtractWhenOptedOut.Valid {
			return invalid("extract_when_opted_out", "must be true or false")
		}
		st.ExtractWhenOptedOut = u.ExtractWhenOptedOut.Value
	}
	return nil
}

// validZone reports whether name is an IANA zone this server knows; the
// names time.LoadLocation also takes ("", "UTC" aside, "Local") are not zones.
func validZone(name string) bool {
	if name == "" || name == "Local" || strings.HasPrefix(name, "/") {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}
