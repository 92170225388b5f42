package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
)

// Members of a Segment that a v1 body may not set, with the reason (D4, D15).
var segmentReadOnly = map[string]string{
	"id":                         "set by the server",
	"brand_id":                   "set by the server: the credential's brand",
	"source":                     "set by the server: USER_DEFINED",
	"is_active":                  "set by the server",
	"is_archived":                "read-only: DELETE /segments/{segment_id} archives",
	"date_created":               "set by the server",
	"date_last_updated":          "set by the server",
	"ltv":                        "computed by the server",
	"average_order_value":        "computed by the server",
	"average_purchase_frequency": "computed by the server",
}

func (s *Server) createSegment(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.SegmentCreate
	if err := decodeJSON(req.body, &in, segmentReadOnly); err != nil {
		return err
	}
	for name, m := range map[string]bool{"name": in.Name.Set && !in.Name.Valid, "type": in.Type.Set && !in.Type.Valid,
		"criteria": in.Criteria.Set && !in.Criteria.Valid, "color_id": in.ColorID.Set && !in.ColorID.Valid,
		"is_pinned": in.IsPinned.Set && !in.IsPinned.Valid} {
		if m {
			return parley.FieldError(parley.EValidation, name, "must not be null")
		}
	}
	seg := &parley.Segment{Name: in.Name.Value, Description: in.Description.Value, Type: in.Type.Value,
		Criteria: in.Criteria.Value, ColorID: in.ColorID.Value, IsPinned: in.IsPinned.Value,
		Source: parley.SourceUserDefined, IsActive: true}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Segment, error) {
		return s.Segments.CreateSegment(ctx, req.origin(), req.brandID, seg)
	})
}

func (s *Server) getSegment(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "segment_id")
	if err != nil {
		return err
	}
	seg, err := s.Segments.FindSegment(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, seg)
	return nil
}

func (s *Server) updateSegment(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "segment_id")
	if err != nil {
		return err
	}
	var in parley.SegmentUpdate
	if err := decodeJSON(req.body, &in, segmentReadOnly); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.Segment, error) {
		return s.Segments.UpdateSegment(ctx, req.origin(), req.brandID, id, in)
	})
}

func (s *Server) archiveSegment(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "segment_id")
	if err != nil {
		return err
	}
	seg, err := s.Segments.ArchiveSegment(r.Context(), req.origin(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, seg)
	return nil
}

func (s *Server) segmentUsers(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "segment_id")
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
	users, next, err := s.Segments.SegmentUsers(r.Context(), req.brandID, id, limit, q.Get("cursor"))
	if err != nil {
		return err
	}
	writePage(w, users, next)
	return nil
}

func (s *Server) segmentCount(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "segment_id")
	if err != nil {
		return err
	}
	c, err := s.Segments.CountSegment(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, c)
	return nil
}

func (s *Server) previewSegment(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.SegmentPreviewRequest
	if err := decodeJSON(req.body, &in, nil); err != nil {
		return err
	}
	if in.Criteria.Set && !in.Criteria.Valid {
		return parley.FieldError(parley.EValidation, "criteria", "must not be null")
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.SegmentPreview, error) {
		return s.Segments.PreviewSegment(ctx, req.brandID, in.Criteria.Value)
	})
}
