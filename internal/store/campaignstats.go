package store

import (
	"context"

	"github.com/parleyhq/parley"
)

// CampaignStats returns the stats of the brand's campaign: the counts
// fixed at resolution and its messages by status, as the triggers of
// migration 00021 keep them (canceled: failed with error_code canceled,
// not counted in failed). A missing campaign is ErrNotFound.
func (db *DB) CampaignStats(ctx context.Context, brandID, id int64) (*parley.CampaignStats, error) {
	c, err := db.FindCampaign(ctx, brandID, id)
	if err != nil {
		return nil, err
	}
	return &c.Stats, nil
}
