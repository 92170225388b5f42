package service

import (
	"context"
	"time"

	"github.com/parleyhq/parley/internal/store"
)

// RestartStalledCampaigns queues a new send job for every sending
// campaign that has none left (store.StalledCampaigns) and returns how
// many it restarted. A second job for one campaign would be harmless —
// the claim gives each message to one batch — so two nodes doing this
// at once need no lock.
func (s *Service) RestartStalledCampaigns(ctx context.Context) (int, error) {
	stalled, err := s.db.StalledCampaigns(ctx, 16)
	if err != nil {
		return 0, err
	}
	for i, c := range stalled {
		if err := s.db.WithTx(ctx, func(tx *store.Tx) error {
			s.jobsOf(tx).Campaign(c.BrandID, c.ID)
			return nil
		}); err != nil {
			return i, err
		}
		s.logger.Warn("campaign: its send job had ended; queued a new one", "brand_id", c.BrandID, "campaign_id", c.ID)
	}
	return len(stalled), nil
}

// campaignWatchEvery is how often the scheduler looks for stalled
// campaigns: rarely, since a job ends only after all its attempts.
const campaignWatchEvery = 30 * time.Second
