package parley

import (
	"context"
	"encoding/json"
)

// User is a contact of a brand, identified by its E.164 phone number, which
// is unique among the brand's users that are not deleted (D5).
type User struct {
	ID               int64           `json:"id"`
	BrandID          int64           `json:"-"`
	PhoneNumber      string          `json:"phone_number"`
	FirstName        *string         `json:"first_name"`
	LastName         *string         `json:"last_name"`
	EmailAddress     *string         `json:"email_address"`
	DateOfBirth      *string         `json:"date_of_birth"`
	MessagingConsent *bool           `json:"messaging_consent"`
	CustomData       json.RawMessage `json:"custom_data"`
	Location         *Location       `json:"location"`
	IsDeleted        bool            `json:"is_deleted"`
	DateCreated      Time            `json:"date_created"`
	DateLastUpdated  Time            `json:"date_last_updated"`
	// Channel is stored but never returned (spec: "It is not returned").
	Channel *string `json:"-"`
}

// Location is derived from a user's postal code (D7).
type Location struct {
	PostalCode *string `json:"postal_code"`
	City       *string `json:"city"`
	County     *string `json:"county"`
	State      *string `json:"state"`
	StateCode  *string `json:"state_code"`
	// TimeZone is the IANA zone of the ZIP, e.g. "America/Chicago", or nil
	// when the data set gives it none (D17).
	TimeZone *string `json:"time_zone"`
}

// UserFields are the members that both create and update accept.
type UserFields struct {
	FirstName        Optional[string]          `json:"first_name,omitzero"`
	LastName         Optional[string]          `json:"last_name,omitzero"`
	EmailAddress     Optional[string]          `json:"email_address,omitzero"`
	DateOfBirth      Optional[string]          `json:"date_of_birth,omitzero"`
	MessagingConsent Optional[bool]            `json:"messaging_consent,omitzero"`
	PostalCode       Optional[string]          `json:"postal_code,omitzero"`
	CustomData       Optional[json.RawMessage] `json:"custom_data,omitzero"`
}

// UserCreate is the body of POST /users.
type UserCreate struct {
	PhoneNumber Optional[string] `json:"phone_number,omitzero"`
	UserFields
	Channel Optional[string] `json:"channel,omitzero"`
}

// UserUpdate is the body of POST /users/{id}: only members sent change.
type UserUpdate struct {
	UserFields
}

// Channels a user may enter from (D5); input is case-insensitive.
var Channels = []string{"FILE", "SHOPIFY", "KLAVIYO", "GORGIAS", "SLACK"}

// UserService manages a brand's users. Every method is scoped to brandID;
// another brand's user answers EUserNotFound exactly like a missing one.
// The methods that change things take the change's Origin.
type UserService interface {
	// CreateUser returns EValidation, EInvalidPhoneNumber, EInvalidPostalCode,
	// EInvalidCustomData or EDuplicate.
	CreateUser(ctx context.Context, o Origin, brandID int64, in UserCreate) (*User, error)
	// FindUserByID returns EUserNotFound for a missing or deleted user.
	FindUserByID(ctx context.Context, brandID, id int64) (*User, error)
	// FindUserByPhone returns EInvalidPhoneNumber or EUserNotFound.
	FindUserByPhone(ctx context.Context, brandID int64, phone string) (*User, error)
	// UpdateUser changes only the members set in in; EUserNotFound and the
	// validation codes of CreateUser.
	UpdateUser(ctx context.Context, o Origin, brandID, id int64, in UserUpdate) (*User, error)
	// DeleteUser marks the user deleted and returns it; EUserNotFound.
	DeleteUser(ctx context.Context, o Origin, brandID, id int64) (*User, error)
}
