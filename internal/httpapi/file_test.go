package httpapi_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/signing"
)

// Sample media, built in-test (the same shapes as internal/media's tests).
var (
	filePNG = fileCat("\x89PNG\r\n\x1a\n", fileBE32(13), "IHDR", fileBE32(1), fileBE32(1),
		[]byte{8, 2, 0, 0, 0}, fileBE32(0x907753DE))
	fileJPEG = fileCat([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10},
		"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", []byte{0xFF, 0xD9})
	filePDF = []byte("%PDF-1.4\n%\xE2\xE3\xCF\xD3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n" +
		"2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
	fileVCard = []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nN:Doe;Jane;;;\r\nFN:Jane Doe\r\nTEL;TYPE=CELL:+14155552671\r\nEND:VCARD\r\n")

	fileText = []byte("Hello, this is just a plain text message.\n")
	fileZip  = fileCat("PK\x03\x04", []byte{20, 0, 0, 0, 0, 0}, make([]byte, 16), []byte{5, 0, 0, 0}, "a.txt", "PK\x05\x06", make([]byte, 18))
	fileELF  = fileCat("\x7fELF", []byte{2, 1, 1, 0}, make([]byte, 8), []byte{2, 0, 0x3E, 0}, make([]byte, 44))
)

// fileUUIDv4 is the canonical lowercase form of a version 4 UUID (D9).
var fileUUIDv4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// fileMembers are the members of a File, exactly (D9).
var fileMembers = []string{"id", "file_name", "uploaded_at", "mime_type"}

func fileCat(parts ...any) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b.WriteString(p)
		case []byte:
			b.Write(p)
		default:
			panic("fileCat: unsupported part")
		}
	}
	return b.Bytes()
}

func fileBE32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// filePDFOfSize is a PDF header padded to exactly n bytes.
func filePDFOfSize(n int) []byte {
	b := []byte("%PDF-1.4\n")
	return append(b, bytes.Repeat([]byte{'0'}, n-len(b))...)
}

// fileUpload sends content as the part "file" named name, as c.
func fileUpload(t *testing.T, e *apitest.Env, c *client.Client, name string, content []byte) *client.Response {
	t.Helper()
	body, ct, err := client.MultipartFile(name, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	return fileRaw(t, e, c, body, ct)
}

// fileRaw sends a raw body to POST /files, signed as c.
func fileRaw(t *testing.T, e *apitest.Env, c *client.Client, body []byte, contentType string) *client.Response {
	t.Helper()
	resp, err := c.Do(e.Ctx, "POST", "/files", body, contentType)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// fileMultipart builds a multipart body from parts given as raw header
// lines (Content-Disposition value) and content.
func fileMultipart(t *testing.T, parts ...[2]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", p[0])
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, p[1])
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), mw.FormDataContentType()
}

// fileBlobCount counts the regular files under the blob store directory.
func fileBlobCount(t *testing.T, e *apitest.Env) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(e.App.Config.DataDir, "media"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk blob dir: %v", err)
	}
	return n
}

// fileNothingStored asserts a rejection left the database and blob store alone.
func fileNothingStored(t *testing.T, e *apitest.Env, state string, blobs int) {
	t.Helper()
	if e.State(t) != state {
		t.Error("a rejected upload changed the database (D9)")
	}
	if n := fileBlobCount(t, e); n != blobs {
		t.Errorf("blob store holds %d files after a rejected upload, want %d (D9)", n, blobs)
	}
}

// fileDecode decodes a File answer, checking its exact members.
func fileDecode(t *testing.T, resp *client.Response) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(resp.Body, &m); err != nil {
		t.Fatalf("answer %q: %v", resp.Body, err)
	}
	msgWantMembers(t, m, fileMembers)
	return m
}

