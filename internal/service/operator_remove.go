package service

import (
	"context"
	"errors"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Remove deletes operator id of brandID, ending its sessions, at the
// request of operator by (D19). Nobody removes themselves: a brand's last
// admin cannot lock the brand out of its own console. Another brand's
// operator is ENotFound, as a missing one.
func (o *Operators) Remove(ctx context.Context, brandID, by, id int64) error {
	if id == by {
		return parley.Errorf(parley.EValidation, "You cannot remove yourself; ask another admin.")
	}
	err := o.s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.DeleteOperator(ctx, brandID, id) })
	if errors.Is(err, store.ErrNotFound) {
		return parley.Errorf(parley.ENotFound, "Operator with ID [%d] not found.", id)
	}
	return err
}

// RemoveByEmail deletes brandID's operator with email, ending its
// sessions: the CLI's remove, run by whoever runs the server. Only that
// brand's operator goes; one with the same email in another brand stays.
func (o *Operators) RemoveByEmail(ctx context.Context, brandID int64, email string) error {
	email, err := NormalizeEmail(email)
	if err != nil {
		return err
	}
	rec, err := o.s.db.FindBrandOperator(ctx, brandID, email)
	if err == nil {
		err = o.s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.DeleteOperator(ctx, brandID, rec.ID) })
	}
	if errors.Is(err, store.ErrNotFound) {
		return parley.Errorf(parley.ENotFound, "Brand %d has no operator with email %s.", brandID, email)
	}
	return err
}
