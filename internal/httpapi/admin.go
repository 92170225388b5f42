package httpapi

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// Admin is what operators manage through /admin/v1 (D10): brands,
// credentials, custom data fields and segments. The CLI does the same.
type Admin interface {
	CreateBrand(ctx context.Context, name, phone string) (*parley.Brand, error)
	ListBrands(ctx context.Context) ([]*parley.Brand, error)
	UpdateBrand(ctx context.Context, id int64, u parley.BrandUpdate) (*parley.Brand, error)
	CreateCredential(ctx context.Context, brandID int64) (*parley.Credential, error)
	ListCredentials(ctx context.Context, brandID int64) ([]*parley.Credential, error)
	RevokeCredential(ctx context.Context, username string) error
	RotateCredential(ctx context.Context, username string, grace time.Duration) (newCred, old *parley.Credential, err error)
	CreateCustomField(ctx context.Context, f *parley.CustomField) error
	ListCustomFields(ctx context.Context, brandID int64) ([]*parley.CustomField, error)
	DeleteCustomField(ctx context.Context, brandID, id int64) error
	UpdateCustomField(ctx context.Context, brandID, id int64, u parley.CustomFieldUpdate) (*parley.CustomField, error)
	// CreateSegment and ArchiveSegment are parley.SegmentService's: the
	// admin API, the CLI and v1 share their rules (D15).
	CreateSegment(ctx context.Context, o parley.Origin, brandID int64, seg *parley.Segment) (*parley.Segment, error)
	AllSegments(ctx context.Context, brandID int64) ([]*parley.Segment, error)
	ArchiveSegment(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Segment, error)
	BrandSettings(ctx context.Context, brandID int64) (*parley.BrandSettings, error)
	UpdateBrandSettings(ctx context.Context, brandID int64, u parley.BrandSettingsUpdate) (*parley.BrandSettings, error)
}

// adminRoutes are served only when an admin token is configured.
func (s *Server) adminRoutes() []route {
	const a = "/admin/v1"
	return []route{
		{"POST", a + "/brands", s.admin(s.adminCreateBrand)},
		{"GET", a + "/brands", s.admin(s.adminListBrands)},
		{"POST", a + "/brands/{brand_id}", s.admin(s.adminUpdateBrand)},
		{"GET", a + "/brands/{brand_id}/settings", s.admin(s.adminGetSettings)},
		{"POST", a + "/brands/{brand_id}/settings", s.admin(s.adminUpdateSettings)},
		{"POST", a + "/brands/{brand_id}/credentials", s.admin(s.adminCreateCredential)},
		{"GET", a + "/brands/{brand_id}/credentials", s.admin(s.adminListCredentials)},
		{"DELETE", a + "/credentials/{username}", s.admin(s.adminRevokeCredential)},
		{"POST", a + "/credentials/{username}/rotate", s.admin(s.adminRotateCredential)},
		{"POST", a + "/brands/{brand_id}/custom_data_fields", s.admin(s.adminCreateField)},
		{"GET", a + "/brands/{brand_id}/custom_data_fields", s.admin(s.adminListFields)},
		{"DELETE", a + "/brands/{brand_id}/custom_data_fields/{field_id}", s.admin(s.adminDeleteField)},
		{"POST", a + "/brands/{brand_id}/custom_data_fields/{field_id}", s.admin(s.adminUpdateField)},
		{"POST", a + "/brands/{brand_id}/segments", s.admin(s.adminCreateSegment)},
		{"GET", a + "/brands/{brand_id}/segments", s.admin(s.adminListSegments)},
		{"POST", a + "/brands/{brand_id}/segments/{segment_id}/archive", s.admin(s.adminArchiveSegment)},
	}
}

// adminOrigin is the Origin of the admin API's changes (D18).
var adminOrigin = parley.Origin{Source: parley.SourceAdmin}

type adminHandler func(w http.ResponseWriter, r *http.Request, body []byte) error

// admin checks the bearer token in constant time, reads a bounded body and
// runs h; errors use the same envelope as v1.
func (s *Server) admin(h adminHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.AdminToken)) != 1 {
			s.writeError(w, r, parley.Errorf(parley.ENotAuthenticated, "Admin token verification failed: send Authorization: Bearer <admin token>."))
			return
		}
		body, err := readBody(w, r, s.MaxJSONBody)
		if err == nil && r.Method == http.MethodPost && len(body) > 0 {
			err = checkJSONContentType(r)
		}
		if err == nil {
			err = h(w, r, body)
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// adminBrand shows a brand with its id and keyword replies hidden.
type adminBrand struct {
	ID          int64       `json:"id"`
	Name        string      `json:"name"`
	PhoneNumber string      `json:"phone_number"`
	DateCreated parley.Time `json:"date_created"`
}

func toAdminBrand(b *parley.Brand) adminBrand {
	return adminBrand{ID: b.ID, Name: b.Name, PhoneNumber: b.PhoneNumber, DateCreated: b.DateCreated}
}

func (s *Server) adminCreateBrand(w http.ResponseWriter, r *http.Request, body []byte) error {
	var in struct {
		Name        parley.Optional[string] `json:"name"`
		PhoneNumber parley.Optional[string] `json:"phone_number"`
	}
	if err := decodeJSON(body, &in, nil); err != nil {
		return err
	}
	b, err := s.AdminService.CreateBrand(r.Context(), in.Name.Value, in.PhoneNumber.Value)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toAdminBrand(b))
	return nil
}

