package console_test

import (
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/app"
)

// importCSV has three rows: two good, one with a bad phone number (line 3).
const importCSV = "phone_number,first_name,messaging_consent\n" +
	"+14155550123,Ada,true\n" +
	"not a phone,Bob,true\n" +
	"+14155550124,Cy,false\n"

// startWorkers runs the env's job workers: import and webhook jobs.
func (e *env) startWorkers(t testing.TB) {
	t.Helper()
	if err := e.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
}

var importPath = regexp.MustCompile(`^/console/imports/(\d+)$`)

// TestImportsUpload: an admin uploads a CSV through the console; it goes to
// the import service of POST /imports (issue #7), the progress section ends
// "finished" with its counts and lists the rejected row, which is in the
// rejected-rows file named for the upload (D22), the
// import is listed, and the contacts' history says source import (D18).
func TestImportsUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.upload("/console/imports", [][2]string{{"on_duplicate", "skip"}, {"messaging_consent_default", ""}}, "people.csv", importCSV)
	m := importPath.FindStringSubmatch(p.Location)
	if p.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("upload: %d %q, want 303 to the import's page\n%s", p.Status, p.Location, p.Body)
	}
	p = w.get(p.Location)
	if p.Status != 200 || p.h1() != "Import of people.csv" || !strings.Contains(p.Body, "<progress") ||
		!strings.Contains(p.Body, `data-refresh="/console/imports/`+m[1]+`/progress"`) || !strings.Contains(p.Body, "data-pending") {
		t.Fatalf("import page before the job ran: %d %q\n%s", p.Status, p.h1(), p.Body)
	}
	e.startWorkers(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		p = w.get("/console/imports/" + m[1] + "/progress")
		if strings.Contains(p.Body, "<b>finished</b>") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("import not completed after 30 s:\n%s", p.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{`value="3"`, `max="3"`, "3 of 3 rows", "<td>2</td><td>0</td><td>0</td><td>1</td>",
		`href="/console/imports/` + m[1] + `/errors.csv"`, "Download the rejected rows (CSV)",
		"<td>3</td><td class=\"wrap\">not a phone, Bob, true</td>"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("finished progress lacks %s:\n%s", want, p.Body)
		}
	}
	if strings.Contains(p.Body, "data-pending") || strings.Contains(p.Body, "<html") {
		t.Errorf("a finished import's fragment still polls, or is a whole page:\n%s", p.Body)
	}
	p = w.get("/console/imports/" + m[1] + "/errors.csv")
	if p.Status != 200 || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/csv") ||
		p.Header.Get("Content-Disposition") != `attachment; filename="people-rejected-rows.csv"` ||
		!strings.HasPrefix(p.Body, "phone_number,first_name,messaging_consent,errors\nnot a phone,Bob,true,Invalid phone number [not a phone]") {
		t.Errorf("errors CSV: %d %s\n%s", p.Status, p.Header.Get("Content-Type"), p.Body)
	}
	p = w.get("/console/imports")
	if !strings.Contains(p.Body, `<a href="/console/imports/`+m[1]+`">people.csv</a>`) || !strings.Contains(p.Body, "Finished") {
		t.Errorf("the list lacks the import:\n%s", p.Body)
	}
	if got := e.Snapshot(t, "SELECT DISTINCT source FROM user_history WHERE brand_id = "+itoa(e.BrandA.ID)); got != "import|\n" {
		t.Errorf("history sources of the imported contacts = %q, want import", got)
	}
}

// TestImportsUploadBadInput: a file the import service refuses, or no
// file, shows the error on the Imports page and changes nothing (D3).
func TestImportsUploadBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	for name, c := range map[string]struct {
		fields  [][2]string
		file    string
		content string
		want    string
	}{
		"no file":        {nil, "", "", "Choose a CSV file to upload."},
		"unknown column": {nil, "x.csv", "phone_number,shoe_size\n+14155550123,9\n", "shoe_size"},
		"header only":    {nil, "x.csv", "phone_number\n", "has a header but no rows"},
		"bad option":     {[][2]string{{"on_duplicate", "merge"}}, "x.csv", "phone_number\n+14155550123\n", "on_duplicate"},
		"bad consent":    {[][2]string{{"messaging_consent_default", "maybe"}}, "x.csv", "phone_number\n+14155550123\n", "messaging_consent_default"},
	} {
		p := w.upload("/console/imports", c.fields, c.file, c.content)
		if p.Status != http.StatusUnprocessableEntity || p.h1() != "Imports" || !strings.Contains(p.Body, c.want) ||
			!strings.Contains(p.Body, `class="error"`) {
			t.Errorf("%s: %d %q, want 422 on the Imports page saying %q\n%s", name, p.Status, p.h1(), c.want, p.Body)
		}
	}
	// A form that is not multipart at all.
	if p := w.post("/console/imports", nil); p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "Choose a CSV file") {
		t.Errorf("urlencoded post: %d\n%s", p.Status, p.Body)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("a refused upload changed the database:\nbefore %s\nafter  %s", before, after)
	}
	for _, p := range []string{"/console/imports/999999", "/console/imports/x", "/console/imports/999999/errors.csv"} {
		if pg := w.get(p); pg.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, pg.Status)
		}
	}
}

// TestImportsSlowUpload: a signed-in admin's upload gets the API's upload
// time (--upload-timeout), not the short --body-timeout every body gets,
// as a signed POST /imports does (#15): a CSV that takes longer than the
// body timeout to arrive is imported.
func TestImportsSlowUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *app.Config) { c.BodyTimeout, c.UploadTimeout = 500*time.Millisecond, time.Minute })
	w := e.signedIn(t, "admin@a.example")
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, _ := mw.CreateFormFile("file", "slow.csv")
		fw.Write([]byte("phone_number,first_name\n+14155550123,Ada\n"))
		time.Sleep(1500 * time.Millisecond) // longer than the body timeout
		fw.Write([]byte("+14155550124,Bo\n"))
		mw.Close()
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", w.base+"/console/imports", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	p := w.do(req)
	if p.Status != http.StatusSeeOther || importPath.FindStringSubmatch(p.Location) == nil {
		t.Fatalf("slow upload: %d %q, want 303 to the import\n%s", p.Status, p.Location, p.Body)
	}
}

// TestImportsUploadTooLarge: a file over --max-import-size is refused
// with 413 on the Imports page, and nothing is kept.
func TestImportsUploadTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *app.Config) { c.MaxImportSize = 64 })
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	p := w.upload("/console/imports", nil, "big.csv", "phone_number,first_name\n"+strings.Repeat("+14155550123,Ada\n", 10))
	if p.Status != http.StatusRequestEntityTooLarge || p.h1() != "Imports" || !strings.Contains(p.Body, "at most 64 bytes") {
		t.Errorf("too large: %d %q\n%s", p.Status, p.h1(), p.Body)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("a refused upload changed the database:\nbefore %s\nafter  %s", before, after)
	}
}
