package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Operators holds the console's sign-in rules (D19): operators, their
// passwords, sessions, one-time sign-in links and the throttling of failed
// sign-ins. The HTTP side is internal/console.
type Operators struct {
	s *Service
	// SessionTTL is how long a session lasts after sign-in; 0 means 12 h.
	SessionTTL time.Duration
	// LinkTTL is how long a one-time sign-in link works; 0 means 24 h.
	LinkTTL time.Duration
	// Failed sign-ins allowed per email and per client address within
	// ThrottleWindow before both right and wrong passwords are refused
	// until the window ends; 0 means 5, 20 and 15 min.
	MaxFailuresPerEmail, MaxFailuresPerClient int
	ThrottleWindow                            time.Duration

	throttle *signinThrottle
}

// NewOperators returns the sign-in rules on s's database.
func NewOperators(s *Service) *Operators {
	return &Operators{s: s, throttle: newSigninThrottle()}
}

// Session is a signed-in operator and the token its cookie carries.
type Session struct {
	Token    string
	Operator *parley.Operator
	Expires  time.Time
}

// MinPasswordLength and MaxPasswordLength bound an operator's password.
const (
	MinPasswordLength = 10
	MaxPasswordLength = 256
)

var errBadSignIn = parley.Errorf(parley.ENotAuthenticated, "Wrong email or password.")

// NormalizeEmail trims and lower-cases an operator email and checks its form.
func NormalizeEmail(raw string) (string, error) {
	e := strings.ToLower(strings.TrimSpace(raw))
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || len(e) > 254 {
		return "", invalid("email", "must be an email address like agent@example.com")
	}
	return e, nil
}

func checkNewPassword(pw string) error {
	if n := utf8.RuneCountInString(pw); n < MinPasswordLength {
		return invalid("password", fmt.Sprintf("at least %d characters", MinPasswordLength))
	}
	if len(pw) > MaxPasswordLength {
		return invalid("password", fmt.Sprintf("at most %d bytes", MaxPasswordLength))
	}
	return nil
}

// Add creates an operator of brandID. With a password the operator signs
// in with it; without one, Link gives a one-time sign-in link.
func (o *Operators) Add(ctx context.Context, brandID int64, email string, role parley.OperatorRole, password string) (*parley.Operator, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if role != parley.RoleAdmin && role != parley.RoleAgent {
		return nil, invalid("role", "must be admin or agent")
	}
	rec := &store.OperatorRecord{Operator: parley.Operator{BrandID: brandID, Email: email, Role: role}}
	if password != "" {
		if err := checkNewPassword(password); err != nil {
			return nil, err
		}
		rec.PasswordHash = hashPassword(password)
	}
	if _, err := o.s.FindBrand(ctx, brandID); err != nil {
		return nil, err
	}
	if err := o.s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.CreateOperator(ctx, rec) }); err != nil {
		return nil, err
	}
	return &rec.Operator, nil
}

// List returns the brand's operators, oldest first.
func (o *Operators) List(ctx context.Context, brandID int64) ([]*parley.Operator, error) {
	recs, err := o.s.db.ListOperators(ctx, brandID)
	if err != nil {
		return nil, err
	}
	out := make([]*parley.Operator, len(recs))
	for i, r := range recs {
		out[i] = &r.Operator
	}
	return out, nil
}

// Link returns a one-time sign-in link token for the operator with email;
// it works once, within LinkTTL.
func (o *Operators) Link(ctx context.Context, email string) (string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	rec, err := o.s.db.FindOperatorByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return "", parley.Errorf(parley.ENotFound, "No operator has email %s.", email)
	} else if err != nil {
		return "", err
	}
	token := newToken()
	err = o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		return tx.CreateOperatorToken(ctx, hashToken(token), rec.ID, store.TokenLink, tx.Now().Add(or(o.LinkTTL, 24*time.Hour)), false)
	})
	return token, err
}

// SignIn checks an email and password and opens a session. client is the
// caller's network address, throttled like the email (D19). Every failure
// reads the same, so it tells nothing of which operators exist.
func (o *Operators) SignIn(ctx context.Context, email, password, client string) (*Session, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	emailKey, clientKey := "email:"+email, "client:"+client
	if err := o.attempt(emailKey, clientKey); err != nil {
		return nil, err
	}
	rec, err := o.s.db.FindOperatorByEmail(ctx, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		// Not a wrong password: the database failed.
		o.throttle.succeeded(emailKey)
		o.throttle.succeeded(clientKey)
		return nil, err
	}
	ok := false
	if rec != nil && rec.PasswordHash != "" {
		ok = checkPassword(rec.PasswordHash, password)
	} else {
		checkPassword(decoyHash(), password)
	}
	if !ok {
		return nil, errBadSignIn // counted by attempt
	}
	o.throttle.reset(emailKey)
	o.throttle.succeeded(clientKey)
	return o.open(ctx, &rec.Operator, false)
}