// fileStored returns the stored file (with its brand) for a media link.
func fileStored(t *testing.T, e *apitest.Env, brandID int64, id string) *parley.File {
	t.Helper()
	f, err := e.App.Service.FindFileByID(e.Ctx, brandID, id)
	if err != nil {
		t.Fatalf("FindFileByID: %v", err)
	}
	return f
}

// fileGetMedia fetches a media link with plain http.Get: no signing headers.
func fileGetMedia(t *testing.T, e *apitest.Env, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(e.Server.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// fileWantMediaNotFound asserts a media answer is a 404 in the error envelope.
func fileWantMediaNotFound(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	r := &client.Response{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}
	wantAPIError(t, r.Err(), 404, parley.ENotFound)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q, want the JSON error envelope (D1)", ct)
	}
}

func TestUploadFile(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, tc := range []struct {
		name, fileName string
		content        []byte
		wantMime       string
	}{
		{"PNGAccepted", "pic.png", filePNG, "image/png"},
		{"JPEGAccepted", "pic.jpg", fileJPEG, "image/jpeg"},
		{"PDFAccepted", "doc.pdf", filePDF, "application/pdf"},
		{"VCardAccepted", "jane.vcf", fileVCard, "text/vcard"},
		{"TypeSniffedNotFromName", "photo.jpg", filePNG, "image/png"},
		{"TypeSniffedNotFromExtensionless", "contact", fileVCard, "text/vcard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := fileUpload(t, e, e.A, tc.fileName, tc.content)
			if resp.StatusCode != 201 {
				t.Fatalf("status = %d (%s), want 201 (D3)", resp.StatusCode, resp.Body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q (D1)", ct)
			}
			got := fileDecode(t, resp)
			id, _ := got["id"].(string)
			if !fileUUIDv4.MatchString(id) {
				t.Errorf("id = %q, want a lowercase UUID v4 (D9)", id)
			}
			if got["file_name"] != tc.fileName {
				t.Errorf("file_name = %#v, want %q (D9)", got["file_name"], tc.fileName)
			}
			if got["mime_type"] != tc.wantMime {
				t.Errorf("mime_type = %#v, want %q sniffed from the content (D9)", got["mime_type"], tc.wantMime)
			}
			at, _ := got["uploaded_at"].(string)
			if ts, err := time.Parse(parley.TimeFormat, at); err != nil {
				t.Errorf("uploaded_at %q is not RFC 3339 UTC with microseconds (D1)", at)
			} else if d := ts.Sub(e.Now()); d > time.Second || d < -time.Second {
				t.Errorf("uploaded_at %v is not the server's now %v", ts, e.Now())
			}
			// The stored blob holds exactly the uploaded bytes.
			f := fileStored(t, e, e.BrandA.ID, id)
			rc, err := e.App.Service.OpenFile(e.Ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(b, tc.content) {
				t.Errorf("stored %d bytes, want the %d uploaded", len(b), len(tc.content))
			}
		})
	}
	if n := e.Count(t, "files"); n != 6 {
		t.Errorf("files rows = %d, want 6", n)
	}
}

func TestUploadFileNameSanitized(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, tc := range []struct {
		name, disposition, want string
	}{
		{"RelativePathToBaseName", `form-data; name="file"; filename="../../etc/passwd"`, "passwd"},
		{"AbsolutePathToBaseName", `form-data; name="file"; filename="/var/tmp/pic.png"`, "pic.png"},
		{"WindowsPathToBaseName", `form-data; name="file"; filename="C:\\x\\y.png"`, "y.png"},
		{"MissingFilenameIsFile", `form-data; name="file"`, "file"},
		{"EmptyFilenameIsFile", `form-data; name="file"; filename=""`, "file"},
		{"DotDotIsFile", `form-data; name="file"; filename=".."`, "file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, ct := fileMultipart(t, [2]string{tc.disposition, string(filePNG)})
			resp := fileRaw(t, e, e.A, body, ct)
			if resp.StatusCode != 201 {
				t.Fatalf("status = %d (%s), want 201", resp.StatusCode, resp.Body)
			}
			if got := fileDecode(t, resp)["file_name"]; got != tc.want {
				t.Errorf("file_name = %#v, want %q (D9: sanitized base name, file when absent)", got, tc.want)
			}
		})
	}
	t.Run("WindowsPathViaClient", func(t *testing.T) {
		resp := fileUpload(t, e, e.A, `C:\x\y.png`, filePNG)
		if got := fileDecode(t, resp)["file_name"]; got != "y.png" {
			t.Errorf("file_name = %#v, want y.png (D9)", got)
		}
	})
}

func TestUploadFileRejected(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	fileUpload(t, e, e.A, "keep.png", filePNG) // something already stored, so "unchanged" is not "empty"
	state, blobs := e.State(t), fileBlobCount(t, e)
	if blobs == 0 {
		t.Fatal("the blob directory holds no files after an upload; the nothing-stored checks would prove nothing")
	}
	for _, tc := range []struct {
		name     string
		content  []byte
		status   int
		wantType string
	}{
		{"PlainTextUnsupported", fileText, 415, parley.EUnsupportedMediaType},
		{"ZipUnsupported", fileZip, 415, parley.EUnsupportedMediaType},
		{"ELFUnsupported", fileELF, 415, parley.EUnsupportedMediaType},
		{"EmptyInvalid", nil, 422, parley.EValidation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := fileUpload(t, e, e.A, "evil.png", tc.content)
			wantAPIError(t, resp.Err(), tc.status, tc.wantType)
			fileNothingStored(t, e, state, blobs)
		})
	}
}

