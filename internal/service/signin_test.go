package service_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/service"
)

const goodPassword = "correct horse battery"

func addOp(t *testing.T, e *apitest.Env, brand int64, email, pw string) *parley.Operator {
	t.Helper()
	op, err := e.App.Operators.Add(e.Ctx, brand, email, parley.RoleAdmin, pw)
	if err != nil {
		t.Fatalf("add %s to brand %d: %v", email, brand, err)
	}
	return op
}

// TestSignInThrottlePerEmailAndClient: failed sign-ins are counted per
// (email, client) and per client, never per email alone (D19, issue #31 item
// 3, OWASP): five wrong passwords from one client stop that client on that
// email, while the right password from a client that has not failed still
// signs in; twenty failures from one client stop it on every email; IPv6
// clients count per /64; the window ends by the clock.
func TestSignInThrottlePerEmailAndClient(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ops := e.App.Operators
	addOp(t, e, e.BrandA.ID, "target@a.example", goodPassword)
	addOp(t, e, e.BrandA.ID, "other@a.example", goodPassword)
	signIn := func(email, pw, client string) error {
		_, _, err := ops.SignIn(e.Ctx, email, pw, client)
		return err
	}
	const attacker, operator = "203.0.113.9", "198.51.100.20"
	for i := range 5 {
		if err := signIn("target@a.example", fmt.Sprintf("guess %d", i), attacker); parley.ErrorCode(err) != parley.ENotAuthenticated {
			t.Fatalf("guess %d: %v, want not_authenticated", i, err)
		}
	}
	if err := signIn("target@a.example", goodPassword, attacker); parley.ErrorCode(err) != parley.ERateLimited {
		t.Errorf("the guessing client with the right password: %v, want rate_limited", err)
	}
	if err := signIn("target@a.example", goodPassword, operator); err != nil {
		t.Errorf("the operator, from a client that has not failed: %v, want a session (the guesser must not lock them out)", err)
	}
	if err := signIn("other@a.example", goodPassword, attacker); err != nil {
		t.Errorf("the guessing client on another email: %v, want a session (5 failures < 20 per client)", err)
	}

	// Per client: many emails from one client.
	const sprayer = "192.0.2.44"
	for i := range 20 {
		signIn(fmt.Sprintf("nobody%d@a.example", i), "x", sprayer)
	}
	if err := signIn("other@a.example", goodPassword, sprayer); parley.ErrorCode(err) != parley.ERateLimited {
		t.Errorf("a client past 20 failures over many emails: %v, want rate_limited", err)
	}

	// IPv6 per /64: another address of the same /64 is the same client.
	for i := range 5 {
		signIn("other@a.example", "wrong", fmt.Sprintf("2001:db8:5:6::%x", i+1))
	}
	if err := signIn("other@a.example", goodPassword, "2001:db8:5:6::ffff"); parley.ErrorCode(err) != parley.ERateLimited {
		t.Errorf("another address of a /64 that failed 5 times: %v, want rate_limited", err)
	}
	if err := signIn("other@a.example", goodPassword, "2001:db8:5:7::1"); err != nil {
		t.Errorf("another /64: %v, want a session", err)
	}

	e.Advance(15 * time.Minute)
	if err := signIn("target@a.example", goodPassword, attacker); err != nil {
		t.Errorf("after the window: %v, want a session", err)
	}
}

