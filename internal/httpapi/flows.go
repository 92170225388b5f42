package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
)

// Members of a Flow that a POST /flows body may not set (D4, D21).
var flowReadOnly = map[string]string{
	"id":           "set by the server",
	"date_created": "set by the server",
	"date_updated": "set by the server",
	"stats":        "computed by the server",
	"steps_stats":  "computed by the server",
}

func (s *Server) createFlow(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.FlowCreate
	if err := decodeJSON(req.body, &in, flowReadOnly); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Flow, error) {
		return s.Flows.CreateFlow(ctx, req.origin(), req.brandID, in)
	})
}

func (s *Server) getFlow(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "flow_id")
	if err != nil {
		return err
	}
	f, err := s.Flows.FindFlow(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

func (s *Server) listFlows(w http.ResponseWriter, r *http.Request, req *request) error {
	var f parley.FlowFilter
	var err error
	if f.Limit, f.Cursor, err = pageQuery(r); err != nil {
		return err
	}
	flows, next, err := s.Flows.ListFlows(r.Context(), req.brandID, f)
	if err != nil {
		return err
	}
	writePage(w, flows, next)
	return nil
}

func (s *Server) updateFlow(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "flow_id")
	if err != nil {
		return err
	}
	var in parley.FlowUpdate
	if err := decodeJSON(req.body, &in, flowReadOnly); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Flow, error) {
		return s.Flows.UpdateFlow(ctx, req.origin(), req.brandID, id, in)
	})
}

func (s *Server) deleteFlow(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "flow_id")
	if err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Flow, error) {
		return s.Flows.DeleteFlow(ctx, req.origin(), req.brandID, id)
	})
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "flow_id")
	if err != nil {
		return err
	}
	var f parley.RunFilter
	if f.Limit, f.Cursor, err = pageQuery(r); err != nil {
		return err
	}
	q := r.URL.Query()
	if v := q.Get("user_id"); v != "" {
		if f.UserID, err = strconv.ParseInt(v, 10, 64); err != nil || f.UserID < 1 {
			return parley.FieldError(parley.EValidation, "user_id", "must be an integer ≥ 1")
		}
	}
	f.Status = q.Get("status")
	runs, next, err := s.Flows.ListRuns(r.Context(), req.brandID, id, f)
	if err != nil {
		return err
	}
	writePage(w, runs, next)
	return nil
}

func (s *Server) recordEvent(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.EventCreate
	if err := decodeJSON(req.body, &in, map[string]string{"id": "set by the server", "occurred_at": "set by the server"}); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusAccepted, func(ctx context.Context) (*parley.UserEvent, error) {
		return s.Flows.RecordEvent(ctx, req.origin(), req.brandID, in)
	})
}

// pageQuery reads the limit and cursor of a list's query string.
func pageQuery(r *http.Request) (int, string, error) {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return 0, "", parley.FieldError(parley.EValidation, "limit", "must be an integer between 1 and 100")
		}
	}
	return limit, q.Get("cursor"), nil
}
