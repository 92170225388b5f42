package service

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"gocloud.dev/blob"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/csvimport"
	"github.com/parleyhq/parley/internal/jobs"
	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/internal/store"
)

// Import defaults (issue #7).
const (
	// DefaultMaxImportSize bounds an uploaded import file.
	DefaultMaxImportSize = 100 << 20
	// DefaultImportBatch is how many rows commit together: each batch is
	// one transaction holding its rows, their events and the import's
	// progress.
	DefaultImportBatch = 500
	// DefaultImportAnalyzeAfter is how many rows an import must create or
	// update before it refreshes the planner's statistics of the contacts
	// at its end (issue #34). Below it, whatever plan the stale statistics
	// give costs milliseconds over the rows the import added, while an
	// ANALYZE costs a sample of 30,000 rows on PostgreSQL (a few hundred
	// ms at 1M contacts) and the one writer on SQLite: the campaign
	// sender's analyzeAfter, for the same reason.
	DefaultImportAnalyzeAfter = 10000
)

// ImportEnqueuer queues an import's job in the transaction that records
// the import.
type ImportEnqueuer interface {
	EnqueueImport(ctx context.Context, tx *sql.Tx, brandID, importID int64) error
	// Wake makes this process's workers of the queues look for jobs now.
	Wake(queues []string)
}

// Importer implements parley.ImportService: CSV imports of users, run in
// batches by a durable job, and the matching export. It applies the rules
// of POST /users through the Service's own validation.
type Importer struct {
	s *Service
	q ImportEnqueuer
	// MaxSize bounds an import file in bytes; 0 means no bound.
	MaxSize int64
	// BatchSize is how many rows one transaction commits.
	BatchSize int
	// AnalyzeAfter is DefaultImportAnalyzeAfter; tests lower it.
	AnalyzeAfter int64
}

var _ parley.ImportService = (*Importer)(nil)

// NewImporter returns the importer of s's users; q queues import jobs.
func NewImporter(s *Service, q ImportEnqueuer) *Importer {
	return &Importer{s: s, q: q, MaxSize: DefaultMaxImportSize, BatchSize: DefaultImportBatch,
		AnalyzeAfter: DefaultImportAnalyzeAfter}
}

// column kinds of an import file.
const (
	colPhone = iota
	colFirstName
	colLastName
	colEmail
	colDateOfBirth
	colConsent
	colPostalCode
	colCustom
)

type column struct {
	name string // as in the header
	kind int
	key  string // custom_data key of a colCustom
}

// code is the error type POST /users answers for a bad value of the
// column's member (D3).
func (c column) code() string {
	switch c.kind {
	case colPhone:
		return parley.EInvalidPhoneNumber
	case colPostalCode:
		return parley.EInvalidPostalCode
	case colCustom:
		return parley.EInvalidCustomData
	}
	return parley.EValidation
}

// colIgnore is a column an import does not read: the rejected-rows file's
// errors column, or one the mapping leaves out (D22).
const colIgnore = -2

// resolveColumn is the kind and custom_data key of a Parley column name
// (any case); ok is false for a name that is none.
func resolveColumn(name string) (kind int, key string, ok bool) {
	lower := strings.ToLower(name)
	if k := slices.Index(parley.ImportColumns, lower); k >= 0 {
		return k, "", true
	}
	if rest, found := strings.CutPrefix(lower, parley.CustomColumnPrefix); found && rest != "" {
		return colCustom, parley.CustomDataKey(rest), true
	}
	return 0, "", false
}

// mapColumns reads a header, each column by its name or, when mapping
// names it, by the Parley column it maps to ("" for none). A column named
// errors is never read (D22). Problems with the header as a whole are
// errors; columns naming no field of the brand come back in unknown.
func mapColumns(header []string, fields map[string]*parley.CustomField, mapping map[string]string) (cols []column, unknown []string, err error) {
	seen := map[string]string{}
	hasPhone := false
	for name := range mapping {
		if !slices.Contains(header, name) {
			return nil, nil, parley.FieldError(parley.EValidation, "mapping",
				fmt.Sprintf("maps the column %q, which the file's header does not have", name))
		}
	}
	for i, name := range header {
		if name == "" {
			return nil, nil, fileInvalid(fmt.Sprintf("column %d of the header has no name", i+1))
		}
		c := column{name: name, kind: colIgnore}
		target, mapped := mapping[name]
		if !mapped {
			target = name
		}
		if target == "" || (!mapped && strings.EqualFold(name, parley.ErrorsColumn)) {
			cols = append(cols, c)
			continue
		}
		kind, key, ok := resolveColumn(target)
		if mapped && (!ok || (kind == colCustom && fields[key] == nil)) {
			return nil, nil, parley.FieldError(parley.EValidation, "mapping",
				fmt.Sprintf("maps the column %q to %q, which is not a contact field of the brand", name, target))
		}
		if !ok {
			unknown = append(unknown, name)
			cols = append(cols, c)
			continue
		}
		c.kind, c.key = kind, key
		if kind == colCustom && fields[key] == nil {
			unknown = append(unknown, name)
		}
		id := strconv.Itoa(c.kind) + c.key
		if prev, dup := seen[id]; dup {
			return nil, nil, fileInvalid(fmt.Sprintf("columns %q and %q are the same column", prev, name))
		}
		seen[id] = name
		hasPhone = hasPhone || c.kind == colPhone
		cols = append(cols, c)
	}
	if !hasPhone && len(unknown) == 0 {
		return nil, nil, fileInvalid("the header has no phone_number column; it is required")
	}
	return cols, unknown, nil
}