// attempt counts a password check against the email's and the client's
// throttles (D19) before it is made, so that guesses sent at once cannot
// all pass before the first is counted; it refuses the check while either
// has failed too often. A right password takes the count back.
func (o *Operators) attempt(emailKey, clientKey string) error {
	wait := o.throttle.attempt(or(o.ThrottleWindow, 15*time.Minute), o.s.db.Now(),
		throttleKey{emailKey, or(o.MaxFailuresPerEmail, 5)},
		throttleKey{clientKey, or(o.MaxFailuresPerClient, 20)})
	if wait > 0 {
		mins := int((wait + time.Minute - 1) / time.Minute)
		return parley.Errorf(parley.ERateLimited, "Too many failed sign-ins. Try again in %d minute%s.", mins, plural(mins))
	}
	return nil
}

// SignInWithLink uses up a one-time sign-in link and opens a session.
func (o *Operators) SignInWithLink(ctx context.Context, token string) (*Session, error) {
	var rec *store.OperatorRecord
	err := o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		id, err := tx.TakeOperatorToken(ctx, hashToken(token), store.TokenLink)
		if err != nil {
			return err
		}
		rec, err = tx.FindOperator(ctx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotAuthenticated, "This sign-in link was used already or has expired.")
	}
	if err != nil {
		return nil, err
	}
	return o.open(ctx, &rec.Operator, true)
}

// open opens a session for op; viaLink says a one-time sign-in link
// opened it (see ChangePassword).
func (o *Operators) open(ctx context.Context, op *parley.Operator, viaLink bool) (*Session, error) {
	token := newToken()
	var expires time.Time
	err := o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		expires = tx.Now().Add(or(o.SessionTTL, 12*time.Hour))
		// Each sign-in clears the expired tokens: the table stays small
		// without a job of its own.
		if err := tx.PurgeOperatorTokens(ctx); err != nil {
			return err
		}
		return tx.CreateOperatorToken(ctx, hashToken(token), op.ID, store.TokenSession, expires, viaLink)
	})
	if err != nil {
		return nil, err
	}
	return &Session{Token: token, Operator: op, Expires: expires}, nil
}

// Authenticate returns the operator of a live session token, or
// ENotAuthenticated.
func (o *Operators) Authenticate(ctx context.Context, token string) (*parley.Operator, error) {
	if token == "" {
		return nil, parley.Errorf(parley.ENotAuthenticated, "Not signed in.")
	}
	rec, err := o.s.db.OperatorByToken(ctx, hashToken(token), store.TokenSession, o.s.db.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotAuthenticated, "Your session has ended; sign in again.")
	}
	if err != nil {
		return nil, err
	}
	return &rec.Operator, nil
}

// SignOut ends a session.
func (o *Operators) SignOut(ctx context.Context, token string) error {
	return o.s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.DeleteOperatorToken(ctx, hashToken(token)) })
}

// NeedsCurrentPassword reports whether the session with token must give
// the operator's current password to change it (see ChangePassword).
func (o *Operators) NeedsCurrentPassword(ctx context.Context, token string) (bool, error) {
	_, needs, err := o.passwordSession(ctx, hashToken(token))
	return needs, err
}

// passwordSession returns the operator of the session whose token has
// hash, and whether it must give the current password to change it: every
// session but one opened by a one-time sign-in link that has not set a
// password yet, unless the operator has none (a link's session from before
// sessions were marked) and so none to give.
func (o *Operators) passwordSession(ctx context.Context, hash []byte) (*store.OperatorRecord, bool, error) {
	rec, via, err := o.s.db.OperatorSession(ctx, hash, o.s.db.Now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, parley.Errorf(parley.ENotAuthenticated, "Your session has ended; sign in again.")
	} else if err != nil {
		return nil, false, err
	}
	return rec, !via && rec.PasswordHash != "", nil
}

// ChangePassword replaces the password of the operator signed in with the
// session token and ends their other sessions: those of whoever knew the
// old one. It asks for the current password (see passwordSession), so
// that a session left open or stolen cannot lock its operator out; a wrong
// one counts as a failed sign-in of the operator's email and of the
// client's address (D19's throttle).
func (o *Operators) ChangePassword(ctx context.Context, token, current, password, client string) error {
	if err := checkNewPassword(password); err != nil {
		return err
	}
	hash := hashToken(token)
	rec, needsCurrent, err := o.passwordSession(ctx, hash)
	if err != nil {
		return err
	}
	if needsCurrent {
		if current == "" {
			return invalid("current_password", "required")
		}
		emailKey, clientKey := "email:"+rec.Email, "client:"+client
		if err := o.attempt(emailKey, clientKey); err != nil {
			return err
		}
		if !checkPassword(rec.PasswordHash, current) {
			return &parley.Error{Code: parley.EValidation, Field: "current_password", Message: "The current password is wrong."}
		}
		o.throttle.reset(emailKey)
		o.throttle.succeeded(clientKey)
	}
	newHash := hashPassword(password)
	err = o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.SetOperatorPassword(ctx, rec.ID, newHash); err != nil {
			return err
		}
		if err := tx.ClearSessionLink(ctx, hash); err != nil {
			return err
		}
		return tx.DeleteOperatorSessions(ctx, rec.ID, hash)
	})
	if errors.Is(err, store.ErrNotFound) {
		return parley.Errorf(parley.ENotFound, "Operator not found.")
	}
	return err
}

// newToken returns 256 random bits, URL-safe.
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// hashToken is what the database keeps of a token: a fast hash suffices,
// as the token itself is random and long.
func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
