package store

import (
	"context"
	"fmt"
)

// SetCampaignCancelReason records why the server canceled the brand's
// campaign (parley.Campaign.CancelReason), in the transaction that
// cancels it (CancelCampaign).
func (tx *Tx) SetCampaignCancelReason(ctx context.Context, brandID, id int64, reason string) error {
	if _, err := tx.exec(ctx, `UPDATE campaigns SET cancel_reason = ? WHERE brand_id = ? AND id = ?`,
		reason, brandID, id); err != nil {
		return fmt.Errorf("store: campaign cancel reason: %w", err)
	}
	return nil
}
