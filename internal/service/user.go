package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// CreateUser implements parley.UserService. Creates that arrive together
// share a transaction (store.WithGroupTx): a create costs a fraction of a
// commit — of SQLite's single writer, of PostgreSQL's wait for the disk.
func (s *Service) CreateUser(ctx context.Context, o parley.Origin, brandID int64, in parley.UserCreate) (*parley.User, error) {
	u, err := s.NewUser(ctx, brandID, in)
	if err != nil {
		return nil, err
	}
	err = s.db.WithGroupTx(ctx, o, func(ctx context.Context, tx *store.Tx) error {
		u.DateCreated = parley.Time{Time: tx.Now()}
		u.DateLastUpdated = u.DateCreated
		if err := tx.InsertUser(ctx, u); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, brandID, parley.EventUserCreated, u); err != nil {
			return err
		}
		// Consent first: a contact created without it is no opt-out to
		// end the run the created trigger starts.
		if err := s.recordChanges(ctx, tx, nil, u); err != nil {
			return err
		}
		tx.Answer(u)
		return s.userCreated(ctx, tx, u)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// NewUser validates a create request and returns the user it would store:
// every rule of POST /users except uniqueness, which only the insert knows.
func (s *Service) NewUser(ctx context.Context, brandID int64, in parley.UserCreate) (*parley.User, error) {
	if !in.PhoneNumber.Valid {
		return nil, invalid("phone_number", "required")
	}
	u := &parley.User{BrandID: brandID}
	var err error
	if u.PhoneNumber, err = s.normalizePhone(in.PhoneNumber.Value); err != nil {
		return nil, err
	}
	if err := s.applyFields(u, &in.UserFields); err != nil {
		return nil, err
	}
	if u.Channel, err = checkChannel(in.Channel); err != nil {
		return nil, err
	}
	if in.CustomData.Valid {
		upd, err := s.parseCustomDataFor(ctx, brandID, in.CustomData.Value)
		if err != nil {
			return nil, err
		}
		if u.CustomData, err = mergeCustomData(nil, upd, nil); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// parseCustomDataFor reads the brand's fields only when custom_data is sent.
func (s *Service) parseCustomDataFor(ctx context.Context, brandID int64, raw json.RawMessage) (map[string]json.RawMessage, error) {
	fields, err := s.customFields(ctx, brandID)
	if err != nil {
		return nil, err
	}
	return parseCustomData(raw, fields)
}

// applyFields validates the members shared by create and update and sets
// the ones that were sent. custom_data is handled by the caller.
func (s *Service) applyFields(u *parley.User, in *parley.UserFields) error {
	var err error
	if in.FirstName.Set {
		if u.FirstName, err = optString("first_name", in.FirstName, maxNameLen, nil); err != nil {
			return err
		}
	}
	if in.LastName.Set {
		if u.LastName, err = optString("last_name", in.LastName, maxNameLen, nil); err != nil {
			return err
		}
	}
	if in.EmailAddress.Set {
		if u.EmailAddress, err = optString("email_address", in.EmailAddress, maxEmailLen, checkEmail); err != nil {
			return err
		}
	}
	if in.DateOfBirth.Set {
		if u.DateOfBirth, err = optString("date_of_birth", in.DateOfBirth, 0, s.checkDateOfBirth); err != nil {
			return err
		}
	}
	if in.MessagingConsent.Set {
		u.MessagingConsent = in.MessagingConsent.Ptr()
	}
	if in.PostalCode.Set {
		if u.Location, err = resolveLocation(in.PostalCode); err != nil {
			return err
		}
	}
	return nil
}

// FindUserByID implements parley.UserService.
func (s *Service) FindUserByID(ctx context.Context, brandID, id int64) (*parley.User, error) {
	u, err := s.db.FindUserByID(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.UserNotFound(id)
	}
	return u, err
}

// FindUserByPhone implements parley.UserService.
func (s *Service) FindUserByPhone(ctx context.Context, brandID int64, raw string) (*parley.User, error) {
	e164, err := s.normalizePhone(raw)
	if err != nil {
		return nil, err
	}
	u, err := s.db.FindUserByPhone(ctx, brandID, e164)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.EUserNotFound, "User with phone number [%s] not found.", raw)
	}
	return u, err
}

// UpdateUser implements parley.UserService.
func (s *Service) UpdateUser(ctx context.Context, o parley.Origin, brandID, id int64, in parley.UserUpdate) (*parley.User, error) {
	// Validate everything that needs no current state before taking the
	// write lock.
	probe := &parley.User{}
	if err := s.applyFields(probe, &in.UserFields); err != nil {
		return nil, err
	}
	var (
		upd    map[string]json.RawMessage
		fields map[string]*parley.CustomField
		err    error
	)
	if in.CustomData.Valid {
		if fields, err = s.customFields(ctx, brandID); err != nil {
			return nil, err
		}
		if upd, err = parseCustomData(in.CustomData.Value, fields); err != nil {
			return nil, err
		}
	}

	// Updates that arrive together share a transaction (store.WithGroupTx);
	// a refusal after the read changed nothing, so it fails alone.
	var out *parley.User
	err = s.db.WithGroupTx(ctx, o, func(ctx context.Context, tx *store.Tx) error {
		u, err := tx.FindUserForUpdate(ctx, brandID, id)
		if errors.Is(err, store.ErrNotFound) {
			return store.Unchanged(parley.UserNotFound(id))
		} else if err != nil {
			return err
		}
		before := *u
		if err := s.applyFields(u, &in.UserFields); err != nil {
			return store.Unchanged(err)
		}
		switch {
		case in.CustomData.Valid:
			if u.CustomData, err = mergeCustomData(u.CustomData, upd, fields); err != nil {
				return store.Unchanged(err)
			}
		case in.CustomData.Set: // null clears every key (D6)
			u.CustomData = nil
		}
		out = u
		tx.Answer(u)
		// D5: date_last_updated moves only when a value changed.
		if sameUser(&before, u) {
			return nil
		}
		u.DateLastUpdated = parley.Time{Time: tx.Now()}
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		if err := s.emit(ctx, tx, brandID, parley.EventUserUpdated, u); err != nil {
			return err
		}
		return s.recordChanges(ctx, tx, &before, u)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func equalBoolPtr(a, b *bool) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// DeleteUser implements parley.UserService.
func (s *Service) DeleteUser(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.User, error) {
	var out *parley.User
	err := s.db.WithGroupTx(ctx, o, func(ctx context.Context, tx *store.Tx) error {
		u, err := tx.FindUserForUpdate(ctx, brandID, id)
		if errors.Is(err, store.ErrNotFound) {
			return store.Unchanged(parley.UserNotFound(id))
		} else if err != nil {
			return err
		}
		u.IsDeleted = true
		u.DateLastUpdated = parley.Time{Time: tx.Now()}
		out = u
		if err := tx.UpdateUser(ctx, u); err != nil {
			return err
		}
		if _, err := tx.EndUserRuns(ctx, u.ID, parley.RunExited, ExitContactDeleted); err != nil {
			return err
		}
		return s.emit(ctx, tx, brandID, parley.EventUserDeleted, u)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sameUser compares everything an update can change.
func sameUser(a, b *parley.User) bool {
	ja, _ := json.Marshal(userValues(a))
	jb, _ := json.Marshal(userValues(b))
	return bytes.Equal(ja, jb)
}

func userValues(u *parley.User) any {
	return []any{u.FirstName, u.LastName, u.EmailAddress, u.DateOfBirth, u.MessagingConsent,
		u.Location, u.CustomData, u.IsDeleted}
}
