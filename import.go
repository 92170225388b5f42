package parley

import (
	"context"
	"io"
)

// Import statuses: queued → running → completed | failed.
const (
	ImportQueued    = "queued"
	ImportRunning   = "running"
	ImportCompleted = "completed"
	ImportFailed    = "failed"
)

// What an import does with a row whose phone number belongs to a user the
// brand already has.
const (
	OnDuplicateSkip   = "skip"   // leave the user as it is (the default)
	OnDuplicateUpdate = "update" // merge the row into it, as POST /users/{id} would
)

// The columns of an import file besides custom data. A custom data field is
// the column CustomColumnPrefix + its custom_data key (spec: custom_<field_name>).
var ImportColumns = []string{"phone_number", "first_name", "last_name", "email_address",
	"date_of_birth", "messaging_consent", "postal_code"}

// ErrorsColumn is the column of a rejected-rows file that lists a row's
// errors (D22): an import ignores a column of this name, so the file can
// be fixed and uploaded again as it is.
const ErrorsColumn = "errors"

// CustomColumnPrefix starts the column of a custom data field.
const CustomColumnPrefix = "custom_"

// ListSeparator separates the items of a LIST field in a cell: a|b|c.
const ListSeparator = "|"

// ImportChannel is the channel every imported user enters from (D5).
const ImportChannel = "FILE"

// Import is a bulk import of users from a CSV file. It runs as a durable
// job; the counters move as its batches commit.
type Import struct {
	ID          int64  `json:"id"`
	BrandID     int64  `json:"-"`
	Status      string `json:"status"`
	FileName    string `json:"file_name"`
	OnDuplicate string `json:"on_duplicate"`
	// MessagingConsentDefault is the consent of a created user whose
	// messaging_consent cell is empty; null leaves it null.
	MessagingConsentDefault *bool `json:"messaging_consent_default"`
	// DefaultCountry is the country of phone numbers written without "+"
	// (D22), an ISO 3166-1 alpha-2 code.
	DefaultCountry string `json:"default_country"`
	// Mapping maps columns of the file to Parley's columns ("" for a column
	// not imported); empty reads every column by its name (D22).
	Mapping map[string]string `json:"mapping"`
	// TotalRows counts the rows after the header, known when the file is
	// accepted; ProcessedRows = Created + Updated + Skipped + Failed.
	TotalRows     int64 `json:"total_rows"`
	ProcessedRows int64 `json:"processed_rows"`
	Created       int64 `json:"created"`
	Updated       int64 `json:"updated"`
	Skipped       int64 `json:"skipped"`
	Failed        int64 `json:"failed"`
	// Error says why an import failed as a whole; null otherwise.
	Error         *string `json:"error"`
	DateCreated   Time    `json:"date_created"`
	DateCompleted *Time   `json:"date_completed"`
}

// ImportOptions are the form fields of POST /imports, as sent.
type ImportOptions struct {
	// OnDuplicate is OnDuplicateSkip (also when empty) or OnDuplicateUpdate.
	OnDuplicate string
	// MessagingConsentDefault is true, false, yes, no, 1, 0 or empty (none).
	MessagingConsentDefault string
	// DefaultCountry is the country of national phone numbers (D22); empty
	// takes the brand's default_country setting.
	DefaultCountry string
	// Mapping, as JSON, maps the file's columns to Parley's (D22); empty
	// reads every column by its name.
	Mapping string
}

// ImportError is one rejected row of an import.
type ImportError struct {
	Line  int64  // line of the file where the row starts; the header is line 1
	Field string // the column at fault, "" for the whole row
	Type  string // the error code POST /users would answer
	Msg   string
	// Cells are the row's cells as uploaded (D22); nil for a row that is
	// not valid CSV.
	Cells []string
}

// ImportService imports a brand's users from CSV files and exports them in
// the same format. Every method is scoped to brandID; another brand's
// import answers ENotFound.
type ImportService interface {
	// CreateImport checks the file (a UTF-8 CSV with a header naming known
	// columns and at least one row), stores it and queues its import.
	// EValidation, EUnsupportedMediaType (not CSV text), EPayloadTooLarge.
	CreateImport(ctx context.Context, o Origin, brandID int64, fileName string, r io.Reader, opt ImportOptions) (*Import, error)
	// FindImport returns ENotFound for a missing import.
	FindImport(ctx context.Context, brandID, id int64) (*Import, error)
	// ListImports returns one page, newest first, and the next cursor ("" at
	// the end); EValidation for a bad limit or cursor.
	ListImports(ctx context.Context, brandID int64, limit int, cursor string) ([]*Import, string, error)
	// EachImportError calls fn with every rejected row, in file order;
	// ENotFound for a missing import.
	EachImportError(ctx context.Context, brandID, id int64, fn func(*ImportError) error) error
	// WriteRejectedRows writes the rejected-rows file (D22) to w: the
	// uploaded header and an errors column, then each rejected row's
	// original cells and every error of the row. ENotFound for a missing
	// import.
	WriteRejectedRows(ctx context.Context, brandID, id int64, w io.Writer) error
	// ExportUsers writes the brand's live users to w as CSV in the import
	// format, formula-safe, and returns how many it wrote. It streams:
	// memory does not grow with the brand. EValidation for a filter it
	// cannot apply, before anything is written.
	ExportUsers(ctx context.Context, brandID int64, w io.Writer, f ExportFilter) (int64, error)
}

// ExportFilter selects the users an export writes; the zero value selects
// every live user.
type ExportFilter struct {
	// SegmentID keeps the members of one segment. Not supported yet:
	// segments do not select contacts in this version (EValidation).
	SegmentID int64
	// Contacts keeps the contacts a console list filter selects.
	Contacts ContactFilter
}