func TestUploadFileSizeLimit(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.MaxFileSize = 4096 })

	exact := filePDFOfSize(4096)
	resp := fileUpload(t, e, e.A, "exact.pdf", exact)
	if resp.StatusCode != 201 {
		t.Fatalf("a file of exactly the limit: status = %d (%s), want 201 (D9)", resp.StatusCode, resp.Body)
	}
	got := fileDecode(t, resp)
	if got["mime_type"] != "application/pdf" {
		t.Errorf("mime_type = %#v", got["mime_type"])
	}
	f := fileStored(t, e, e.BrandA.ID, got["id"].(string))
	if f.Size != 4096 {
		t.Errorf("stored size = %d, want 4096", f.Size)
	}

	state, blobs := e.State(t), fileBlobCount(t, e)
	t.Run("OneByteOverTooLarge", func(t *testing.T) {
		resp := fileUpload(t, e, e.A, "over.pdf", filePDFOfSize(4097))
		wantAPIError(t, resp.Err(), 413, parley.EPayloadTooLarge)
		fileNothingStored(t, e, state, blobs)
	})
	t.Run("FarOverTooLarge", func(t *testing.T) {
		resp := fileUpload(t, e, e.A, "over.pdf", filePDFOfSize(64<<10))
		wantAPIError(t, resp.Err(), 413, parley.EPayloadTooLarge)
		fileNothingStored(t, e, state, blobs)
	})
}

