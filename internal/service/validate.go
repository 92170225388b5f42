package service

import (
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/geo"
	"github.com/parleyhq/parley/internal/phone"
)

// Limits from the spec's Limits table, counted in runes (D5).
const (
	maxNameLen  = 50
	maxEmailLen = 50
)

func invalid(field, rule string) *parley.Error {
	return parley.FieldError(parley.EValidation, field, rule)
}

// normalizePhone applies D5; the message quotes the value as sent.
func (s *Service) normalizePhone(raw string) (string, error) {
	e164, ok := phone.Normalize(raw, s.PhoneMode)
	if !ok {
		return "", &parley.Error{
			Code:    parley.EInvalidPhoneNumber,
			Message: "Invalid phone number [" + raw + "] provided.",
			Field:   "phone_number",
		}
	}
	return e164, nil
}

// optString validates a nullable string member with a rune limit and an
// optional format check, returning the value to store.
func optString(field string, o parley.Optional[string], limit int, check func(string) *parley.Error) (*string, error) {
	if !o.Valid {
		return nil, nil
	}
	if limit > 0 && utf8.RuneCountInString(o.Value) > limit {
		return nil, invalid(field, "at most "+strconv.Itoa(limit)+" characters")
	}
	if check != nil {
		if err := check(o.Value); err != nil {
			return nil, err
		}
	}
	v := o.Value
	return &v, nil
}

func checkEmail(s string) *parley.Error {
	// One addr-spec: no display name, no angle brackets (D5).
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return invalid("email_address", "must be an email address (name@example.com)")
	}
	return nil
}

// checkDateOfBirth wants MM/DD/YYYY, a real calendar date, not in the
// future, year ≥ 1900 (D5).
func (s *Service) checkDateOfBirth(v string) *parley.Error {
	t, ok := parseDate(v, "01/02/2006")
	if !ok {
		return invalid("date_of_birth", "must be a date in the form MM/DD/YYYY")
	}
	if t.Year() < 1900 {
		return invalid("date_of_birth", "year must be 1900 or later")
	}
	if t.After(s.db.Now().UTC()) {
		return invalid("date_of_birth", "must not be in the future")
	}
	return nil
}

// parseDate parses v in layout and insists on the exact form (zero-padded,
// no extra text) and a real calendar date.
func parseDate(v, layout string) (time.Time, bool) {
	if len(v) != len(layout) {
		return time.Time{}, false
	}
	for i := range layout {
		if (layout[i] >= '0' && layout[i] <= '9') != (v[i] >= '0' && v[i] <= '9') {
			return time.Time{}, false
		}
	}
	t, err := time.Parse(layout, v)               // rejects 02/30 and 13/01
	return t, err == nil && parley.InYearRange(t) // and year 0000 (#31)
}

func checkChannel(o parley.Optional[string]) (*string, error) {
	if !o.Valid {
		return nil, nil
	}
	for i := range parley.Channels {
		if equalFoldASCII(o.Value, parley.Channels[i]) {
			c := parley.Channels[i]
			return &c, nil
		}
	}
	return nil, invalid("channel", "must be one of "+strings.Join(parley.Channels, ", "))
}

var zipRE = regexp.MustCompile(`^[0-9]{5}(-[0-9]{4})?$`)

// resolveLocation applies D7: a ZIP or ZIP+4 gives a location, with the
// place members null when the data set does not know the ZIP, and
// time_zone (D17) null when it knows no zone for it.
func resolveLocation(o parley.Optional[string]) (*parley.Location, error) {
	if !o.Valid {
		return nil, nil
	}
	if !zipRE.MatchString(o.Value) {
		return nil, &parley.Error{
			Code:    parley.EInvalidPostalCode,
			Message: "Invalid postal code [" + o.Value + "] provided: want a US ZIP code, 12345 or 12345-6789.",
			Field:   "postal_code",
		}
	}
	// One allocation holds the location and the strings its members point to.
	box := &struct {
		loc  parley.Location
		vals [6]string
	}{}
	box.vals[0] = o.Value
	box.loc.PostalCode = &box.vals[0]
	if p, ok := geo.Lookup(o.Value[:5]); ok {
		box.vals[1], box.vals[2], box.vals[3], box.vals[4], box.vals[5] = p.City, p.County, p.State, p.StateCode, p.TimeZone
		for i, dst := range []**string{&box.loc.City, &box.loc.County, &box.loc.State, &box.loc.StateCode, &box.loc.TimeZone} {
			if box.vals[i+1] != "" {
				*dst = &box.vals[i+1]
			}
		}
	}
	return &box.loc, nil
}

// equalFoldASCII is strings.EqualFold for ASCII letters only, so that
// look-alike runes (the Kelvin sign, the long s) do not match.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