// unknownColumns is the error of a header with columns the brand has no
// use for: it names them and what is known.
func unknownColumns(unknown []string, fields map[string]*parley.CustomField) error {
	known := slices.Clone(parley.ImportColumns)
	custom := make([]string, 0, len(fields))
	for key := range fields {
		custom = append(custom, parley.CustomColumnPrefix+key)
	}
	slices.Sort(custom)
	msg := "unknown columns: " + strings.Join(unknown, ", ") + ". Known columns: " + strings.Join(known, ", ")
	if len(custom) > 0 {
		msg += ", and for the brand's custom data fields " + strings.Join(custom, ", ")
	} else {
		msg += " (the brand has no custom data fields for custom_<field> columns)"
	}
	return fileInvalid(msg)
}

func fileInvalid(rule string) *parley.Error {
	return parley.FieldError(parley.EValidation, "file", rule)
}

// parseConsent reads a messaging_consent cell; ok is false for anything
// else than true/false/yes/no/1/0 in any case.
func parseConsent(v string) (value bool, ok bool) {
	switch strings.ToLower(v) {
	case "true", "yes", "1":
		return true, true
	case "false", "no", "0":
		return false, true
	}
	return false, false
}

func parseImportOptions(opt parley.ImportOptions) (onDup string, consent *bool, mapping map[string]string, err error) {
	switch strings.ToLower(opt.OnDuplicate) {
	case "", parley.OnDuplicateSkip:
		onDup = parley.OnDuplicateSkip
	case parley.OnDuplicateUpdate:
		onDup = parley.OnDuplicateUpdate
	default:
		return "", nil, nil, invalid("on_duplicate", "must be skip or update")
	}
	if v := strings.TrimSpace(opt.MessagingConsentDefault); v != "" {
		c, ok := parseConsent(v)
		if !ok {
			return "", nil, nil, invalid("messaging_consent_default", "must be true, false, yes, no, 1, 0 or empty")
		}
		consent = &c
	}
	if m := strings.TrimSpace(opt.Mapping); m != "" {
		if err := json.Unmarshal([]byte(m), &mapping); err != nil || mapping == nil {
			return "", nil, nil, invalid("mapping", `must be a JSON object from the file's column names to contact fields ("" for a column not imported), such as {"Mobile": "phone_number", "Notes": ""}`)
		}
	}
	return onDup, consent, mapping, nil
}

// CreateImport implements parley.ImportService.
func (im *Importer) CreateImport(ctx context.Context, o parley.Origin, brandID int64, fileName string, r io.Reader, opt parley.ImportOptions) (*parley.Import, error) {
	rec, err := im.storeImport(ctx, brandID, fileName, r, opt)
	if err != nil {
		return nil, err
	}
	var out parley.Import
	err = im.s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		if err := tx.InsertImport(ctx, rec); err != nil {
			return err
		}
		out = rec.Import
		tx.Answer(&out)
		tx.AfterCommit(func() { im.q.Wake([]string{jobs.QueueImports}) })
		return im.q.EnqueueImport(ctx, tx.SQL(), brandID, rec.ID)
	})
	if err != nil {
		if !store.CommitUncertain(err) { // else kept, as for an upload
			im.s.blob.Delete(context.WithoutCancel(ctx), rec.BlobKey)
		}
		return nil, err
	}
	return &out, nil
}

// ImportLocal records an import of r like CreateImport but queues no job:
// the caller runs it with RunImport (the CLI, which shows its progress).
func (im *Importer) ImportLocal(ctx context.Context, brandID int64, fileName string, r io.Reader, opt parley.ImportOptions) (*parley.Import, error) {
	rec, err := im.storeImport(ctx, brandID, fileName, r, opt)
	if err != nil {
		return nil, err
	}
	err = im.s.db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertImport(ctx, rec) })
	if err != nil {
		im.s.blob.Delete(context.WithoutCancel(ctx), rec.BlobKey)
		return nil, err
	}
	out := rec.Import
	return &out, nil
}

