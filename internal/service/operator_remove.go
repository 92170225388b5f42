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
