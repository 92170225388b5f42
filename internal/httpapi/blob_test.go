package httpapi_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// TestBlobURL: media go to the bucket named by --blob, which nodes can share
// (issue #3).
func TestBlobURL(t *testing.T) {
	t.Parallel()
	shared := t.TempDir()
	e := apitest.New(t, func(c *app.Config) { c.Blob = "file://" + filepath.ToSlash(shared) })
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
	f, err := e.A.UploadFile(e.Ctx, "dot.png", bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(shared, itoa(e.BrandA.ID), f.ID))
	if err != nil {
		t.Fatalf("upload not in the --blob bucket: %v", err)
	}
	if !bytes.Equal(got, png) {
		t.Error("stored bytes differ from the upload")
	}
}
