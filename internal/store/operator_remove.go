package store

import (
	"context"
	"fmt"
)

// DeleteOperator removes an operator of brandID with its sessions and
// sign-in links (D19); ErrNotFound when the brand has no such operator.
// The tokens go first and explicitly: a session must not outlive its
// operator even where foreign keys are not enforced.
func (tx *Tx) DeleteOperator(ctx context.Context, brandID, id int64) error {
	if _, err := tx.exec(ctx, `DELETE FROM operator_tokens WHERE operator_id IN
		(SELECT id FROM operators WHERE id = ? AND brand_id = ?)`, id, brandID); err != nil {
		return fmt.Errorf("store: delete operator tokens: %w", err)
	}
	res, err := tx.exec(ctx, `DELETE FROM operators WHERE id = ? AND brand_id = ?`, id, brandID)
	if err != nil {
		return fmt.Errorf("store: delete operator: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