// The whole multipart body is bounded too (D9): a huge body is refused even
// when its file part is small, so the bound is not only the file's.
func TestUploadBodyTooLarge(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.MaxFileSize = 4096 })
	state, blobs := e.State(t), fileBlobCount(t, e)
	padding := strings.Repeat("x", 2<<20) // over MaxFileSize plus any multipart allowance
	body, ct := fileMultipart(t,
		[2]string{`form-data; name="note"`, padding},
		[2]string{`form-data; name="file"; filename="a.png"`, string(filePNG)})

	t.Run("WithContentLengthTooLarge", func(t *testing.T) {
		resp := fileRaw(t, e, e.A, body, ct)
		wantAPIError(t, resp.Err(), 413, parley.EPayloadTooLarge)
		fileNothingStored(t, e, state, blobs)
	})
	t.Run("ChunkedTooLarge", func(t *testing.T) {
		// No Content-Length: the server must stop reading at the limit itself.
		req, err := http.NewRequestWithContext(e.Ctx, "POST", e.Server.URL+"/api/v1/files", io.NopCloser(bytes.NewReader(body)))
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = -1
		req.Header.Set("Content-Type", ct)
		signing.SignRequestDigest(req, e.CredA.Username, e.CredA.Secret, signing.Digest(body), e.Now())
		hr, err := http.DefaultClient.Do(req)
		if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			// The server answered 413 and closed before the client had
			// written the rest: it stopped reading at the limit, which is
			// the rule; the answer itself was lost with the connection.
			fileNothingStored(t, e, state, blobs)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		defer hr.Body.Close()
		b, _ := io.ReadAll(hr.Body)
		r := &client.Response{StatusCode: hr.StatusCode, Header: hr.Header, Body: b}
		wantAPIError(t, r.Err(), 413, parley.EPayloadTooLarge)
		fileNothingStored(t, e, state, blobs)
	})
}

func TestUploadFileBadRequests(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	fileUpload(t, e, e.A, "keep.png", filePNG)
	state, blobs := e.State(t), fileBlobCount(t, e)
	png := string(filePNG)

	noFile, noFileCT := fileMultipart(t, [2]string{`form-data; name="other"; filename="a.png"`, png})
	noParts, noPartsCT := fileMultipart(t)
	const b = "XyZbOuNdArY"
	const mpCT = "multipart/form-data; boundary=" + b
	for _, tc := range []struct {
		name     string
		body     string
		ct       string
		status   int
		wantType string
	}{
		{"JSONBodyInvalidRequest", `{"file":"iVBORw0KGgo="}`, "application/json", 400, parley.EInvalidRequest},
		{"RawPNGInvalidRequest", png, "image/png", 400, parley.EInvalidRequest},
		{"NoContentTypeInvalidRequest", png, "", 400, parley.EInvalidRequest},
		{"MultipartWithoutBoundaryInvalidRequest", png, "multipart/form-data", 400, parley.EInvalidRequest},
		{"NoFilePartValidationError", string(noFile), noFileCT, 422, parley.EValidation},
		{"NoPartsValidationError", string(noParts), noPartsCT, 422, parley.EValidation},
		{"GarbageMalformed", "this is not multipart at all", mpCT, 400, parley.EInvalidRequest},
		{"BadPartHeaderMalformed", "--" + b + "\r\nthis header has no colon\r\n\r\n" + png + "\r\n--" + b + "--\r\n", mpCT, 400, parley.EInvalidRequest},
		{"TruncatedFilePartMalformed", "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\r\n" + png, mpCT, 400, parley.EInvalidRequest},
		{"TruncatedBigFilePartMalformed", "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n\r\n" + string(filePDFOfSize(10000)), mpCT, 400, parley.EInvalidRequest},
		{"TruncatedEmptyFilePartMalformed", "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\r\n", mpCT, 400, parley.EInvalidRequest},
		{"TruncatedTextFilePartMalformed", "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\n" + string(fileText), mpCT, 400, parley.EInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := fileRaw(t, e, e.A, []byte(tc.body), tc.ct)
			fileNothingStored(t, e, state, blobs)
			ae := wantAPIError(t, resp.Err(), tc.status, tc.wantType)
			if tc.wantType == parley.EValidation && !strings.HasPrefix(ae.Msg, "file:") {
				t.Errorf("msg = %q, want it to name the file part (D3)", ae.Msg)
			}
		})
	}
}