// TestLinksRevokedByPassword: a one-time sign-in link stops working once
// the operator sets or changes a password, or signs in with one (issue #31
// item 4: L1 → set a password → L2 must not set another without the
// current one); and each link expires after 24 h.
func TestLinksRevokedByPassword(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ops := e.App.Operators
	addOp(t, e, e.BrandA.ID, "new@a.example", "")
	link := func(email string) string {
		t.Helper()
		tok, err := ops.Link(e.Ctx, e.BrandA.ID, email)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	gone := func(name, tok string) {
		t.Helper()
		if _, err := ops.LinkExpires(e.Ctx, tok); parley.ErrorCode(err) != parley.ENotAuthenticated {
			t.Errorf("%s: the link's page: %v, want not_authenticated", name, err)
		}
		if _, err := ops.SignInWithLink(e.Ctx, tok); parley.ErrorCode(err) != parley.ENotAuthenticated {
			t.Errorf("%s: the link still signs in (%v)", name, err)
		}
	}

	// Set a password from L1's session: L2 is revoked.
	l1, l2 := link("new@a.example"), link("new@a.example")
	s, err := ops.SignInWithLink(e.Ctx, l1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.ChangePassword(e.Ctx, s.Token, "", goodPassword, "198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	gone("set a password", l2)

	// A password sign-in revokes a link made before it.
	l3 := link("new@a.example")
	if _, _, err := ops.SignIn(e.Ctx, "new@a.example", goodPassword, "198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	gone("password sign-in", l3)

	// Changing the password with the current one revokes links too.
	s, _, err = ops.SignIn(e.Ctx, "new@a.example", goodPassword, "198.51.100.1")
	if err != nil {
		t.Fatal(err)
	}
	l4 := link("new@a.example") // after the sign-in, which would revoke it
	if err := ops.ChangePassword(e.Ctx, s.Token, goodPassword, "another password", "198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	gone("changed password", l4)

	// Links expire after LinkTTL (24 h), and say when.
	l5 := link("new@a.example")
	exp, err := ops.LinkExpires(e.Ctx, l5)
	if want := e.Now().Add(24 * time.Hour).Truncate(time.Microsecond); err != nil || !exp.Equal(want) {
		t.Errorf("link expires %v (%v), want %v", exp, err, want)
	}
	e.Advance(24*time.Hour - time.Second)
	if _, err := ops.LinkExpires(e.Ctx, l5); err != nil {
		t.Errorf("a link a second before its expiry: %v", err)
	}
	e.Advance(time.Second)
	gone("expired", l5)

	// Using one link leaves another of the same operator as it was: the
	// session it opens sets the password, which revokes the rest.
	l6, l7 := link("new@a.example"), link("new@a.example")
	if _, err := ops.SignInWithLink(e.Ctx, l6); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.LinkExpires(e.Ctx, l7); err != nil {
		t.Errorf("using one link revoked another before any password was set: %v", err)
	}
}

// TestHashSlotsBoundConcurrentHashes: at most N password hashes run at
// once (D19, issue #31 item 6); the N+1th waits for a slot and runs when one
// frees, and one that finds none within the wait is refused with
// service_unavailable, changing nothing.
func TestHashSlotsBoundConcurrentHashes(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ops := e.App.Operators
	addOp(t, e, e.BrandA.ID, "op@a.example", goodPassword)
	const n = 2
	ops.Hashing = service.NewHashSlots(n, time.Minute)
	var held []func()
	for range n {
		release, err := ops.Hashing.Acquire(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := ops.SignIn(e.Ctx, "op@a.example", goodPassword, "198.51.100.1")
		done <- err
	}()
	waitFor(t, "a sign-in to wait for a hash slot", func() bool { return ops.Hashing.Waiting() == 1 })
	select {
	case err := <-done:
		t.Fatalf("the N+1th hash ran while N were running: %v", err)
	default:
	}
	before := ops.Hashing.Hashes()
	held[0]()
	if err := <-done; err != nil {
		t.Fatalf("the waiting sign-in, once a slot freed: %v", err)
	}
	if got := ops.Hashing.Hashes() - before; got != 1 {
		t.Errorf("%d hashes after the slot freed, want 1", got)
	}

	// No slot within the wait: 503, and the attempt is not a failure.
	release, err := ops.Hashing.Acquire(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	ops.Hashing.SetWait(time.Millisecond)
	for range 6 { // more than the throttle's 5: none of them counts
		if _, _, err := ops.SignIn(e.Ctx, "op@a.example", goodPassword, "198.51.100.1"); parley.ErrorCode(err) != parley.EUnavailable {
			t.Fatalf("sign-in with every slot taken: %v, want service_unavailable", err)
		}
	}
	release()
	held[1]()
	if _, _, err := ops.SignIn(e.Ctx, "op@a.example", goodPassword, "198.51.100.1"); err != nil {
		t.Errorf("sign-in once the slots are free: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOperatorsPerBrand: an email may be an operator of several brands,
// each row with its own password (D19, issue #31 item 10). The sign-in offers
// only the brands whose password matched, opens the session at once when
// one did, and a brand's choice works once.
func TestOperatorsPerBrand(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ops := e.App.Operators
	addOp(t, e, e.BrandB.ID, "both@x.example", goodPassword)
	addOp(t, e, e.BrandA.ID, "both@x.example", "brand a password")
	if _, err := ops.Add(e.Ctx, e.BrandA.ID, "BOTH@x.example", parley.RoleAgent, ""); parley.ErrorCode(err) != parley.EDuplicate {
		t.Errorf("the same email twice in one brand: %v, want duplicate", err)
	}
	s, choices, err := ops.SignIn(e.Ctx, "both@x.example", "brand a password", "198.51.100.1")
	if err != nil || s == nil || s.Operator.BrandID != e.BrandA.ID || choices != nil {
		t.Fatalf("brand A's password: session %+v, choices %v, %v; want brand A's session", s, choices, err)
	}
	s, choices, err = ops.SignIn(e.Ctx, "both@x.example", goodPassword, "198.51.100.1")
	if err != nil || s == nil || s.Operator.BrandID != e.BrandB.ID || choices != nil {
		t.Fatalf("brand B's password: session %+v, choices %v, %v; want brand B's session", s, choices, err)
	}

	// The same password in both: the brands to choose from.
	s, _, _ = ops.SignIn(e.Ctx, "both@x.example", "brand a password", "198.51.100.1")
	if err := ops.ChangePassword(e.Ctx, s.Token, "brand a password", goodPassword, "198.51.100.1"); err != nil {
		t.Fatal(err)
	}
	s, choices, err = ops.SignIn(e.Ctx, "both@x.example", goodPassword, "198.51.100.1")
	if err != nil || s != nil || len(choices) != 2 {
		t.Fatalf("one password for two brands: session %v, choices %+v, %v; want two choices", s, choices, err)
	}
	if choices[0].BrandName != "Brand B" || choices[1].BrandName != "Brand A" {
		t.Errorf("choices = %+v, want Brand B then Brand A (oldest operator first)", choices)
	}
	s, err = ops.ChooseBrand(e.Ctx, choices[1].Token)
	if err != nil || s.Operator.BrandID != e.BrandA.ID || s.Operator.Email != "both@x.example" {
		t.Fatalf("choose brand A: %+v, %v", s, err)
	}
	if op, err := ops.Authenticate(e.Ctx, s.Token); err != nil || op.BrandID != e.BrandA.ID {
		t.Errorf("the chosen session: %+v, %v", op, err)
	}
	if _, err := ops.ChooseBrand(e.Ctx, choices[1].Token); parley.ErrorCode(err) != parley.ENotAuthenticated {
		t.Errorf("a choice used twice: %v, want not_authenticated", err)
	}
	if _, err := ops.ChooseBrand(e.Ctx, "made-up"); parley.ErrorCode(err) != parley.ENotAuthenticated {
		t.Errorf("a made-up choice: %v, want not_authenticated", err)
	}
	e.Advance(5*time.Minute + time.Second)
	if _, err := ops.ChooseBrand(e.Ctx, choices[0].Token); parley.ErrorCode(err) != parley.ENotAuthenticated {
		t.Errorf("a choice after 5 minutes: %v, want not_authenticated", err)
	}

	// Removing one brand's operator leaves the other's.
	if err := ops.RemoveByEmail(e.Ctx, e.BrandB.ID, "Both@X.example"); err != nil {
		t.Fatal(err)
	}
	if err := ops.RemoveByEmail(e.Ctx, e.BrandB.ID, "both@x.example"); parley.ErrorCode(err) != parley.ENotFound {
		t.Errorf("remove again: %v, want not_found", err)
	}
	if s, _, err := ops.SignIn(e.Ctx, "both@x.example", goodPassword, "198.51.100.1"); err != nil || s.Operator.BrandID != e.BrandA.ID {
		t.Errorf("after removing brand B's operator: %+v, %v; want brand A's session", s, err)
	}
}

// TestSignInCostIndependentOfBrands: a sign-in computes one password hash
// whether the email is no operator's, one brand's or three brands', right
// password or wrong (D19, issue #31 item 10: neither time nor memory tells how
// many brands have the email), and adding an operator computes one hash
// whatever other brands hold. A hash from before the email's salt costs
// one more until its next sign-in rehashes it.
func TestSignInCostIndependentOfBrands(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ops := e.App.Operators
	c, err := e.App.Service.CreateBrand(e.Ctx, "Brand C", "+14155550102")
	if err != nil {
		t.Fatal(err)
	}
	hashes := func(f func()) int64 {
		before := ops.Hashing.Hashes()
		f()
		return ops.Hashing.Hashes() - before
	}
	for name, brands := range map[string][]int64{"one@x.example": {e.BrandA.ID}, "three@x.example": {e.BrandA.ID, e.BrandB.ID, c.ID}} {
		for _, b := range brands {
			if n := hashes(func() { addOp(t, e, b, name, goodPassword) }); n != 1 {
				t.Errorf("adding %s to brand %d took %d hashes, want 1", name, b, n)
			}
		}
	}
	for _, email := range []string{"none@x.example", "one@x.example", "three@x.example"} {
		for _, pw := range []string{goodPassword, "wrong password"} {
			if n := hashes(func() { ops.SignIn(e.Ctx, email, pw, "198.51.100.1") }); n != 1 {
				t.Errorf("sign-in of %s (password %q) took %d hashes, want 1", email, pw, n)
			}
		}
	}

	// A hash of the old kind (its own random salt) on one row.
	salt := make([]byte, 16)
	rand.Read(salt)
	b64 := base64.RawStdEncoding
	old := fmt.Sprintf("$argon2id$v=19$m=19456,t=2,p=1$%s$%s", b64.EncodeToString(salt),
		b64.EncodeToString(argon2.IDKey([]byte(goodPassword), salt, 2, 19456, 1, 32)))
	q := `UPDATE operators SET password_hash = ? WHERE email = 'three@x.example' AND brand_id = ?`
	if e.App.DB.Engine() == "postgres" {
		q = `UPDATE operators SET password_hash = $1 WHERE email = 'three@x.example' AND brand_id = $2`
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, q, old, c.ID); err != nil {
		t.Fatal(err)
	}
	var choices []service.BrandChoice
	if n := hashes(func() { _, choices, _ = ops.SignIn(e.Ctx, "three@x.example", goodPassword, "198.51.100.1") }); n != 3 || len(choices) != 3 {
		t.Errorf("sign-in with an old hash: %d hashes, %d choices; want 2 to check and 1 to rehash, and 3 brands", n, len(choices))
	}
	if n := hashes(func() { ops.SignIn(e.Ctx, "three@x.example", "wrong password", "198.51.100.1") }); n != 1 {
		t.Errorf("after the rehash a sign-in took %d hashes, want 1", n)
	}
}
