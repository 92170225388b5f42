package service_test

import (
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// TestGuessColumn: the console's mapping step guesses each column's
// contact field from its name (D22).
func TestGuessColumn(t *testing.T) {
	fields := []*parley.CustomField{{FieldName: "Loyalty Tier"}}
	for header, want := range map[string]string{
		"phone_number": "phone_number", "Mobile Phone": "phone_number", "Phone": "phone_number",
		"First Name": "first_name", "Surname": "last_name", "E-mail": "email_address", "email": "email_address",
		"ZIP": "postal_code", "Birthday": "date_of_birth", "Accepts SMS Marketing": "messaging_consent",
		"custom_loyalty_tier": "custom_loyalty_tier", "Loyalty Tier": "custom_loyalty_tier", "loyalty_tier": "custom_loyalty_tier",
		"custom_colour": "", "Notes": "", "errors": "",
	} {
		if got := service.GuessColumn(header, fields); got != want {
			t.Errorf("GuessColumn(%q) = %q, want %q", header, got, want)
		}
	}
}
