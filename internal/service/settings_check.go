package service

import (
	"github.com/parleyhq/parley"
)

// CheckBrandSettings returns every error of u at once, one per member (a
// frequency cap's two numbers each), with the rules UpdateBrandSettings
// applies, so a form can show each next to its field (issue #32, D17).
// UpdateBrandSettings stays the authority: it refuses at the first error.
func CheckBrandSettings(u parley.BrandSettingsUpdate) []error {
	var errs []error
	check := func(one parley.BrandSettingsUpdate) {
		if err := applySettings(&parley.BrandSettings{}, one); err != nil {
			errs = append(errs, err)
		}
	}
	if u.SendingWindow.Set && u.SendingWindow.Valid {
		// Each end alone, against a valid other end.
		w := u.SendingWindow.Value
		check(parley.BrandSettingsUpdate{SendingWindow: parley.Some(parley.SendingWindow{Start: w.Start, End: "00:00"})})
		check(parley.BrandSettingsUpdate{SendingWindow: parley.Some(parley.SendingWindow{Start: "00:00", End: w.End})})
	} else if u.SendingWindow.Set {
		check(parley.BrandSettingsUpdate{SendingWindow: u.SendingWindow})
	}
	if u.TimeZone.Set {
		check(parley.BrandSettingsUpdate{TimeZone: u.TimeZone})
	}
	if u.FrequencyCap.Set && u.FrequencyCap.Valid {
		c := u.FrequencyCap.Value
		check(parley.BrandSettingsUpdate{FrequencyCap: parley.Some(parley.FrequencyCap{MaxMessages: c.MaxMessages, PerHours: 1})})
		check(parley.BrandSettingsUpdate{FrequencyCap: parley.Some(parley.FrequencyCap{MaxMessages: 1, PerHours: c.PerHours})})
	}
	if u.SendRate.Set {
		check(parley.BrandSettingsUpdate{SendRate: u.SendRate})
	}
	if u.ExtractWhenOptedOut.Set {
		check(parley.BrandSettingsUpdate{ExtractWhenOptedOut: u.ExtractWhenOptedOut})
	}
	return errs
}