func TestUploadFileWrongDigest(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	state, blobs := e.State(t), fileBlobCount(t, e)
	body, ct, err := client.MultipartFile("a.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := client.MultipartFile("a.png", bytes.NewReader(fileJPEG))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(e.Ctx, "POST", e.Server.URL+"/api/v1/files", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	// A correct signature over a digest of another body (D2: the digest covers the whole multipart body).
	signing.SignRequestDigest(req, e.CredA.Username, e.CredA.Secret, signing.Digest(other), e.Now())
	hr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Body.Close()
	b, _ := io.ReadAll(hr.Body)
	r := &client.Response{StatusCode: hr.StatusCode, Header: hr.Header, Body: b}
	ae := wantAPIError(t, r.Err(), 401, parley.ENotAuthenticated)
	if !strings.HasPrefix(ae.Msg, "HMAC signature verification failed") {
		t.Errorf("msg = %q (D2)", ae.Msg)
	}
	fileNothingStored(t, e, state, blobs)

	// The same request with the right digest goes through, so the 401 was the digest's.
	req2, _ := http.NewRequestWithContext(e.Ctx, "POST", e.Server.URL+"/api/v1/files", bytes.NewReader(body))
	req2.Header.Set("Content-Type", ct)
	signing.SignRequestDigest(req2, e.CredA.Username, e.CredA.Secret, signing.Digest(body), e.Now())
	hr2, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	hr2.Body.Close()
	if hr2.StatusCode != 201 {
		t.Errorf("control upload with the right digest: status = %d, want 201", hr2.StatusCode)
	}
}

func TestGetFile(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	up := fileUpload(t, e, e.A, "photo.jpg", filePNG)
	want := fileDecode(t, up)
	id := want["id"].(string)

	t.Run("RoundTripEqualsUploadAnswer", func(t *testing.T) {
		resp := mustDo(t, e.A, "GET", "/files/"+id, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d (%s), want 200 (D3)", resp.StatusCode, resp.Body)
		}
		got := fileDecode(t, resp)
		for _, k := range fileMembers {
			if got[k] != want[k] {
				t.Errorf("%s = %#v, want %#v as uploaded (D9)", k, got[k], want[k])
			}
		}
	})
	for _, tc := range []struct {
		name string
		c    *client.Client
		id   string
	}{
		{"OtherBrandsFileNotFound", e.B, id},
		{"RandomUUIDNotFound", e.A, "3f1c2e4a-5b6d-4e7f-8a9b-0c1d2e3f4a5b"},
		{"NotAUUIDNotFound", e.A, "not-a-uuid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := mustDo(t, tc.c, "GET", "/files/"+tc.id, nil)
			wantAPIError(t, resp.Err(), 404, parley.ENotFound)
			if strings.Contains(string(resp.Body), "photo.jpg") {
				t.Errorf("404 leaks the file: %s", resp.Body)
			}
		})
	}
}

