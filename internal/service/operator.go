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
	// Failed sign-ins allowed per email from one client, and per client
	// address over all emails, within ThrottleWindow before both right
	// and wrong passwords from that client are refused until the window
	// ends; 0 means 5, 20 and 15 min (see signinThrottle).
	MaxFailuresPerEmailClient, MaxFailuresPerClient int
	ThrottleWindow                                  time.Duration
	// Hashing bounds the password hashes computed at once (issue #31
	// item 6).
	Hashing *HashSlots

	throttle *signinThrottle
	saltKey  []byte
}

// NewOperators returns the sign-in rules on s's database. saltKey, from
// the server key, keys the salts of password hashes (emailSalt); nil
// makes a random one, for tests.
func NewOperators(s *Service, saltKey []byte) *Operators {
	if saltKey == nil {
		saltKey = randomSaltKey()
	}
	return &Operators{s: s, throttle: newSigninThrottle(defaultThrottleKeys), saltKey: saltKey,
		Hashing: NewHashSlots(DefaultHashSlots(), DefaultHashWait)}
}

// choiceTTL is how long the brand choice of a sign-in waits for an answer.
const choiceTTL = 5 * time.Minute

// BrandChoice is a brand whose operator the email and password matched,
// when they matched several (issue #31 item 10): Token, used once within
// a few minutes by ChooseBrand, opens that operator's session.
type BrandChoice struct {
	Token     string
	BrandID   int64
	BrandName string
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
	}
	if _, err := o.s.FindBrand(ctx, brandID); err != nil {
		return nil, err
	}
	if password != "" {
		if rec.PasswordHash, err = o.hashPassword(ctx, email, password); err != nil {
			return nil, err
		}
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

// Link returns a one-time sign-in link token for brandID's operator with
// email; it works once, within LinkTTL, and a password set or used first
// revokes it (issue #31 item 4).
func (o *Operators) Link(ctx context.Context, brandID int64, email string) (string, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	rec, err := o.s.db.FindBrandOperator(ctx, brandID, email)
	if errors.Is(err, store.ErrNotFound) {
		return "", parley.Errorf(parley.ENotFound, "No operator has email %s.", email)
	} else if err != nil {
		return "", err
	}
	token := newToken()
	err = o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		return tx.CreateOperatorToken(ctx, hashToken(token), rec.ID, store.TokenLink, tx.Now().Add(o.linkTTL()), false)
	})
	return token, err
}

func (o *Operators) linkTTL() time.Duration { return or(o.LinkTTL, 24*time.Hour) }

// LinkExpires returns when an unused one-time sign-in link stops working,
// without using it, for the link's page; ENotAuthenticated when it is used,
// revoked or expired.
func (o *Operators) LinkExpires(ctx context.Context, token string) (time.Time, error) {
	exp, err := o.s.db.OperatorTokenExpiry(ctx, hashToken(token), store.TokenLink, o.s.db.Now())
	if errors.Is(err, store.ErrNotFound) {
		return time.Time{}, errLinkGone
	}
	return exp, err
}

var errLinkGone = parley.Errorf(parley.ENotAuthenticated, "This sign-in link was used already, was replaced by a password, or has expired. Ask an admin for a new one.")

// SignIn checks an email and password and opens a session. client is the
// caller's network address (see signinThrottle). Every failure reads the
// same, so it tells nothing of which operators exist. When the password
// matches operators of several brands it opens no session and returns
// the brands to choose from (ChooseBrand); only brands whose own password
// matched are offered, and one hash is computed however many brands have
// the email (emailSalt), so nothing tells of the others.
func (o *Operators) SignIn(ctx context.Context, email, password, client string) (*Session, []BrandChoice, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	pairKey, cKey := emailClientKey(email, client), clientKey(client)
	if err := o.attempt(pairKey, cKey); err != nil {
		return nil, nil, err
	}
	matched, err := o.checkEmail(ctx, email, password)
	if err != nil {
		// Not a wrong password: the database failed, or no hash slot.
		o.throttle.succeeded(pairKey)
		o.throttle.succeeded(cKey)
		return nil, nil, err
	}
	if len(matched) == 0 {
		return nil, nil, errBadSignIn // counted by attempt
	}
	o.throttle.reset(pairKey)
	o.throttle.succeeded(cKey)
	o.refresh(ctx, email, password, matched)
	if len(matched) == 1 {
		s, err := o.open(ctx, &matched[0].Operator, false)
		return s, nil, err
	}
	choices := make([]BrandChoice, len(matched))
	for i, rec := range matched {
		b, err := o.s.db.FindBrand(ctx, rec.BrandID)
		if err != nil {
			return nil, nil, err
		}
		choices[i] = BrandChoice{Token: newToken(), BrandID: b.ID, BrandName: b.Name}
	}
	err = o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		for i, rec := range matched {
			if err := tx.CreateOperatorToken(ctx, hashToken(choices[i].Token), rec.ID, store.TokenChoice, tx.Now().Add(choiceTTL), false); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return nil, choices, nil
}

// checkEmail returns the operators with email whose password is pw.
func (o *Operators) checkEmail(ctx context.Context, email, pw string) ([]*store.OperatorRecord, error) {
	recs, err := o.s.db.FindOperatorsByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	hashes := make([]string, len(recs))
	for i, r := range recs {
		hashes[i] = r.PasswordHash
	}
	idx, err := o.matchPasswords(ctx, email, hashes, pw)
	if err != nil {
		return nil, err
	}
	out := make([]*store.OperatorRecord, len(idx))
	for i, j := range idx {
		out[i] = recs[j]
	}
	return out, nil
}

// refresh rehashes the matched passwords stored with older parameters or
// another salt (hashes from before the email's salt), so that a later
// sign-in of the email again takes one hash. Best effort: the sign-in
// does not depend on it.
func (o *Operators) refresh(ctx context.Context, email, pw string, matched []*store.OperatorRecord) {
	var hash string
	for _, rec := range matched {
		if o.current(email, rec.PasswordHash) {
			continue
		}
		if hash == "" {
			var err error
			if hash, err = o.hashPassword(ctx, email, pw); err != nil {
				return
			}
		}
		if err := o.s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.SetOperatorPassword(ctx, rec.ID, hash) }); err != nil {
			o.s.logger.WarnContext(ctx, "operators: rehash password", "operator_id", rec.ID, "err", err)
		}
	}
}

