package httpapi

import (
	"context"
	"net/http"

	"github.com/parleyhq/parley"
)

// updateCampaign is POST /campaigns/{campaign_id} (issue #32): the
// members of a scheduled campaign, each by the rules of POST /campaigns.
func (s *Server) updateCampaign(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "campaign_id")
	if err != nil {
		return err
	}
	var in parley.CampaignCreate
	if err := decodeJSON(req.body, &in, campaignReadOnly); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Campaign, error) {
		return s.Campaigns.UpdateCampaign(ctx, req.origin(), req.brandID, id, in)
	})
}

// testCampaign is POST /campaigns/{campaign_id}/test (issue #32): the
// campaign's content to one number, outside the campaign.
func (s *Server) testCampaign(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "campaign_id")
	if err != nil {
		return err
	}
	var in parley.CampaignTest
	if err := decodeJSON(req.body, &in, nil); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Message, error) {
		return s.Campaigns.TestCampaign(ctx, req.origin(), req.brandID, id, in)
	})
}
