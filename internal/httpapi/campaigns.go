package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
)

// Members of a Campaign that a POST /campaigns body may not set (D4, D16).
var campaignReadOnly = map[string]string{
	"id":            "set by the server",
	"status":        "set by the server: scheduled; POST /campaigns/{campaign_id}/cancel cancels",
	"started_at":    "set by the server",
	"completed_at":  "set by the server",
	"date_created":  "set by the server",
	"stats":         "computed by the server",
	"cancel_reason": "set by the server",
}

func (s *Server) createCampaign(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.CampaignCreate
	if err := decodeJSON(req.body, &in, campaignReadOnly); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Campaign, error) {
		return s.Campaigns.CreateCampaign(ctx, req.origin(), req.brandID, in)
	})
}

func (s *Server) getCampaign(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "campaign_id")
	if err != nil {
		return err
	}
	c, err := s.Campaigns.FindCampaign(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

func (s *Server) listCampaigns(w http.ResponseWriter, r *http.Request, req *request) error {
	q := r.URL.Query()
	var f parley.CampaignFilter
	if v := q.Get("limit"); v != "" {
		var err error
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 {
			return parley.FieldError(parley.EValidation, "limit", "must be an integer between 1 and 100")
		}
	}
	f.Cursor = q.Get("cursor")
	cs, next, err := s.Campaigns.ListCampaigns(r.Context(), req.brandID, f)
	if err != nil {
		return err
	}
	writePage(w, cs, next)
	return nil
}

func (s *Server) cancelCampaign(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "campaign_id")
	if err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Campaign, error) {
		return s.Campaigns.CancelCampaign(ctx, req.origin(), req.brandID, id)
	})
}
