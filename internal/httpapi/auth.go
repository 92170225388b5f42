package httpapi

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/signing"
)

// bodyMode says how an authenticated route reads its body.
type bodyMode int

const (
	noBody        bodyMode = iota // read (bounded) only to check a digest that was sent
	jsonBody                      // application/json, held in memory, at most MaxJSONBody
	multipartBody                 // multipart/form-data, spooled to a temp file
	importBody                    // multipartBody bounded by MaxImportBody: a CSV import
)

// request is what an authenticated handler receives.
type request struct {
	brandID int64
	body    []byte   // jsonBody, noBody
	upload  *os.File // multipartBody: the whole raw body, digest checked
	signed  *parley.SignedWrite
	keyed   *parley.KeyedWrite // the Idempotency-Key, if the request sent one
}

// origin is the Origin of the changes the request asks for: a signed API
// request, with its signature and key, which the store checks and records
// in the change's own transaction (D2, D13).
func (req *request) origin() parley.Origin { return parley.APIOrigin(req.signed, req.keyed) }

type apiHandler func(w http.ResponseWriter, r *http.Request, req *request) error

// authed verifies the request signature (D2) before anything else happens,
// reads the body in the route's mode, checks its digest, and only then runs
// h with the brand the credential belongs to, within RequestTimeout.
func (s *Server) authed(mode bodyMode, h apiHandler) http.Handler {
	return s.verified(mode, h, s.RequestTimeout)
}

// verified is authed with h's work bounded by limit, counted once the body
// is in (an upload may take up to UploadTimeout to arrive, #15); 0 leaves
// the work unbounded, for an answer that bounds each of its waits itself
// (streamed).
func (s *Server) verified(mode bodyMode, h apiHandler, limit time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.RequestTimeout)
		defer cancel()
		req, err := s.authenticate(w, r.WithContext(ctx), mode)
		if req != nil && req.upload != nil {
			defer func() {
				req.upload.Close()
				os.Remove(req.upload.Name())
			}()
		}
		if err == nil {
			ctx := r.Context()
			if limit > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, limit)
				defer cancel()
			}
			r = r.WithContext(ctx)
			s.Credentials.CredentialUsed(ctx, r.Header.Get(signing.HeaderUsername))
			if info := infoFrom(r.Context()); info != nil {
				info.brandID = req.brandID
			}
			err = s.idempotent(w, r, req, h)
			if err != nil {
				err = s.recordRefused(r.Context(), req.signed, err)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, mode bodyMode) (*request, error) {
	username := r.Header.Get(signing.HeaderUsername)
	var (
		brandID int64
		secret  []byte
		found   bool
	)
	if username != "" {
		var err error
		brandID, secret, err = s.Credentials.CredentialSecret(r.Context(), username)
		if err != nil && parley.ErrorCode(err) != parley.ENotAuthenticated {
			return nil, err
		}
		found = err == nil
	}
	if err := s.verifier.VerifyHeaders(r.Method, signing.RequestTarget(r), r.Header, secret, found); err != nil {
		return nil, err
	}
	// Limited only once the credential is proven: a forger cannot spend
	// another credential's tokens.
	if err := s.limits.take(w, username); err != nil {
		return nil, err
	}
	req := &request{brandID: brandID}

	switch mode {
	case jsonBody:
		if err := checkJSONContentType(r); err != nil {
			return nil, err
		}
		fallthrough
	case noBody:
		body, err := readBody(w, r, s.MaxJSONBody)
		if err != nil {
			return nil, err
		}
		if err := signing.VerifyBody(r.Header, body); err != nil {
			return nil, err
		}
		req.body = body
	case multipartBody, importBody:
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/form-data" {
			return nil, badRequest("Content-Type must be multipart/form-data with a part named file")
		}
		// Only a proven credential gets the longer time for its body.
		bodyGuardFrom(r.Context()).extend(s.UploadTimeout)
		limit := s.MaxUploadBody
		if mode == importBody {
			limit = s.MaxImportBody
		}
		if req.upload, err = s.spool(w, r, limit); err != nil {
			return req, err
		}
	}
	// The request is now fully verified: the body matches its digest.
	req.signed = s.signedWrite(r, username)
	return req, nil
}

// readBody reads at most limit bytes; more is 413 (D4).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, tooLarge(limit)
	}
	if err != nil {
		return nil, bodyGuardFrom(r.Context()).readError(err)
	}
	return body, nil
}

func tooLarge(limit int64) *parley.Error {
	return parley.Errorf(parley.EPayloadTooLarge, "request body larger than %d bytes", limit)
}

// spool copies an upload body to a temp file while hashing it, so neither
// the body nor the file is held in memory and nothing is stored before the
// digest matches (D2, D9).
func (s *Server) spool(w http.ResponseWriter, r *http.Request, limit int64) (*os.File, error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	f, err := os.CreateTemp(s.TempDir, "parley-upload-*")
	if err != nil {
		return nil, err
	}
	d := signing.NewDigester()
	_, err = io.Copy(io.MultiWriter(f, d), http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		err = tooLarge(limit)
	case err != nil:
		err = bodyGuardFrom(r.Context()).readError(err)
	default:
		err = signing.VerifyDigest(r.Header.Get(signing.HeaderDigest), d.Sum())
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	return f, err
}
