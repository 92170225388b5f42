package console

import (
	"cmp"
	"encoding/csv"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
)

// The Imports page (D19, issue #18): upload a CSV of contacts, watch its
// progress and download the rows it rejected. It uses the same import
// service as POST /imports (issue #7): the file is checked whole before
// anything is kept, then a durable job imports it in batches, recording
// history with source "import" (D18). Admins only.
func init() {
	Register(Page{
		Path: "imports", Title: "Imports", Nav: "Imports", Order: 60, Admin: true,
		Template: "imports.html", Get: importsPage, Post: importsUpload,
	})
	Register(Page{
		Path: "imports/{id}", Title: "Import", Admin: true,
		Template: "import.html", Get: importPage,
	})
	// The progress section alone, which static/console.js polls.
	Register(Page{
		Path: "imports/{id}/progress", Title: "Import", Admin: true,
		Template: "import.html", Get: importProgress,
	})
	Register(Page{
		Path: "imports/{id}/errors.csv", Title: "Import", Admin: true,
		Template: "import.html", Get: importErrorsCSV,
	})
}

// importListSize is how many past imports the page lists.
const importListSize = 20

// importsData is what imports.html sees.
type importsData struct {
	Imports []*parley.Import
	// Next is the cursor of the older imports; "" at the end.
	Next string
	// OnDuplicate and Consent are the options as sent, kept after an error.
	OnDuplicate, Consent string
}

func importsPage(c *Ctx) error {
	return c.renderImports(http.StatusOK, importsData{}, "")
}

func (c *Ctx) renderImports(status int, d importsData, errMsg string) error {
	list, next, err := c.console.Importer.ListImports(c, c.BrandID(), importListSize, c.R.URL.Query().Get("cursor"))
	if err != nil {
		return err
	}
	d.Imports, d.Next = list, next
	return c.RenderStatus(status, d, errMsg)
}

// importsUpload streams the posted file into the import service: a large
// file is never held in memory, and the service bounds its size.
func importsUpload(c *Ctx) error {
	var d importsData
	bad := func(err error) error {
		status, _ := statusOf(parley.ErrorCode(err))
		if status >= 500 {
			return err
		}
		return c.renderImports(status, d, parley.ErrorMessage(err))
	}
	// The server gives a body --body-timeout; a signed-in admin's file
	// gets the API's upload time, as a signed POST /imports does (#15).
	http.NewResponseController(c.W).SetReadDeadline(time.Now().Add(cmp.Or(c.console.UploadTimeout, 10*time.Minute)))
	if max := c.console.Importer.MaxSize; max > 0 {
		c.R.Body = http.MaxBytesReader(c.W, c.R.Body, max+1<<20) // the form's other fields
	}
	mr, err := c.R.MultipartReader()
	if err != nil {
		return bad(parley.Errorf(parley.EValidation, "Choose a CSV file to upload."))
	}
	// The form puts its options before the file, and browsers send the
	// fields in that order: the file is streamed once, as it comes.
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return bad(parley.Errorf(parley.EValidation, "Choose a CSV file to upload."))
		}
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return bad(parley.Errorf(parley.EPayloadTooLarge, "The file is too large: at most %d bytes.", c.console.Importer.MaxSize))
		}
		if err != nil {
			return bad(parley.Errorf(parley.EValidation, "The upload was cut short; try again."))
		}
		switch part.FormName() {
		case "on_duplicate", "messaging_consent_default":
			v, err := io.ReadAll(io.LimitReader(part, 1<<10))
			if err != nil {
				return bad(parley.Errorf(parley.EValidation, "The upload was cut short; try again."))
			}
			if part.FormName() == "on_duplicate" {
				d.OnDuplicate = string(v)
			} else {
				d.Consent = string(v)
			}
		case "file":
			if part.FileName() == "" {
				return bad(parley.Errorf(parley.EValidation, "Choose a CSV file to upload."))
			}
			o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
			imp, err := c.console.Importer.CreateImport(c, o, c.BrandID(), part.FileName(), part,
				parley.ImportOptions{OnDuplicate: d.OnDuplicate, MessagingConsentDefault: d.Consent})
			if errors.As(err, &mb) {
				err = parley.Errorf(parley.EPayloadTooLarge, "The file is too large: at most %d bytes.", c.console.Importer.MaxSize)
			}
			if err != nil {
				return bad(err)
			}
			return c.Redirect("imports/" + strconv.FormatInt(imp.ID, 10))
		}
		part.Close()
	}
}

// findImport reads the page's import, scoped to the operator's brand:
// another brand's id is "not found".
func (c *Ctx) findImport() (*parley.Import, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, parley.Errorf(parley.ENotFound, "There is no such import.")
	}
	return c.console.Importer.FindImport(c, c.BrandID(), id)
}

func importPage(c *Ctx) error {
	imp, err := c.findImport()
	if err != nil {
		return err
	}
	c.Title = "Import of " + imp.FileName
	return c.Render(zonedImport{imp, c.Zone()})
}

// zonedImport is an import with the brand's zone, for the progress
// fragment's times.
type zonedImport struct {
	*parley.Import
	Zone *time.Location
}

func importProgress(c *Ctx) error {
	imp, err := c.findImport()
	if err != nil {
		return err
	}
	return c.Fragment("progress", zonedImport{imp, c.Zone()})
}

// importErrorsCSV answers the rejected rows as GET /imports/{id}/errors
// does: line, field, type, msg, the free text formula-safe.
func importErrorsCSV(c *Ctx) error {
	imp, err := c.findImport()
	if err != nil {
		return err
	}
	h := c.W.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="import-`+strconv.FormatInt(imp.ID, 10)+`-errors.csv"`)
	cw := csv.NewWriter(c.W)
	cw.Write(parley.ImportErrorColumns)
	err = c.console.Importer.EachImportError(c, c.BrandID(), imp.ID, func(e *parley.ImportError) error {
		return cw.Write(e.Record())
	})
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if err != nil {
		// The status is sent: all that is left is to cut the answer short.
		c.console.Logger.ErrorContext(c, "console: import errors cut short", "import_id", imp.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}
