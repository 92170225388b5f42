package console

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
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
	// The column-mapping step (D22): static/imports.js sends the chosen
	// file's header and shows the answer, a menu per column.
	Register(Page{
		Path: "imports/columns", Title: "Imports", Admin: true,
		Template: "imports.html", Get: importColumns,
	})
	Register(Page{
		Path: "imports/template.csv", Title: "Imports", Admin: true,
		Template: "imports.html", Get: importTemplateCSV,
	})
}

// importListSize is how many past imports the page lists.
const importListSize = 20

// importsData is what imports.html sees.
type importsData struct {
	Imports []*parley.Import
	// Next is the cursor of the older imports; "" at the end.
	Next string
	// OnDuplicate, Consent and Country are the options as sent, kept
	// after an error; Country starts as the brand's default_country.
	OnDuplicate, Consent, Country string
	// Custom are the columns of the brand's custom data fields.
	Custom []string
}

// Countries are the default-country menu's choices.
func (d importsData) Countries() []country { return countryOptions(d.Country) }

func importsPage(c *Ctx) error {
	return c.renderImports(http.StatusOK, importsData{}, "")
}

func (c *Ctx) renderImports(status int, d importsData, errMsg string) error {
	list, next, err := c.console.Importer.ListImports(c, c.BrandID(), importListSize, c.R.URL.Query().Get("cursor"))
	if err != nil {
		return err
	}
	d.Imports, d.Next = list, next
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	for _, f := range fields {
		d.Custom = append(d.Custom, parley.CustomColumnPrefix+parley.CustomDataKey(f.FieldName))
	}
	if d.Country == "" {
		st, err := c.Service.BrandSettings(c, c.BrandID())
		if err != nil {
			return err
		}
		d.Country = st.DefaultCountry
	}
	return c.RenderStatus(status, d, errMsg)
}

// importsUpload takes the posted file and options into the import
// service. The file is spooled to a temporary file, so the form's fields
// (options, the column mapping) may come in any order; the service checks
// it whole and bounds its size.
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
	tooLarge := parley.Errorf(parley.EPayloadTooLarge, "The file is too large: at most %d bytes. Split it into smaller files.", c.console.Importer.MaxSize)
	cut := parley.Errorf(parley.EValidation, "The upload was cut short; try again.")
	mr, err := c.R.MultipartReader()
	if err != nil {
		return bad(parley.Errorf(parley.EValidation, "Choose a CSV file to upload."))
	}
	var (
		file          *os.File
		name          string
		mapCol, mapTo []string
	)
	defer func() {
		if file != nil {
			file.Close()
			os.Remove(file.Name())
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return bad(tooLarge)
		}
		if err != nil {
			return bad(cut)
		}
		switch field := part.FormName(); field {
		case "file":
			if file != nil || part.FileName() == "" {
				break
			}
			name = part.FileName()
			if file, err = os.CreateTemp("", "parley-console-import-*.csv"); err != nil {
				return err
			}
			if _, err := io.Copy(file, part); err != nil {
				if errors.As(err, &mb) {
					return bad(tooLarge)
				}
				return bad(cut)
			}
		case "on_duplicate", "messaging_consent_default", "default_country", "map_col", "map_to":
			b, err := io.ReadAll(io.LimitReader(part, 1<<10))
			if err != nil {
				return bad(cut)
			}
			v := string(b)
			switch field {
			case "on_duplicate":
				d.OnDuplicate = v
			case "messaging_consent_default":
				d.Consent = v
			case "default_country":
				d.Country = v
			case "map_col":
				mapCol = append(mapCol, v)
			default:
				mapTo = append(mapTo, v)
			}
		}
		part.Close()
	}
	if file == nil {
		return bad(parley.Errorf(parley.EValidation, "Choose a CSV file to upload."))
	}
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	opt := parley.ImportOptions{OnDuplicate: d.OnDuplicate, MessagingConsentDefault: d.Consent, DefaultCountry: d.Country}
	if len(mapCol) > 0 && len(mapCol) == len(mapTo) {
		m := make(map[string]string, len(mapCol))
		for i, col := range mapCol {
			m[col] = mapTo[i]
		}
		b, _ := json.Marshal(m)
		opt.Mapping = string(b)
	}
	o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
	imp, err := c.console.Importer.CreateImport(c, o, c.BrandID(), name, file, opt)
	if err != nil {
		return bad(importErrorText(err))
	}
	return c.Redirect("imports/" + strconv.FormatInt(imp.ID, 10))
}

// importErrorText puts a refused upload in the page's words: the mapping
// step names the columns, so "unknown columns" says to use it.
func importErrorText(err error) error {
	msg := parley.ErrorMessage(err)
	if parley.ErrorCode(err) == parley.EValidation && strings.Contains(msg, "unknown columns") {
		return parley.Errorf(parley.EValidation, "The file has columns Parley does not know (%s). Choose the file again and, under "+
			"\"Match your columns\", pick the contact field each column holds or \"Don't import\".", strings.TrimPrefix(strings.SplitN(msg, ". ", 2)[0], "file: unknown columns: "))
	}
	return err
}

// mappingRow is one column of the chosen file in the mapping step.
type mappingRow struct {
	Index  int
	Column string
	Guess  string
}

// mappingData is what the "mapping" fragment sees.
type mappingData struct {
	Rows    []mappingRow
	Targets []mappingTarget
	// Phone says whether a column was taken for the phone number.
	Phone bool
}

