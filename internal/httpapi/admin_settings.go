package httpapi

import (
	"net/http"

	"github.com/parleyhq/parley"
)

// adminGetSettings answers GET /admin/v1/brands/{brand_id}/settings (D17).
func (s *Server) adminGetSettings(w http.ResponseWriter, r *http.Request, _ []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	st, err := s.AdminService.BrandSettings(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

// adminUpdateSettings answers POST /admin/v1/brands/{brand_id}/settings:
// the members sent change, the others stay (D17, D4).
func (s *Server) adminUpdateSettings(w http.ResponseWriter, r *http.Request, body []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	var in parley.BrandSettingsUpdate
	if err := decodeJSON(body, &in, nil); err != nil {
		return err
	}
	st, err := s.AdminService.UpdateBrandSettings(r.Context(), id, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}
