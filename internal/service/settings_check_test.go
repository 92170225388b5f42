package service_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// TestCheckBrandSettingsAll: CheckBrandSettings names every bad member at
// once, a frequency cap's two numbers each, with the rules of
// UpdateBrandSettings; a good update has none (issue #32, D17).
func TestCheckBrandSettingsAll(t *testing.T) {
	t.Parallel()
	bad := parley.BrandSettingsUpdate{
		SendingWindow: parley.Some(parley.SendingWindow{Start: "25:00", End: "9pm"}),
		TimeZone:      parley.Some("Mars/Olympus"),
		FrequencyCap:  parley.Some(parley.FrequencyCap{MaxMessages: 0, PerHours: 9000}),
		SendRate:      parley.Some(-1.0),
	}
	var fields []string
	for _, err := range service.CheckBrandSettings(bad) {
		var pe *parley.Error
		if !errors.As(err, &pe) || pe.Code != parley.EValidation {
			t.Fatalf("error %v is no validation error", err)
		}
		fields = append(fields, pe.Field)
	}
	want := []string{"sending_window.start", "sending_window.end", "time_zone", "frequency_cap.max_messages", "frequency_cap.per_hours", "send_rate"}
	if !slices.Equal(fields, want) {
		t.Errorf("fields = %v, want %v", fields, want)
	}
	good := parley.BrandSettingsUpdate{
		SendingWindow: parley.Some(parley.SendingWindow{Start: "09:00", End: "21:00"}),
		TimeZone:      parley.Some("America/Chicago"),
		FrequencyCap:  parley.Some(parley.FrequencyCap{MaxMessages: 3, PerHours: 24}),
		SendRate:      parley.Some(2.5),
	}
	if errs := service.CheckBrandSettings(good); len(errs) != 0 {
		t.Errorf("a good update: %v", errs)
	}
}
