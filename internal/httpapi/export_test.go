package httpapi

import "net/http"

// RunIdempotent runs h as an authenticated handler of brandID behind the
// Idempotency-Key logic, for tests of outcomes no real handler gives on cue.
func RunIdempotent(s *Server, w http.ResponseWriter, r *http.Request, brandID int64, h func(http.ResponseWriter, *http.Request) error) {
	err := s.idempotent(w, r, &request{brandID: brandID}, func(w http.ResponseWriter, r *http.Request, _ *request) error { return h(w, r) })
	if err != nil {
		s.writeError(w, r, err)
	}
}
