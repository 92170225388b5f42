package httpapi

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley"
)

// maxImportOption bounds the value of a form field of POST /imports.
const maxImportOption = 1 << 10

// createImport takes a CSV file and its options as multipart/form-data and
// answers the queued import (issue #7).
func (s *Server) createImport(w http.ResponseWriter, r *http.Request, req *request) error {
	_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	boundary := params["boundary"]
	if boundary == "" {
		return badRequest("Content-Type must be multipart/form-data with a boundary")
	}
	// The options may come after the file, which is streamed once: read
	// them in a first pass over the spooled body.
	opt, hasFile, err := importOptions(req.upload, boundary)
	if err != nil {
		return err
	}
	if !hasFile {
		return parley.FieldError(parley.EValidation, "file", "required: a multipart part named file holding the CSV")
	}
	if _, err := req.upload.Seek(0, io.SeekStart); err != nil {
		return err
	}
	mr := multipart.NewReader(req.upload, boundary)
	for {
		part, err := mr.NextPart()
		if err != nil {
			return badRequest("malformed multipart body: " + err.Error())
		}
		if part.FormName() != "file" {
			part.Close()
			continue
		}
		err = answer(w, r, req, http.StatusCreated, func(ctx context.Context) (*parley.Import, error) {
			return s.Imports.CreateImport(ctx, req.origin(), req.brandID, part.FileName(), part, opt)
		})
		part.Close()
		return err
	}
}

// importOptions reads the form fields of an import upload and reports
// whether it has a file part. Unknown fields are refused, so a misspelt
// option is not silently ignored (D4).
func importOptions(body io.Reader, boundary string) (parley.ImportOptions, bool, error) {
	var opt parley.ImportOptions
	hasFile := false
	seen := map[string]bool{}
	mr := multipart.NewReader(body, boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return opt, hasFile, nil
		}
		if err != nil {
			return opt, false, badRequest("malformed multipart body: " + err.Error())
		}
		name := part.FormName()
		switch name {
		case "file":
			hasFile = true // the first one counts; the others are ignored, as on POST /files
		case "on_duplicate", "messaging_consent_default", "default_country", "mapping":
			if seen[name] {
				return opt, false, parley.FieldError(parley.EValidation, name, "sent twice")
			}
			seen[name] = true
			v, err := io.ReadAll(io.LimitReader(part, maxImportOption+1))
			if err != nil {
				return opt, false, badRequest("malformed multipart body: " + err.Error())
			}
			if len(v) > maxImportOption {
				return opt, false, parley.FieldError(parley.EValidation, name, "at most "+strconv.Itoa(maxImportOption)+" bytes")
			}
			switch name {
			case "on_duplicate":
				opt.OnDuplicate = string(v)
			case "messaging_consent_default":
				opt.MessagingConsentDefault = string(v)
			case "default_country":
				opt.DefaultCountry = string(v)
			default:
				opt.Mapping = string(v)
			}
		default:
			if name == "" {
				name = "(a part without a name)"
			}
			return opt, false, parley.FieldError(parley.EValidation, name,
				"unknown field; the form fields are file, on_duplicate, messaging_consent_default, default_country and mapping")
		}
		part.Close()
	}
}

func (s *Server) getImport(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "import_id")
	if err != nil {
		return err
	}
	imp, err := s.Imports.FindImport(r.Context(), req.brandID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, imp)
	return nil
}

func (s *Server) listImports(w http.ResponseWriter, r *http.Request, req *request) error {
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		var err error
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return parley.FieldError(parley.EValidation, "limit", "must be an integer between 1 and 100")
		}
	}
	list, next, err := s.Imports.ListImports(r.Context(), req.brandID, limit, q.Get("cursor"))
	if err != nil {
		return err
	}
	writePage(w, list, next)
	return nil
}

// importErrors answers the rejected rows of an import as CSV: by default
// the rejected-rows file of D22 (the rows' original cells and an errors
// column); ?format=list the list of errors, one per line: line, field,
// type, msg, the free text formula-safe (issue #7).
func (s *Server) importErrors(w http.ResponseWriter, r *http.Request, req *request) error {
	id, err := pathID(r, "import_id")
	if err != nil {
		return err
	}
	format := r.URL.Query().Get("format")
	if format != "" && format != "rows" && format != "list" {
		return parley.FieldError(parley.EValidation, "format", "must be rows (the default: the rejected rows to fix and upload again) or list (one line per error)")
	}
	if _, err := s.Imports.FindImport(r.Context(), req.brandID, id); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	name := "import-" + strconv.FormatInt(id, 10) + "-errors.csv"
	if format == "list" {
		name = "import-" + strconv.FormatInt(id, 10) + "-error-list.csv"
	}
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	if format == "list" {
		cw := csv.NewWriter(w)
		cw.Write(parley.ImportErrorColumns)
		err = s.Imports.EachImportError(r.Context(), req.brandID, id, func(e *parley.ImportError) error {
			return cw.Write(e.Record()) // formula-safe (#15)
		})
		cw.Flush()
		if err == nil {
			err = cw.Error()
		}
	} else {
		err = s.Imports.WriteRejectedRows(r.Context(), req.brandID, id, w)
	}
	if err != nil {
		// The status is sent: all that is left is to cut the answer short.
		s.logger.LogAttrs(r.Context(), slog.LevelError, "import errors: answer cut short",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		panic(http.ErrAbortHandler)
	}
	return nil
}
