package httpapi

import (
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
)

// userHistory answers GET /users/{user_id}/history: the contact's consent
// and custom data changes, oldest first (D18).
func (s *Server) userHistory(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "user_id")
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := parley.HistoryFilter{Field: q.Get("field"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 {
			return parley.FieldError(parley.EValidation, "limit", "must be an integer between 1 and 100")
		}
	}
	entries, next, err := s.History.UserHistory(r.Context(), req.brandID, id, f)
	if err != nil {
		return err
	}
	writePage(w, entries, next)
	return nil
}
