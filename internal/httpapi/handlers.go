package httpapi

import (
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

// Members of the API that a body may not carry, with the reason (D4).
var (
	updateNotAllowed = map[string]string{
		"phone_number": "not allowed on update",
		"channel":      "not allowed on update",
	}
)

func (s *Server) createUser(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.UserCreate
	if err := decodeJSON(req.body, &in, nil); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.User, error) {
		return s.Users.CreateUser(ctx, req.origin(), req.brandID, in)
	})
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "user_id")
	if err != nil {
		return err
	}
	u, err := s.Users.FindUserByID(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

func (s *Server) findUserByPhone(w http.ResponseWriter, r *http.Request, req *request) error {
	q := r.URL.Query()
	if !q.Has("phone_number") || q.Get("phone_number") == "" {
		return parley.FieldError(parley.EValidation, "phone_number", "required query parameter")
	}
	phone := q.Get("phone_number")
	// An unencoded "+" arrives as a space (D5).
	if strings.HasPrefix(phone, " ") {
		phone = "+" + phone[1:]
	}
	u, err := s.Users.FindUserByPhone(r.Context(), req.brandID, phone)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "user_id")
	if err != nil {
		return err
	}
	var in parley.UserUpdate
	if err := decodeJSON(req.body, &in, updateNotAllowed); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusOK, func(ctx context.Context) (*parley.User, error) {
		return s.Users.UpdateUser(ctx, req.origin(), req.brandID, id, in)
	})
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "user_id")
	if err != nil {
		return err
	}
	u, err := s.Users.DeleteUser(r.Context(), req.origin(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u)
	return nil
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.MessageCreate
	if err := decodeJSON(req.body, &in, nil); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Message, error) {
		return s.Messages.SendMessage(ctx, req.origin(), req.brandID, in)
	})
}

// simReplyHeader carries the reply the brand sent back to a simulated
// inbound text (a STOP confirmation, the HELP text): the answer itself is
// the stored inbound message (D12).
const simReplyHeader = "Parley-Sim-Reply"

func (s *Server) simulateInbound(w http.ResponseWriter, r *http.Request, req *request) error {
	var in parley.SimulatedInbound
	if err := decodeJSONObject(req.body, &in, nil); err != nil {
		return err
	}
	if err := checkText(req.body, "body"); err != nil {
		return err
	}
	return answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Message, error) {
		m, reply, err := s.Simulator.SimulateInbound(ctx, req.origin(), req.brandID, in)
		if reply != "" {
			w.Header().Set(simReplyHeader, reply)
		}
		return m, err
	})
}

func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "message_id")
	if err != nil {
		return err
	}
	m, err := s.Messages.FindMessageByID(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// listPage is the shape of every list extension (D8).
type listPage[T any] struct {
	Data       []T     `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

// writePage answers one page of a list; next is "" after the last.
func writePage[T any](w http.ResponseWriter, data []T, next string) {
	page := listPage[T]{Data: nonNilSlice(data)}
	if next != "" {
		page.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, req *request) error {
	q := r.URL.Query()
	var f parley.MessageFilter
	var err error
	if v := q.Get("user_id"); v != "" {
		if f.UserID, err = strconv.ParseInt(v, 10, 64); err != nil || f.UserID < 1 {
			return parley.FieldError(parley.EValidation, "user_id", "must be an integer ≥ 1")
		}
	}
	if v := q.Get("campaign_id"); v != "" {
		if f.CampaignID, err = strconv.ParseInt(v, 10, 64); err != nil || f.CampaignID < 1 {
			return parley.FieldError(parley.EValidation, "campaign_id", "must be an integer ≥ 1")
		}
	}
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 1 {
			return parley.FieldError(parley.EValidation, "limit", "must be an integer between 1 and 100")
		}
	}
	f.Cursor = q.Get("cursor")
	msgs, next, err := s.Messages.ListMessages(r.Context(), req.brandID, f)
	if err != nil {
		return err
	}
	writePage(w, msgs, next)
	return nil
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, req *request) error {
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if params["boundary"] == "" {
		return badRequest("Content-Type must be multipart/form-data with a boundary")
	}
	mr := multipart.NewReader(req.upload, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return parley.FieldError(parley.EValidation, "file", "required: a multipart part named file")
		}
		if err != nil {
			return badRequest("malformed multipart body: " + err.Error())
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		err = answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.File, error) {
			return s.Files.UploadFile(ctx, req.origin(), req.brandID, part.FileName(), part)
		})
		part.Close()
		return err
	}
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, req *request) error {
	f, err := s.Files.FindFileByID(r.Context(), req.brandID, r.PathValue("file_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, f)
	return nil
}

// media serves a file's content to whoever holds a signed link (D9).
func (s *Server) media(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, rc, err := s.Media.OpenMedia(r.Context(), q.Get("brand"), r.PathValue("file_id"), q.Get("expires"), q.Get("sig"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", f.MimeType)
	h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	h.Set("Cache-Control", "private, max-age=300")
	// A link opened in a browser must not run as a page of this origin:
	// only images are shown, the rest downloads, and nothing is scripted.
	h.Set("Content-Disposition", contentDisposition(f.MimeType, f.FileName))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	io.Copy(w, rc)
}

// contentDisposition is inline for images and attachment otherwise, with
// the file name (RFC 6266): an ASCII fallback, and filename* (RFC 5987)
// with the exact name when it is not ASCII.
func contentDisposition(mimeType, name string) string {
	disp := "attachment"
	if strings.HasPrefix(mimeType, "image/") {
		disp = "inline"
	}
	var ascii strings.Builder
	plain := true
	for _, r := range name {
		switch {
		case r == '"' || r == '\\':
			ascii.WriteByte('\\')
			ascii.WriteRune(r)
		case r < 0x20 || r > 0x7e:
			ascii.WriteByte('_')
			plain = false
		default:
			ascii.WriteRune(r)
		}
	}
	v := disp + `; filename="` + ascii.String() + `"`
	if !plain {
		v += "; filename*=UTF-8''" + rfc5987(name)
	}
	return v
}

// rfc5987 percent-encodes s except for RFC 5987's attr-char.
func rfc5987(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func (s *Server) listSegments(w http.ResponseWriter, r *http.Request, req *request) error {
	segs, err := s.Brands.ListSegments(r.Context(), req.brandID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, segs)
	return nil
}

func (s *Server) listCustomFields(w http.ResponseWriter, r *http.Request, req *request) error {
	fields, err := s.Brands.ListCustomFields(r.Context(), req.brandID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fields)
	return nil
}

func (s *Server) getBrand(w http.ResponseWriter, r *http.Request, req *request) error {
	b, err := s.Brands.FindBrand(r.Context(), req.brandID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b)
	return nil
}
