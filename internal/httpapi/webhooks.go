package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
)

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.WebhookCreate
	if err := decodeJSON(req.body, &in, nil); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Webhook, error) {
		return s.Webhooks.CreateWebhook(ctx, req.origin(), req.brandID, in)
	})
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request, req *request) error {
	list, err := s.Webhooks.ListWebhooks(r.Context(), req.brandID)
	if err != nil {
		return err
	}
	if list == nil {
		list = []*parley.Webhook{}
	}
	writeJSON(w, http.StatusOK, listPage[*parley.Webhook]{Data: list})
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	wh, err := s.Webhooks.FindWebhook(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wh)
	return nil
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	var in parley.WebhookUpdate
	if err := decodeJSON(req.body, &in, nil); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Webhook, error) {
		return s.Webhooks.UpdateWebhook(ctx, req.origin(), req.brandID, id, in)
	})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	wh, err := s.Webhooks.DeleteWebhook(r.Context(), req.origin(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wh)
	return nil
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Webhook, error) {
		return s.Webhooks.RotateWebhookSecret(ctx, req.origin(), req.brandID, id)
	})
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return parley.FieldError(parley.EValidation, "limit", "must be an integer between 1 and 100")
		}
	}
	ds, next, err := s.Webhooks.ListWebhookDeliveries(r.Context(), req.brandID, id, limit, q.Get("cursor"))
	if err != nil {
		return err
	}
	writePage(w, ds, next)
	return nil
}

func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Event, error) {
		return s.Webhooks.TestWebhook(ctx, req.origin(), req.brandID, id)
	})
}

func (s *Server) retryWebhookDelivery(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "webhook_id")
	if err != nil {
		return err
	}
	did, err := pathID(r, "delivery_id")
	if err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.WebhookDelivery, error) {
		return s.Webhooks.RetryWebhookDelivery(ctx, req.origin(), req.brandID, id, did)
	})
}