func (s *Server) adminListBrands(w http.ResponseWriter, r *http.Request, _ []byte) error {
	bs, err := s.AdminService.ListBrands(r.Context())
	if err != nil {
		return err
	}
	out := make([]adminBrand, 0, len(bs))
	for _, b := range bs {
		out = append(out, toAdminBrand(b))
	}
	writeJSON(w, http.StatusOK, listPage[adminBrand]{Data: out})
	return nil
}

func (s *Server) adminUpdateBrand(w http.ResponseWriter, r *http.Request, body []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	var in struct {
		Name        *string `json:"name"`
		PhoneNumber *string `json:"phone_number"`
		HelpReply   *string `json:"help_reply"`
		StopReply   *string `json:"stop_reply"`
		StartReply  *string `json:"start_reply"`
	}
	if err := decodeJSON(body, &in, nil); err != nil {
		return err
	}
	b, err := s.AdminService.UpdateBrand(r.Context(), id, parley.BrandUpdate{Name: in.Name, PhoneNumber: in.PhoneNumber,
		HelpReply: in.HelpReply, StopReply: in.StopReply, StartReply: in.StartReply})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toAdminBrand(b))
	return nil
}

func (s *Server) adminCreateCredential(w http.ResponseWriter, r *http.Request, _ []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	c, err := s.AdminService.CreateCredential(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c)
	return nil
}

func (s *Server) adminListCredentials(w http.ResponseWriter, r *http.Request, _ []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	cs, err := s.AdminService.ListCredentials(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listPage[*parley.Credential]{Data: nonNilSlice(cs)})
	return nil
}

func (s *Server) adminRevokeCredential(w http.ResponseWriter, r *http.Request, _ []byte) error {
	username := r.PathValue("username")
	if err := s.AdminService.RevokeCredential(r.Context(), username); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"username": username, "revoked": true})
	return nil
}

// adminRotateCredential issues a new credential and keeps the old one
// working for grace_seconds (default 24 h).
func (s *Server) adminRotateCredential(w http.ResponseWriter, r *http.Request, body []byte) error {
	var in struct {
		GraceSeconds *int64 `json:"grace_seconds"`
	}
	if len(body) > 0 {
		if err := decodeJSON(body, &in, nil); err != nil {
			return err
		}
	}
	var grace time.Duration
	if in.GraceSeconds != nil {
		if *in.GraceSeconds < 1 || *in.GraceSeconds > 30*24*3600 {
			return parley.FieldError(parley.EValidation, "grace_seconds", "must be between 1 and 2592000 (30 days)")
		}
		grace = time.Duration(*in.GraceSeconds) * time.Second
	}
	c, old, err := s.AdminService.RotateCredential(r.Context(), r.PathValue("username"), grace)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"credential": c, "old": old})
	return nil
}

func (s *Server) adminCreateField(w http.ResponseWriter, r *http.Request, body []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	var f parley.CustomField
	if err := decodeJSON(body, &f, map[string]string{"id": "set by the server"}); err != nil {
		return err
	}
	if f.ID != 0 {
		return parley.FieldError(parley.EValidation, "id", "set by the server")
	}
	f.BrandID = id
	if f.AvailableEnumValues == nil {
		f.AvailableEnumValues = []string{}
	}
	if err := s.AdminService.CreateCustomField(r.Context(), &f); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, f)
	return nil
}

func (s *Server) adminListFields(w http.ResponseWriter, r *http.Request, _ []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	fs, err := s.AdminService.ListCustomFields(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listPage[*parley.CustomField]{Data: nonNilSlice(fs)})
	return nil
}

func (s *Server) adminDeleteField(w http.ResponseWriter, r *http.Request, _ []byte) error {
	brandID, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	id, err := pathID(r, "field_id")
	if err != nil {
		return err
	}
	if err := s.AdminService.DeleteCustomField(r.Context(), brandID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": true})
	return nil
}

// fieldFixed are the members a field keeps from its creation: they make
// its custom_data key and the form of the values users hold (#19).
var fieldFixed = map[string]string{
	"id":               "set by the server",
	"field_name":       "cannot change: delete the field and create it again",
	"custom_data_type": "cannot change: delete the field and create it again",
	"subtype":          "cannot change: delete the field and create it again",
}

// adminUpdateField answers POST …/custom_data_fields/{field_id}: the
// members sent change, the others stay (D4).
func (s *Server) adminUpdateField(w http.ResponseWriter, r *http.Request, body []byte) error {
	brandID, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	id, err := pathID(r, "field_id")
	if err != nil {
		return err
	}
	var in parley.CustomFieldUpdate
	if err := decodeJSON(body, &in, fieldFixed); err != nil {
		return err
	}
	f, err := s.AdminService.UpdateCustomField(r.Context(), brandID, id, in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

func (s *Server) adminCreateSegment(w http.ResponseWriter, r *http.Request, body []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	seg := parley.Segment{Source: parley.SourceUserDefined, Type: parley.SegmentStandard, IsActive: true} // defaults for absent members
	if err := decodeJSON(body, &seg, nil); err != nil {
		return err
	}
	out, err := s.AdminService.CreateSegment(r.Context(), adminOrigin, id, &seg)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Server) adminListSegments(w http.ResponseWriter, r *http.Request, _ []byte) error {
	id, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	segs, err := s.AdminService.AllSegments(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, listPage[*parley.Segment]{Data: nonNilSlice(segs)})
	return nil
}

func (s *Server) adminArchiveSegment(w http.ResponseWriter, r *http.Request, _ []byte) error {
	brandID, err := pathID(r, "brand_id")
	if err != nil {
		return err
	}
	id, err := pathID(r, "segment_id")
	if err != nil {
		return err
	}
	if _, err := s.AdminService.ArchiveSegment(r.Context(), adminOrigin, brandID, id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "archived": true})
	return nil
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
