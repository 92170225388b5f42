package service

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"gocloud.dev/blob"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/media"
	"github.com/parleyhq/parley/internal/store"
)

const maxFileNameLen = 255

// UploadFile implements parley.FileService: it sniffs the type from the
// content (D9), streams the content to the blob store without holding it in
// memory, and records the file once the blob is written.
func (s *Service) UploadFile(ctx context.Context, o parley.Origin, brandID int64, fileName string, r io.Reader) (*parley.File, error) {
	src := &sourceReader{r: r}
	r = src
	head := make([]byte, media.SniffLen)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, unreadable(err)
	}
	if src.err != nil {
		return nil, unreadable(src.err)
	}
	head = head[:n]
	if n == 0 {
		return nil, invalid("file", "must not be empty")
	}
	mimeType, ok := media.Detect(head)
	if !ok {
		return nil, parley.Errorf(parley.EUnsupportedMediaType,
			"file: content type is not accepted; accepted types: %s", strings.Join(media.Accepted(), ", "))
	}

	f := &parley.File{
		ID:       uuid.NewString(),
		BrandID:  brandID,
		FileName: SanitizeFileName(fileName),
		MimeType: mimeType,
	}
	key := strconv.FormatInt(brandID, 10) + "/" + f.ID

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.blob.NewWriter(wctx, key, &blob.WriterOptions{ContentType: mimeType})
	if err != nil {
		return nil, fmt.Errorf("service: blob writer: %w", err)
	}
	// Read one byte past the limit to tell "exactly the limit" from "over".
	size, err := io.Copy(w, io.LimitReader(io.MultiReader(bytes.NewReader(head), r), s.MaxFileSize+1))
	switch {
	case src.err != nil:
		err = unreadable(src.err)
	case err == nil && size > s.MaxFileSize:
		err = parley.Errorf(parley.EPayloadTooLarge, "file: at most %d bytes", s.MaxFileSize)
	}
	if err != nil {
		cancel() // a cancelled writer discards what it wrote
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("service: blob write: %w", err)
	}
	f.Size = size

	err = s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		f.UploadedAt = parley.Time{Time: tx.Now()}
		tx.Answer(f)
		return tx.InsertFile(ctx, f, key)
	})
	if err != nil {
		// The row, with the key's answer naming the file, may have
		// committed: an orphan blob is the lesser harm than a lost one.
		if !store.CommitUncertain(err) {
			s.blob.Delete(context.WithoutCancel(ctx), key)
		}
		return nil, err
	}
	return f, nil
}

// sourceReader remembers a failure to read the upload itself (a truncated
// or malformed body), which is the caller's fault, unlike a failure to write
// the blob.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

func unreadable(err error) *parley.Error {
	return parley.Errorf(parley.EInvalidRequest, "could not read the uploaded file: %v", err)
}

// SanitizeFileName keeps the base name of a client's file name, without
// control characters or path separators, at most 255 characters; "file"
// when nothing is left (D9).
func SanitizeFileName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(name)
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxFileNameLen {
		name = string([]rune(name)[:maxFileNameLen])
	}
	if name == "" || name == "." || name == ".." {
		return "file"
	}
	return name
}

// FindFileByID implements parley.FileService.
func (s *Service) FindFileByID(ctx context.Context, brandID int64, id string) (*parley.File, error) {
	f, _, err := s.findFile(ctx, brandID, id)
	return f, err
}

func (s *Service) findFile(ctx context.Context, brandID int64, id string) (*parley.File, string, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, "", fileNotFound(id)
	}
	f, key, err := s.db.FindFile(ctx, brandID, strings.ToLower(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fileNotFound(id)
	}
	return f, key, err
}

func fileNotFound(id string) *parley.Error {
	return parley.Errorf(parley.ENotFound, "File with ID [%s] not found.", id)
}

// OpenFile implements parley.FileService.
func (s *Service) OpenFile(ctx context.Context, f *parley.File) (io.ReadCloser, error) {
	_, key, err := s.findFile(ctx, f.BrandID, f.ID)
	if err != nil {
		return nil, err
	}
	return s.blob.NewReader(ctx, key, nil)
}

// MediaURLPath returns the path and query of a signed, expiring link to a
// file's content, for the SMS provider to fetch (D9): the link needs no
// request signing and stops working at expires.
func (s *Service) MediaURLPath(f *parley.File, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 10)
	return "/media/" + f.ID + "?brand=" + strconv.FormatInt(f.BrandID, 10) + "&expires=" + exp +
		"&sig=" + s.mediaSig(f.BrandID, f.ID, exp)
}

// OpenMedia checks a signed media link and opens the file it names. Any
// failure is ENotFound, so a link gives nothing away.
func (s *Service) OpenMedia(ctx context.Context, brand, id, expires, sig string) (*parley.File, io.ReadCloser, error) {
	brandID, err := strconv.ParseInt(brand, 10, 64)
	exp, err2 := strconv.ParseInt(expires, 10, 64)
	if err != nil || err2 != nil || !hmac.Equal([]byte(sig), []byte(s.mediaSig(brandID, id, expires))) ||
		s.db.Now().Unix() > exp {
		return nil, nil, fileNotFound(id)
	}
	f, key, err := s.findFile(ctx, brandID, id)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.blob.NewReader(ctx, key, nil)
	if err != nil {
		return nil, nil, err
	}
	return f, r, nil
}

func (s *Service) mediaSig(brandID int64, id, expires string) string {
	m := hmac.New(sha256.New, s.mediaKey)
	fmt.Fprintf(m, "%d\n%s\n%s", brandID, id, expires)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
