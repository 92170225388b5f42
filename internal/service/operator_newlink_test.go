package service_test

import (
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestNewLinkReplacesLinks: NewLink kills every earlier one-time link of
// the operator and makes one that works; it keeps the operator's
// password; another brand's operator is not found (issue #32, D19).
func TestNewLinkReplacesLinks(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ops := e.App.Operators
	op := addOp(t, e, e.BrandA.ID, "lost@a.example", goodPassword)
	l1, err := ops.Link(e.Ctx, e.BrandA.ID, op.Email)
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := ops.Link(e.Ctx, e.BrandA.ID, op.Email)
	got, l3, err := ops.NewLink(e.Ctx, e.BrandA.ID, op.ID)
	if err != nil || got.ID != op.ID || l3 == "" || l3 == l1 || l3 == l2 {
		t.Fatalf("NewLink: %+v %q %v", got, l3, err)
	}
	for name, tok := range map[string]string{"first": l1, "second": l2} {
		if _, err := ops.SignInWithLink(e.Ctx, tok); parley.ErrorCode(err) != parley.ENotAuthenticated {
			t.Errorf("the %s earlier link still signs in (%v)", name, err)
		}
	}
	if _, err := ops.SignInWithLink(e.Ctx, l3); err != nil {
		t.Errorf("the new link: %v", err)
	}
	if s, _, err := ops.SignIn(e.Ctx, op.Email, goodPassword, "127.0.0.1"); err != nil || s == nil {
		t.Errorf("the password after a new link: %v", err)
	}
	other := addOp(t, e, e.BrandB.ID, "b@b.example", goodPassword)
	if _, _, err := ops.NewLink(e.Ctx, e.BrandA.ID, other.ID); parley.ErrorCode(err) != parley.ENotFound {
		t.Errorf("NewLink for brand B's operator as brand A: %v, want not found", err)
	}
}