// storeImport checks the whole file while streaming it to the blob store,
// so a file that cannot be imported is refused before anything is kept,
// and returns the import to record.
func (im *Importer) storeImport(ctx context.Context, brandID int64, fileName string, r io.Reader, opt parley.ImportOptions) (*store.ImportRecord, error) {
	onDup, consent, mapping, err := parseImportOptions(opt)
	if err != nil {
		return nil, err
	}
	country, err := im.importCountry(ctx, brandID, opt.DefaultCountry)
	if err != nil {
		return nil, err
	}
	if mapping == nil {
		mapping = map[string]string{} // every column by its name
	}
	fields, err := im.s.customFields(ctx, brandID)
	if err != nil {
		return nil, err
	}
	rec := &store.ImportRecord{Import: parley.Import{BrandID: brandID, Status: parley.ImportQueued,
		FileName: SanitizeFileName(fileName), OnDuplicate: onDup, MessagingConsentDefault: consent,
		DefaultCountry: country, Mapping: mapping}}
	rec.BlobKey = "imports/" + strconv.FormatInt(brandID, 10) + "/" + uuid.NewString() + ".csv"

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := im.s.blob.NewWriter(wctx, rec.BlobKey, &blob.WriterOptions{ContentType: "text/csv; charset=utf-8"})
	if err != nil {
		return nil, fmt.Errorf("service: blob writer: %w", err)
	}
	src := &sourceReader{r: r}
	lim := &limitReader{r: src, left: im.MaxSize, limited: im.MaxSize > 0}
	h, rows, err := scanImportFile(io.TeeReader(lim, w), fields, mapping)
	switch {
	case src.err != nil:
		err = unreadable(src.err)
	case lim.over:
		err = parley.Errorf(parley.EPayloadTooLarge, "file: at most %d bytes", im.MaxSize)
	}
	if err != nil {
		cancel() // a cancelled writer discards what it wrote
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("service: blob write: %w", err)
	}
	rec.Delimiter, rec.Columns, rec.TotalRows = string(h.Comma), h.Columns, rows
	rec.NextOffset, rec.NextLine = h.DataOffset, h.DataLine
	return rec, nil
}

// scanImportFile reads a whole file as the import will, so that what is
// wrong with the file as a whole is known at once, and counts its rows.
func scanImportFile(r io.Reader, fields map[string]*parley.CustomField, mapping map[string]string) (*csvimport.Header, int64, error) {
	h, rd, err := csvimport.ReadHeader(r)
	if err != nil {
		return nil, 0, err
	}
	if _, unknown, err := mapColumns(h.Columns, fields, mapping); err != nil {
		return nil, 0, err
	} else if len(unknown) > 0 {
		return nil, 0, unknownColumns(unknown, fields)
	}
	var rows int64
	for {
		_, _, err := rd.Read()
		var re *csvimport.RowError
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.As(err, &re) {
			return nil, 0, err
		}
		rows++
	}
	if rows == 0 {
		return nil, 0, fileInvalid("has a header but no rows of users")
	}
	return h, rows, nil
}

// limitReader fails once more than left bytes have come through.
type limitReader struct {
	r       io.Reader
	left    int64
	limited bool
	over    bool
}

var errTooLarge = errors.New("import file over the size limit")

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if l.limited {
		if l.left -= int64(n); l.left < 0 {
			l.over = true
			return 0, errTooLarge
		}
	}
	return n, err
}

// FindImport implements parley.ImportService.
func (im *Importer) FindImport(ctx context.Context, brandID, id int64) (*parley.Import, error) {
	r, err := im.s.db.FindImport(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, importNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return &r.Import, nil
}

func importNotFound(id int64) *parley.Error {
	return parley.Errorf(parley.ENotFound, "Import with ID [%d] not found.", id)
}

// ListImports implements parley.ImportService.
func (im *Importer) ListImports(ctx context.Context, brandID int64, limit int, cursor string) ([]*parley.Import, string, error) {
	limit, before, err := pageArgs(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	recs, err := im.s.db.ListImports(ctx, brandID, before, limit+1)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(recs) > limit {
		recs = recs[:limit]
		next = encodeCursor(recs[len(recs)-1].ID)
	}
	out := make([]*parley.Import, len(recs))
	for i, r := range recs {
		out[i] = &r.Import
	}
	return out, next, nil
}

// EachImportError implements parley.ImportService.
func (im *Importer) EachImportError(ctx context.Context, brandID, id int64, fn func(*parley.ImportError) error) error {
	if _, err := im.FindImport(ctx, brandID, id); err != nil {
		return err
	}
	return im.s.db.EachImportError(ctx, brandID, id, fn)
}

// importCountry is the default country of an import: the one sent, else
// the brand's default_country (D22).
func (im *Importer) importCountry(ctx context.Context, brandID int64, sent string) (string, error) {
	if c := strings.ToUpper(strings.TrimSpace(sent)); c != "" {
		if !phone.Region(c) {
			return "", invalid("default_country", "must be a two-letter country code (ISO 3166-1 alpha-2), such as US, CA or GB")
		}
		return c, nil
	}
	b, err := im.s.db.BrandIdentity(ctx, brandID)
	if errors.Is(err, store.ErrNotFound) {
		return "", brandNotFound(brandID)
	}
	if err != nil {
		return "", err
	}
	return cmp.Or(b.DefaultCountry, parley.DefaultCountry), nil
}
