package parley

import (
	"context"
	"io"
)

// File is an uploaded media item that messages attach by id (D9).
type File struct {
	ID         string `json:"id"`
	BrandID    int64  `json:"-"`
	FileName   string `json:"file_name"`
	UploadedAt Time   `json:"uploaded_at"`
	MimeType   string `json:"mime_type"`
	Size       int64  `json:"-"`
}

// FileService stores and finds a brand's media.
type FileService interface {
	// UploadFile sniffs r's type, streams it to the blob store and records
	// it. EUnsupportedMediaType, EValidation (empty), EPayloadTooLarge.
	UploadFile(ctx context.Context, o Origin, brandID int64, fileName string, r io.Reader) (*File, error)
	// FindFileByID returns ENotFound for a missing file.
	FindFileByID(ctx context.Context, brandID int64, id string) (*File, error)
	// OpenFile opens a file's content; the caller closes it.
	OpenFile(ctx context.Context, f *File) (io.ReadCloser, error)
}
