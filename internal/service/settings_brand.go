package service

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/internal/store"
)

// maxBrandNameLen bounds a brand's name.
const maxBrandNameLen = 100

// brandIdentity fills st's name, number and default country (D22).
func (s *Service) brandIdentity(ctx context.Context, brandID int64, st *parley.BrandSettings) error {
	b, err := s.db.BrandIdentity(ctx, brandID)
	st.BrandIdentity = b
	return err
}

// updateBrandIdentity checks and applies the members of u that are set, in
// tx, and fills st with the result. A number another brand has is refused:
// inbound texts are routed to the brand by it.
func (s *Service) updateBrandIdentity(ctx context.Context, tx *store.Tx, brandID int64, u parley.BrandIdentityUpdate, st *parley.BrandSettings) error {
	b, err := tx.BrandIdentity(ctx, brandID)
	if err != nil {
		return err
	}
	if u.Name.Set {
		name := strings.TrimSpace(u.Name.Value)
		switch {
		case !u.Name.Valid || name == "":
			return invalid("name", "must not be empty: the brand's name, as contacts know it")
		case utf8.RuneCountInString(name) > maxBrandNameLen:
			return invalid("name", "at most 100 characters")
		case parley.ControlCharRule(name, false) != "":
			return invalid("name", parley.ControlCharRule(name, false))
		}
		b.Name = name
	}
	if u.PhoneNumber.Set {
		e164, ok := "", u.PhoneNumber.Valid
		if ok {
			e164, ok = phone.Normalize(strings.TrimSpace(u.PhoneNumber.Value), s.PhoneMode)
		}
		if !ok {
			return invalid("phone_number", "must be the brand's number in international form, such as +12125550100")
		}
		other, err := tx.BrandWithPhone(ctx, brandID, e164)
		if err != nil {
			return err
		}
		if other != 0 {
			return invalid("phone_number", e164+" is another brand's number; each brand needs its own, since replies are routed to the brand by the number they are sent to")
		}
		b.PhoneNumber = e164
	}
	if u.DefaultCountry.Set {
		c := strings.ToUpper(strings.TrimSpace(u.DefaultCountry.Value))
		if !u.DefaultCountry.Valid || !phone.Region(c) {
			return invalid("default_country", "must be a two-letter country code (ISO 3166-1 alpha-2), such as US, CA or GB")
		}
		b.DefaultCountry = c
	}
	st.BrandIdentity = b
	return tx.SaveBrandIdentity(ctx, brandID, b)
}

// errCheckOnly rolls CheckBrandIdentity's transaction back.
var errCheckOnly = errors.New("service: check only")

// CheckBrandIdentity returns the refusal of each of u's members, each
// checked alone, so a form can show every error at once (issue #32);
// nothing is written.
func (s *Service) CheckBrandIdentity(ctx context.Context, brandID int64, u parley.BrandIdentityUpdate) ([]error, error) {
	var refused []error
	err := s.db.WithTx(ctx, func(tx *store.Tx) error {
		refused = nil
		for _, one := range []parley.BrandIdentityUpdate{{Name: u.Name}, {PhoneNumber: u.PhoneNumber}, {DefaultCountry: u.DefaultCountry}} {
			err := s.updateBrandIdentity(ctx, tx, brandID, one, &parley.BrandSettings{})
			if parley.ErrorCode(err) == parley.EValidation {
				refused = append(refused, err)
			} else if err != nil {
				return err
			}
		}
		return errCheckOnly
	})
	if !errors.Is(err, errCheckOnly) {
		return nil, err
	}
	return refused, nil
}