// mappingTarget is an option of a column's menu.
type mappingTarget struct{ Value, Label string }

// importColumns answers the mapping step for the header columns c=…: a
// menu per column, its contact field guessed from its name.
func importColumns(c *Ctx) error {
	cols := c.R.URL.Query()["c"]
	if len(cols) > 200 {
		cols = cols[:200]
	}
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	d := mappingData{Targets: []mappingTarget{{"", "Don't import"},
		{"phone_number", "Phone number"}, {"first_name", "First name"}, {"last_name", "Last name"},
		{"email_address", "Email"}, {"date_of_birth", "Date of birth"}, {"messaging_consent", "Consent to texts"},
		{"postal_code", "ZIP or postal code"}}}
	for _, f := range fields {
		d.Targets = append(d.Targets, mappingTarget{parley.CustomColumnPrefix + parley.CustomDataKey(f.FieldName), f.FieldName + " (custom field)"})
	}
	taken := map[string]bool{}
	for i, col := range cols {
		g := service.GuessColumn(col, fields)
		if taken[g] {
			g = "" // two columns cannot fill one field
		}
		taken[g] = g != ""
		d.Phone = d.Phone || g == "phone_number"
		d.Rows = append(d.Rows, mappingRow{Index: i, Column: strings.TrimSpace(col), Guess: g})
	}
	return c.Fragment("mapping", d)
}

// importTemplateCSV answers an empty contact file: the header, with a
// column per custom data field of the brand, and one example row.
func importTemplateCSV(c *Ctx) error {
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	header := slices.Clone(parley.ImportColumns)
	example := []string{"(212) 555-0100", "Ann", "Lee", "ann@example.com", "02/29/2000", "yes", "10001"}
	for _, f := range fields {
		header = append(header, parley.CustomColumnPrefix+parley.CustomDataKey(f.FieldName))
		v := ""
		if len(f.AvailableEnumValues) > 0 {
			v = f.AvailableEnumValues[0]
		}
		example = append(example, v)
	}
	h := c.W.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="contacts-template.csv"`)
	cw := csv.NewWriter(c.W)
	cw.Write(header)
	cw.Write(example)
	cw.Flush()
	return cw.Error()
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
	z, err := c.zonedImport(imp)
	if err != nil {
		return err
	}
	return c.Render(z)
}

// zonedImport is an import with the brand's zone, for the progress
// fragment's times, and its first rejected rows once it has ended.
type zonedImport struct {
	*parley.Import
	Zone     *time.Location
	Rejected []rejectedRow
	// More counts the rejected rows not listed.
	More int64
}

// rejectedRow is a rejected row as the page lists it.
type rejectedRow struct {
	Line   int64
	Cells  string
	Errors []string
}

// rejectedShown is how many rejected rows the page lists; the file has all.
const rejectedShown = 100

func (c *Ctx) zonedImport(imp *parley.Import) (zonedImport, error) {
	z := zonedImport{Import: imp, Zone: c.Zone()}
	if imp.Status != parley.ImportCompleted && imp.Status != parley.ImportFailed {
		return z, nil
	}
	err := c.console.Importer.EachImportError(c, c.BrandID(), imp.ID, func(e *parley.ImportError) error {
		if n := len(z.Rejected); n > 0 && z.Rejected[n-1].Line == e.Line {
			z.Rejected[n-1].Errors = append(z.Rejected[n-1].Errors, e.Msg)
			return nil
		}
		if len(z.Rejected) == rejectedShown {
			return errEnough
		}
		z.Rejected = append(z.Rejected, rejectedRow{Line: e.Line, Cells: strings.Join(e.Cells, ", "), Errors: []string{e.Msg}})
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return z, err
	}
	z.More = max(0, imp.Failed-int64(len(z.Rejected)))
	return z, nil
}

var errEnough = errors.New("console: enough rejected rows")

func importProgress(c *Ctx) error {
	imp, err := c.findImport()
	if err != nil {
		return err
	}
	z, err := c.zonedImport(imp)
	if err != nil {
		return err
	}
	return c.Fragment("progress", z)
}

// importErrorsCSV answers the rejected-rows file as GET /imports/{id}/errors
// does (D22), named for the uploaded file: its rows' cells as uploaded and
// an errors column, to fix and upload again.
func importErrorsCSV(c *Ctx) error {
	imp, err := c.findImport()
	if err != nil {
		return err
	}
	h := c.W.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+rejectedFileName(imp.FileName)+`"`)
	if err := c.console.Importer.WriteRejectedRows(c, c.BrandID(), imp.ID, c.W); err != nil {
		// The status is sent: all that is left is to cut the answer short.
		c.console.Logger.ErrorContext(c, "console: import errors cut short", "import_id", imp.ID, "err", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// rejectedFileName is "<file>-rejected-rows.csv" for the file's name, kept
// to characters any header and file system take.
func rejectedFileName(upload string) string {
	stem := strings.TrimSuffix(upload, ".csv")
	stem = strings.TrimSuffix(stem, ".CSV")
	stem = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || strings.ContainsRune(`"\/:*?<>|;`, r) {
			return '_'
		}
		return r
	}, stem)
	if stem == "" {
		stem = "import"
	}
	return stem + "-rejected-rows.csv"
}