// ChooseBrand uses up the token of a brand offered by SignIn and opens
// that brand's operator's session.
func (o *Operators) ChooseBrand(ctx context.Context, token string) (*Session, error) {
	rec, err := o.take(ctx, token, store.TokenChoice)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotAuthenticated, "This choice has expired; sign in again.")
	}
	if err != nil {
		return nil, err
	}
	return o.open(ctx, &rec.Operator, false)
}

// take uses up a one-time token of kind and returns its operator.
func (o *Operators) take(ctx context.Context, token, kind string) (*store.OperatorRecord, error) {
	var rec *store.OperatorRecord
	err := o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		id, err := tx.TakeOperatorToken(ctx, hashToken(token), kind)
		if err != nil {
			return err
		}
		rec, err = tx.FindOperator(ctx, id)
		return err
	})
	return rec, err
}

// attempt counts a password check against the email's (from this client)
// and the client's throttles (D19) before it is made, so that guesses sent
// at once cannot all pass before the first is counted; it refuses the
// check while either has failed too often. A right password takes the
// count back.
func (o *Operators) attempt(pairKey, cKey string) error {
	wait := o.throttle.attempt(or(o.ThrottleWindow, 15*time.Minute), o.s.db.Now(),
		throttleKey{pairKey, or(o.MaxFailuresPerEmailClient, 5)},
		throttleKey{cKey, or(o.MaxFailuresPerClient, 20)})
	if wait > 0 {
		mins := int((wait + time.Minute - 1) / time.Minute)
		return parley.Errorf(parley.ERateLimited, "Too many failed sign-ins. Try again in %d minute%s.", mins, plural(mins))
	}
	return nil
}

// SignInWithLink uses up a one-time sign-in link and opens a session.
func (o *Operators) SignInWithLink(ctx context.Context, token string) (*Session, error) {
	rec, err := o.take(ctx, token, store.TokenLink)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errLinkGone
	}
	if err != nil {
		return nil, err
	}
	return o.open(ctx, &rec.Operator, true)
}

// open opens a session for op; viaLink says a one-time sign-in link
// opened it (see ChangePassword). A sign-in with the password revokes the
// operator's unused links: whoever holds one must not get in without the
// password the operator now uses (issue #31 item 4).
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
		if !viaLink {
			if err := tx.DeleteOperatorTokens(ctx, op.ID, store.TokenLink); err != nil {
				return err
			}
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
// one counts as a failed sign-in of the operator's email from the client,
// and of the client (D19's throttle). The new password revokes the
// operator's unused one-time sign-in links (issue #31 item 4).
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
		pairKey, cKey := emailClientKey(rec.Email, client), clientKey(client)
		if err := o.attempt(pairKey, cKey); err != nil {
			return err
		}
		matched, err := o.matchPasswords(ctx, rec.Email, []string{rec.PasswordHash}, current)
		if err != nil {
			o.throttle.succeeded(pairKey)
			o.throttle.succeeded(cKey)
			return err
		}
		if len(matched) == 0 {
			return &parley.Error{Code: parley.EValidation, Field: "current_password", Message: "The current password is wrong."}
		}
		o.throttle.reset(pairKey)
		o.throttle.succeeded(cKey)
	}
	newHash, err := o.hashPassword(ctx, rec.Email, password)
	if err != nil {
		return err
	}
	err = o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.SetOperatorPassword(ctx, rec.ID, newHash); err != nil {
			return err
		}
		if err := tx.DeleteOperatorTokens(ctx, rec.ID, store.TokenLink); err != nil {
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
