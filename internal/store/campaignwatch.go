package store

import (
	"context"
	"fmt"

	"github.com/parleyhq/parley"
)

// StalledCampaigns returns up to limit campaigns that are sending but
// have no send job that could still run: River discarded theirs (its
// attempts ran out during a long outage) or it was lost. Their messages
// would stay queued forever; the scheduler queues a new job for each.
// The job's campaign is read from River's job arguments, in each
// engine's JSON dialect.
func (db *DB) StalledCampaigns(ctx context.Context, limit int) ([]*parley.Campaign, error) {
	argID := `json_extract(CAST(j.args AS TEXT), '$.campaign_id')`
	if db.engine == "postgres" {
		argID = `(j.args->>'campaign_id')::bigint`
	}
	rows, err := db.query(ctx, `SELECT `+campaignColumns+` FROM `+campaignsFrom+` WHERE c.status = ?
	AND NOT EXISTS (SELECT 1 FROM river_job j WHERE j.kind = 'send_campaign'
		AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled') AND `+argID+` = c.id)
	ORDER BY c.id LIMIT ?`, parley.CampaignSending, limit)
	if err != nil {
		return nil, fmt.Errorf("store: stalled campaigns: %w", err)
	}
	return collect(rows, scanCampaign)
}
