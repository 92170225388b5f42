package httpapi

import (
	"net/http"

	"github.com/parleyhq/parley"
)

// RunIdempotent runs h as an authenticated handler of brandID behind the
// Idempotency-Key logic, for tests of outcomes no real handler gives on cue.
// h gets the Origin its writes must pass to the store.
func RunIdempotent(s *Server, w http.ResponseWriter, r *http.Request, brandID int64, h func(http.ResponseWriter, *http.Request, parley.Origin) error) {
	err := s.idempotent(w, r, &request{brandID: brandID}, func(w http.ResponseWriter, r *http.Request, req *request) error { return h(w, r, req.origin()) })
	if err != nil {
		s.writeError(w, r, err)
	}
}
