package service

import (
	"context"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// NewLink replaces operator id's one-time sign-in links with a fresh one
// and returns its token: the console's "Send a new link" for an operator
// who has no password yet or lost it (issue #32). Every earlier link of
// the operator stops working; a password stays as it is. Another brand's
// operator is ENotFound, as a missing one.
func (o *Operators) NewLink(ctx context.Context, brandID, id int64) (*parley.Operator, string, error) {
	ops, err := o.List(ctx, brandID)
	if err != nil {
		return nil, "", err
	}
	var op *parley.Operator
	for _, p := range ops {
		if p.ID == id {
			op = p
		}
	}
	if op == nil {
		return nil, "", parley.Errorf(parley.ENotFound, "Operator with ID [%d] not found.", id)
	}
	token := newToken()
	err = o.s.db.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.DeleteOperatorTokens(ctx, op.ID, store.TokenLink); err != nil {
			return err
		}
		return tx.CreateOperatorToken(ctx, hashToken(token), op.ID, store.TokenLink, tx.Now().Add(o.linkTTL()), false)
	})
	if err != nil {
		return nil, "", err
	}
	return op, token, nil
}
