package service

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/parleyhq/parley/internal/phone"

	"github.com/parleyhq/parley"
)

// The console's contact form (issue #32): every refusal at once, and a
// phone number in national form.

// UserFieldErrors checks each member of in on its own, as CreateUser and
// UpdateUser would, and returns every refusal (each *parley.Error names its
// member: "email_address", "custom_data.<key>"), none when all pass. The
// console shows them all at once; the API answers the first.
func (s *Service) UserFieldErrors(ctx context.Context, brandID int64, in parley.UserFields) []*parley.Error {
	var out []*parley.Error
	add := func(field string, err error) {
		if err == nil {
			return
		}
		e, ok := err.(*parley.Error)
		if !ok {
			e = &parley.Error{Code: parley.EInternal, Message: err.Error()}
		}
		if e.Field == "" {
			e = &parley.Error{Code: e.Code, Message: e.Message, Field: field}
		}
		out = append(out, e)
	}
	one := func(field string, f parley.UserFields) { add(field, s.applyFields(&parley.User{}, &f)) }
	one("first_name", parley.UserFields{FirstName: in.FirstName})
	one("last_name", parley.UserFields{LastName: in.LastName})
	one("email_address", parley.UserFields{EmailAddress: in.EmailAddress})
	one("date_of_birth", parley.UserFields{DateOfBirth: in.DateOfBirth})
	one("postal_code", parley.UserFields{PostalCode: in.PostalCode})
	if in.CustomData.Valid {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(in.CustomData.Value, &m); err != nil {
			add("custom_data", invalid("custom_data", "must be an object"))
			return out
		}
		fields, err := s.customFields(ctx, brandID)
		if err != nil {
			add("custom_data", err)
			return out
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			raw, _ := json.Marshal(map[string]json.RawMessage{k: m[k]})
			if _, err := parseCustomData(raw, fields); err != nil {
				add("custom_data."+k, err)
			}
		}
	}
	return out
}

// NationalNumber reads a phone number as the console's forms take it: with
// a leading "+" as it is (D5), else as a national number of country (ISO
// 3166-1 alpha-2, "US" when empty), as imports do (D22). It returns what
// CreateUser is then given, which validates it: the raw text when it is no
// number of the country.
func NationalNumber(raw, country string) string {
	raw = strings.TrimSpace(raw)
	if raw == "" || strings.HasPrefix(raw, "+") {
		return raw
	}
	if country == "" {
		country = parley.DefaultCountry
	}
	// As an import reads it (D22): the same rules for the same number.
	if e164, ok := phone.NormalizeIn(raw, strings.ToUpper(country), phone.Possible); ok {
		return e164
	}
	return raw
}

// CheckPhone reports whether raw (E.164 after NationalNumber) is a number
// CreateUser takes (D5), so a form can say so with its other refusals.
func (s *Service) CheckPhone(raw string) error {
	_, err := s.normalizePhone(raw)
	return err
}
