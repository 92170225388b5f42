package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// otherFSEnv starts Parley with its data directory (media, and on SQLite
// the database) on a tmpfs: another filesystem than os.TempDir's, as a
// container volume is.
func otherFSEnv(t *testing.T, size string) *apitest.Env {
	t.Helper()
	dir := apitest.MountTmpfs(t, size)
	return apitest.New(t, func(c *app.Config) {
		c.DataDir = dir
		c.DB = apitest.MigratedDatabaseURL(t, dir)
	})
}

// TestDataDirOnOtherFilesystem (issue #31 item 14): with the data
// directory on another filesystem than os.TempDir, an upload and an API
// import succeed: the media store's temporary files are made beside
// their destination, where the rename into place cannot cross devices.
func TestDataDirOnOtherFilesystem(t *testing.T) {
	e := otherFSEnv(t, "64m")
	f, err := e.A.UploadFile(e.Ctx, "pic.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatalf("upload with the data directory on another filesystem: %v", err)
	}
	if f.MimeType != "image/png" {
		t.Errorf("uploaded file = %+v, want image/png", f)
	}
	var stored []string
	filepath.WalkDir(filepath.Join(e.App.Config.DataDir, "media"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".attrs") {
			stored = append(stored, filepath.Base(path))
		}
		return err
	})
	if len(stored) != 1 || strings.HasSuffix(stored[0], ".tmp") {
		t.Errorf("media store holds %q, want the one upload and no temporary file", stored)
	}

	imp := impCreate(t, e, e.A, "phone_number,first_name\n+14152000001,Ann\n+14152000002,Bob\n", nil)
	impStart(t, e)
	imp = impWait(t, e, e.A, imp.ID)
	if imp.Status != parley.ImportCompleted || imp.Created != 2 {
		t.Errorf("import with the data directory on another filesystem = %+v, want completed with 2 created", imp)
	}
}

// TestUploadOnFullDisk (issue #31 items 14, 15): an upload that fails for
// a filesystem reason — here the media store's disk is full — is a 503
// that says so, never "the database cannot be reached", and stores
// nothing.
func TestUploadOnFullDisk(t *testing.T) {
	// Only the media's disk: the database (SQLite's file too) is elsewhere.
	dir := apitest.MountTmpfs(t, "8m")
	e := apitest.New(t, func(c *app.Config) {
		c.DataDir = dir
		c.DB = apitest.MigratedDatabaseURL(t, t.TempDir())
	})
	fill := apitest.Fill(t, dir)
	before := e.Count(t, "files")
	body, ct := fileMultipart(t, [2]string{`form-data; name="file"; filename="pic.png"`, string(filePNG) + strings.Repeat("\x00", 64<<10)})
	resp, err := e.A.Do(e.Ctx, "POST", "/files", body, ct)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Detail struct{ Type, Msg string } }
	json.Unmarshal(resp.Body, &got)
	if resp.StatusCode != 503 || got.Detail.Type != parley.EUnavailable || !strings.Contains(got.Detail.Msg, "storage is full") ||
		strings.Contains(got.Detail.Msg, "database") {
		t.Errorf("upload on a full media disk: %d %s, want 503 saying the storage is full", resp.StatusCode, resp.Body)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if n := e.Count(t, "files"); n != before {
		t.Errorf("%d files after the failed upload, want %d", n, before)
	}
	fill.Free(t)
	if _, err := e.A.UploadFile(e.Ctx, "pic.png", bytes.NewReader(filePNG)); err != nil {
		t.Errorf("upload once space is back: %v", err)
	}
}