func TestMediaLink(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	up := fileDecode(t, fileUpload(t, e, e.A, "pic.jpg", fileJPEG))
	other := fileDecode(t, fileUpload(t, e, e.A, "other.png", filePNG))
	f := fileStored(t, e, e.BrandA.ID, up["id"].(string))
	path := e.App.Service.MediaURLPath(f, e.Now().Add(time.Minute))
	if !strings.HasPrefix(path, "/media/"+f.ID+"?") {
		t.Fatalf("MediaURLPath = %q", path)
	}

	t.Run("ServesExactBytesWithoutAuth", func(t *testing.T) {
		resp, body := fileGetMedia(t, e, path)
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d (%s), want 200 (D9: signed links need no HMAC headers)", resp.StatusCode, body)
		}
		if !bytes.Equal(body, fileJPEG) {
			t.Errorf("body = %d bytes, want the %d uploaded", len(body), len(fileJPEG))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "image/jpeg" {
			t.Errorf("Content-Type = %q, want image/jpeg (D9)", ct)
		}
	})

	otherID := other["id"].(string)
	tampered := func(old, new string) string {
		t.Helper()
		if !strings.Contains(path, old) {
			t.Fatalf("%q not in %q", old, path)
		}
		return strings.Replace(path, old, new, 1)
	}
	sig := path[strings.Index(path, "sig=")+len("sig="):]
	flipped := []byte(sig)
	if flipped[0] == 'A' {
		flipped[0] = 'B'
	} else {
		flipped[0] = 'A'
	}
	for _, tc := range []struct{ name, path string }{
		{"TamperedSigNotFound", tampered("sig="+sig, "sig="+string(flipped))},
		{"MissingSigNotFound", tampered("&sig="+sig, "")},
		{"OtherIDNotFound", tampered("/media/"+f.ID, "/media/"+otherID)},
		{"OtherBrandNotFound", tampered("brand="+strconv.FormatInt(e.BrandA.ID, 10), "brand="+strconv.FormatInt(e.BrandB.ID, 10))},
		{"LaterExpiryNotFound", fileLaterExpiry(t, path)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := fileGetMedia(t, e, tc.path)
			fileWantMediaNotFound(t, resp, body)
			if bytes.Contains(body, fileJPEG[:4]) || bytes.Contains(body, filePNG[:4]) {
				t.Error("a refused media link leaked file content")
			}
		})
	}

	t.Run("ExpiredNotFound", func(t *testing.T) {
		e.Advance(time.Hour)
		resp, body := fileGetMedia(t, e, path)
		fileWantMediaNotFound(t, resp, body)
	})
}

// fileLaterExpiry pushes a link's expires one day later, keeping its sig.
func fileLaterExpiry(t *testing.T, path string) string {
	t.Helper()
	i := strings.Index(path, "expires=")
	if i < 0 {
		t.Fatalf("no expires in %q", path)
	}
	j := strings.Index(path[i:], "&")
	if j < 0 {
		t.Fatalf("expires is not followed by another parameter in %q", path)
	}
	exp, err := strconv.ParseInt(path[i+len("expires="):i+j], 10, 64)
	if err != nil {
		t.Fatalf("expires in %q: %v", path, err)
	}
	return path[:i] + "expires=" + strconv.FormatInt(exp+86400, 10) + path[i+j:]
}

// Media answers are for carriers, not browsers: never sniffed, sandboxed,
// shown inline only when they are images, and named by the stored,
// sanitised file name (RFC 6266; filename* per RFC 5987 when not ASCII).
func TestMediaHeaders(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	for _, tc := range []struct {
		name, upload string
		content      []byte
		disposition  string
	}{
		{"ImageInline", "pic.jpg", fileJPEG, `inline; filename="pic.jpg"`},
		{"PNGInline", "dir/chart.png", filePNG, `inline; filename="chart.png"`},
		{"PDFAttachment", "report.pdf", filePDF, `attachment; filename="report.pdf"`},
		{"VCardAttachment", "jane.vcf", fileVCard, `attachment; filename="jane.vcf"`},
		{"QuotesEscaped", `a "b".pdf`, filePDF, `attachment; filename="a \"b\".pdf"`},
		{"NonASCIIFilenameStar", "résumé 2024.pdf", filePDF,
			`attachment; filename="r_sum_ 2024.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%202024.pdf`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := fileDecode(t, fileUpload(t, e, e.A, tc.upload, tc.content))
			f := fileStored(t, e, e.BrandA.ID, up["id"].(string))
			resp, body := fileGetMedia(t, e, e.App.Service.MediaURLPath(f, e.Now().Add(time.Minute)))
			if resp.StatusCode != 200 {
				t.Fatalf("status = %d (%s), want 200", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Content-Disposition"); got != tc.disposition {
				t.Errorf("Content-Disposition = %q, want %q", got, tc.disposition)
			}
			if got := resp.Header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want exactly nosniff", got)
			}
			if got := resp.Header.Get("Content-Security-Policy"); got != "sandbox; default-src 'none'" {
				t.Errorf("Content-Security-Policy = %q, want sandbox; default-src 'none'", got)
			}
		})
	}
}
