package service

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/csvimport"
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
)

// ImportEnqueuer queues an import's job in the transaction that records
// the import.
type ImportEnqueuer interface {
	EnqueueImport(ctx context.Context, tx *sql.Tx, brandID, importID int64) error
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
}

var _ parley.ImportService = (*Importer)(nil)

// NewImporter returns the importer of s's users; q queues import jobs.
func NewImporter(s *Service, q ImportEnqueuer) *Importer {
	return &Importer{s: s, q: q, MaxSize: DefaultMaxImportSize, BatchSize: DefaultImportBatch}
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

// mapColumns reads a header. Problems with the header as a whole are
// errors; columns naming no field of the brand come back in unknown.
func mapColumns(header []string, fields map[string]*parley.CustomField) (cols []column, unknown []string, err error) {
	seen := map[string]string{}
	hasPhone := false
	for i, name := range header {
		if name == "" {
			return nil, nil, fileInvalid(fmt.Sprintf("column %d of the header has no name", i+1))
		}
		c := column{name: name, kind: -1}
		lower := strings.ToLower(name)
		if k := slices.Index(parley.ImportColumns, lower); k >= 0 {
			c.kind = k
		} else if rest, ok := strings.CutPrefix(lower, parley.CustomColumnPrefix); ok && rest != "" {
			c.kind, c.key = colCustom, parley.CustomDataKey(rest)
			if fields[c.key] == nil {
				unknown = append(unknown, name)
			}
		} else {
			unknown = append(unknown, name)
			continue
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

func parseImportOptions(opt parley.ImportOptions) (onDup string, consent *bool, err error) {
	switch strings.ToLower(opt.OnDuplicate) {
	case "", parley.OnDuplicateSkip:
		onDup = parley.OnDuplicateSkip
	case parley.OnDuplicateUpdate:
		onDup = parley.OnDuplicateUpdate
	default:
		return "", nil, invalid("on_duplicate", "must be skip or update")
	}
	if v := strings.TrimSpace(opt.MessagingConsentDefault); v != "" {
		c, ok := parseConsent(v)
		if !ok {
			return "", nil, invalid("messaging_consent_default", "must be true, false, yes, no, 1, 0 or empty")
		}
		consent = &c
	}
	return onDup, consent, nil
}

// CreateImport implements parley.ImportService.
func (im *Importer) CreateImport(ctx context.Context, brandID int64, fileName string, r io.Reader, opt parley.ImportOptions) (*parley.Import, error) {
	rec, err := im.storeImport(ctx, brandID, fileName, r, opt)
	if err != nil {
		return nil, err
	}
	var out parley.Import
	err = im.s.db.WithTx(ctx, func(tx *store.Tx) error {
		if err := tx.InsertImport(ctx, rec); err != nil {
			return err
		}
		out = rec.Import
		tx.Answer(&out)
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
	onDup, consent, err := parseImportOptions(opt)
	if err != nil {
		return nil, err
	}
	fields, err := im.s.customFields(ctx, brandID)
	if err != nil {
		return nil, err
	}
	rec := &store.ImportRecord{Import: parley.Import{BrandID: brandID, Status: parley.ImportQueued,
		FileName: SanitizeFileName(fileName), OnDuplicate: onDup, MessagingConsentDefault: consent}}
	rec.BlobKey = "imports/" + strconv.FormatInt(brandID, 10) + "/" + uuid.NewString() + ".csv"

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := im.s.blob.NewWriter(wctx, rec.BlobKey, &blob.WriterOptions{ContentType: "text/csv; charset=utf-8"})
	if err != nil {
		return nil, fmt.Errorf("service: blob writer: %w", err)
	}
	src := &sourceReader{r: r}
	lim := &limitReader{r: src, left: im.MaxSize, limited: im.MaxSize > 0}
	h, rows, err := scanImportFile(io.TeeReader(lim, w), fields)
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
func scanImportFile(r io.Reader, fields map[string]*parley.CustomField) (*csvimport.Header, int64, error) {
	h, rd, err := csvimport.ReadHeader(r)
	if err != nil {
		return nil, 0, err
	}
	if _, unknown, err := mapColumns(h.Columns, fields); err != nil {
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

// RunOptions shape one run of an import.
type RunOptions struct {
	// Until ends the run after the batch that passes it, the import not yet
	// done; zero runs to the end.
	Until time.Time
	// Progress, when set, sees the import after each committed batch.
	Progress func(*parley.Import)
}

// errLostImport says another run of the import committed past this one.
var errLostImport = errors.New("service: the import moved on under another run")

// RunImport works an import from its last committed batch. Each batch of
// rows commits in one transaction with its events, its rejected rows and
// the import's progress, so a run that stops anywhere (a crash, ctx
// ending) leaves the import at a batch boundary, and the next run goes on
// from there: no row is imported twice. It reports whether the import has
// ended.
func (im *Importer) RunImport(ctx context.Context, brandID, id int64, opt RunOptions) (done bool, err error) {
	rec, err := im.s.db.FindImport(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if rec.Status == parley.ImportCompleted || rec.Status == parley.ImportFailed {
		return true, nil
	}
	fields, err := im.s.customFields(ctx, brandID)
	if err != nil {
		return false, err
	}
	// A field deleted since the upload leaves its column mapped: its cells
	// then fail like an unknown custom_data key of POST /users.
	cols, unknown, err := mapColumns(rec.Columns, fields)
	if err == nil && len(unknown) > 0 {
		for _, name := range unknown {
			if !strings.HasPrefix(strings.ToLower(name), parley.CustomColumnPrefix) {
				err = unknownColumns(unknown, fields)
			}
		}
	}
	if err != nil {
		return true, im.fail(ctx, rec, err)
	}
	rc, err := im.s.blob.NewRangeReader(ctx, rec.BlobKey, rec.NextOffset, -1, nil)
	if err != nil {
		// Another run may have just ended the import and removed its file.
		if gcerrors.Code(err) == gcerrors.NotFound {
			if cur, ferr := im.s.db.FindImport(ctx, brandID, id); ferr == nil &&
				(cur.Status == parley.ImportCompleted || cur.Status == parley.ImportFailed) {
				return true, nil
			}
		}
		return false, fmt.Errorf("service: open import file: %w", err)
	}
	defer rc.Close()
	comma, _ := utf8First(rec.Delimiter)
	run := &importRun{im: im, rec: rec, cols: cols, fields: fields, rd: csvimport.NewReader(rc, comma, rec.NextOffset, rec.NextLine)}
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		batch, eof, err := run.read(ctx)
		var pe *parley.Error
		if errors.As(err, &pe) {
			// The stored file no longer reads as it did when it was accepted.
			return true, im.fail(ctx, rec, err)
		}
		if err != nil {
			return false, err
		}
		if err := run.commit(ctx, batch, eof); errors.Is(err, errLostImport) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if opt.Progress != nil {
			out := rec.Import
			opt.Progress(&out)
		}
		if eof {
			im.s.blob.Delete(context.WithoutCancel(ctx), rec.BlobKey)
			return true, nil
		}
		if !opt.Until.IsZero() && time.Now().After(opt.Until) {
			return false, nil
		}
	}
}

func utf8First(s string) (rune, bool) {
	for _, r := range s {
		return r, true
	}
	return ',', false
}

// Work runs an import for the job queue until the given time. On the job's
// last attempt an error fails the import, so it never stays running.
func (im *Importer) Work(ctx context.Context, brandID, id int64, until time.Time, final bool) (bool, error) {
	done, err := im.RunImport(ctx, brandID, id, RunOptions{Until: until})
	// A node that is stopping will run it again; anything else on the last
	// attempt, its own timeout included, ends it.
	if err != nil && final && !errors.Is(ctx.Err(), context.Canceled) {
		im.s.logger.Error("import failed", "brand_id", brandID, "import_id", id, "error", err)
		if rec, ferr := im.s.db.FindImport(ctx, brandID, id); ferr == nil {
			im.fail(ctx, rec, parley.Errorf(parley.EInternal, "The import could not be completed; the rows committed so far stay imported."))
		}
	}
	return done, err
}

// FailImport ends an unfinished import as failed with the reason (the CLI
// does when it is interrupted).
func (im *Importer) FailImport(ctx context.Context, brandID, id int64, reason string) error {
	rec, err := im.s.db.FindImport(ctx, brandID, id)
	if err != nil {
		return err
	}
	return im.fail(ctx, rec, errors.New(reason))
}

// fail ends the import as failed; the reason is shown to the caller, so it
// is an *parley.Error's message or the caller's own text.
func (im *Importer) fail(ctx context.Context, rec *store.ImportRecord, reason error) error {
	ctx = context.WithoutCancel(ctx)
	msg := reason.Error()
	var pe *parley.Error
	if errors.As(reason, &pe) {
		msg = pe.Message
		if pe.Field != "" && !strings.HasPrefix(msg, pe.Field+":") {
			msg = pe.Field + ": " + msg
		}
	}
	err := im.s.db.WithTx(ctx, func(tx *store.Tx) error {
		ok, err := tx.FailImport(ctx, rec.BrandID, rec.ID, msg)
		if err != nil || !ok {
			return err
		}
		return tx.DeleteImportPhones(ctx, rec.BrandID, rec.ID)
	})
	if err == nil {
		im.s.blob.Delete(ctx, rec.BlobKey)
	}
	return err
}

// importRun is one run of an import.
type importRun struct {
	im     *Importer
	rec    *store.ImportRecord
	cols   []column
	fields map[string]*parley.CustomField
	rd     *csvimport.Reader
}

// row is a row read and checked, not yet written.
type row struct {
	line int64
	err  *parley.ImportError
	// user is the user the row creates; fields and upd what it changes in
	// an existing user (on_duplicate=update).
	user        *parley.User
	fields      parley.UserFields
	upd         map[string]json.RawMessage
	consentCell bool // messaging_consent had a value
}

// read reads and checks up to a batch of rows; eof says the file ended.
func (run *importRun) read(ctx context.Context) ([]*row, bool, error) {
	n := max(1, run.im.BatchSize)
	batch := make([]*row, 0, n)
	for len(batch) < n {
		rec, line, err := run.rd.Read()
		var re *csvimport.RowError
		switch {
		case errors.Is(err, io.EOF):
			return batch, true, nil
		case errors.As(err, &re):
			batch = append(batch, &row{line: re.Line, err: &parley.ImportError{Line: re.Line, Type: parley.EValidation, Msg: re.Msg}})
			continue
		case err != nil:
			return nil, false, err
		}
		r, err := run.check(ctx, rec, line)
		if err != nil {
			return nil, false, err
		}
		batch = append(batch, r)
	}
	return batch, false, nil
}

// check applies POST /users's validation to a row. Only an internal
// failure is an error; a bad row comes back with its ImportError.
func (run *importRun) check(ctx context.Context, rec []string, line int64) (*row, error) {
	r := &row{line: line}
	if len(rec) != len(run.cols) {
		r.err = &parley.ImportError{Line: line, Type: parley.EValidation,
			Msg: fmt.Sprintf("the row has %d cells; the header has %d columns", len(rec), len(run.cols))}
		return r, nil
	}
	in := parley.UserCreate{PhoneNumber: parley.Null[string](), Channel: parley.Some(parley.ImportChannel)}
	var custom []byte
	for i, c := range run.cols {
		v := strings.TrimSpace(rec[i])
		if v == "" {
			continue // an empty cell is no value: null on create, untouched on update
		}
		switch c.kind {
		case colPhone:
			in.PhoneNumber = parley.Some(v)
		case colFirstName:
			in.FirstName = parley.Some(v)
		case colLastName:
			in.LastName = parley.Some(v)
		case colEmail:
			in.EmailAddress = parley.Some(v)
		case colDateOfBirth:
			in.DateOfBirth = parley.Some(v)
		case colPostalCode:
			in.PostalCode = parley.Some(v)
		case colConsent:
			consent, ok := parseConsent(v)
			if !ok {
				r.err = &parley.ImportError{Line: line, Field: c.name, Type: parley.EValidation,
					Msg: c.name + ": must be true, false, yes, no, 1, 0 or empty"}
				return r, nil
			}
			in.MessagingConsent = parley.Some(consent)
			r.consentCell = true
		case colCustom:
			if custom == nil {
				custom = append(custom, '{')
			} else {
				custom = append(custom, ',')
			}
			key, _ := json.Marshal(c.key)
			custom = append(append(custom, key...), ':')
			custom = appendCell(custom, run.fields[c.key], v)
		}
	}
	u, err := run.im.s.NewUser(ctx, run.rec.BrandID, in)
	if err == nil && custom != nil {
		custom = append(custom, '}')
		if r.upd, err = parseCustomData(custom, run.fields); err == nil {
			u.CustomData, err = mergeCustomData(nil, r.upd, nil)
		}
	}
	if err != nil {
		r.err, err = run.rowError(line, err)
		return r, err
	}
	r.user, r.fields = u, in.UserFields
	return r, nil
}

// rowError turns a validation error into the row's report, with the column
// it names; any other error is an internal failure and is returned.
func (run *importRun) rowError(line int64, err error) (*parley.ImportError, error) {
	var pe *parley.Error
	if !errors.As(err, &pe) {
		return nil, err
	}
	e := &parley.ImportError{Line: line, Field: pe.Field, Type: pe.Code, Msg: pe.Message}
	// Name the column as the file does: custom_data.tier is the column
	// custom_tier; custom_data as a whole (its size) is no one column.
	key, custom := strings.CutPrefix(pe.Field, "custom_data.")
	for _, c := range run.cols {
		if (custom && c.kind == colCustom && c.key == key) || (!custom && c.kind != colCustom && strings.EqualFold(c.name, pe.Field)) {
			e.Field = c.name
			if rest, ok := strings.CutPrefix(pe.Message, pe.Field+":"); ok {
				e.Msg = c.name + ":" + rest
			}
		}
	}
	if pe.Field == "custom_data" {
		e.Field = ""
	}
	return e, nil
}

// appendCell appends a cell as the JSON value POST /users would take for
// the field: numbers for INTEGER and FLOAT, 1/0 as numbers for BOOLEAN, the
// items of a|b|c for LIST, text otherwise. Text that is not what the field
// wants stays text, so the field's validation reports it.
func appendCell(b []byte, f *parley.CustomField, v string) []byte {
	if f == nil || f.CustomDataType != parley.CustomList {
		typ := 0
		if f != nil {
			typ = f.CustomDataType
		}
		return appendScalar(b, typ, v)
	}
	b = append(b, '[')
	for i, item := range strings.Split(v, parley.ListSeparator) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendScalar(b, f.Subtype, strings.TrimSpace(item))
	}
	return append(b, ']')
}

func appendScalar(b []byte, typ int, v string) []byte {
	switch typ {
	case parley.CustomInteger, parley.CustomFloat:
		if isJSONNumber(v) {
			return append(b, v...)
		}
	case parley.CustomBoolean:
		if v == "1" || v == "0" {
			return append(b, v...)
		}
	}
	s, _ := json.Marshal(v)
	return append(b, s...)
}

func isJSONNumber(v string) bool {
	return v != "" && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) && json.Valid([]byte(v))
}

// outcome is what a row did in one attempt at committing its batch.
type outcome int

const (
	outFailed outcome = iota
	outCreated
	outUpdated
	outSkipped
)

// commit writes a batch, its events, its rejected rows and the import's
// progress in one transaction. It leaves the rows untouched, so a
// transaction that is retried starts over.
func (run *importRun) commit(ctx context.Context, batch []*row, eof bool) error {
	s, rec := run.im.s, run.rec
	brandID := rec.BrandID
	update := rec.OnDuplicate == parley.OnDuplicateUpdate
	next := *rec
	err := s.db.WithTx(ctx, func(tx *store.Tx) error {
		next = *rec
		ok, err := tx.ClaimImportBatch(ctx, brandID, rec.ID, rec.NextOffset)
		if err != nil {
			return err
		}
		if !ok {
			return errLostImport
		}
		// The first row of the file with a number has it; later rows with
		// it are reported, whether in this batch or after an earlier one.
		first := map[string]int64{}
		var phones []string
		var lines []int64
		for _, r := range batch {
			if r.err != nil {
				continue
			}
			if _, dup := first[r.user.PhoneNumber]; !dup {
				first[r.user.PhoneNumber] = r.line
				phones, lines = append(phones, r.user.PhoneNumber), append(lines, r.line)
			}
		}
		taken, err := tx.ClaimImportPhones(ctx, brandID, rec.ID, phones, lines)
		if err != nil {
			return err
		}
		maps.Copy(first, taken)
		errs := make([]*parley.ImportError, len(batch))
		for i, r := range batch {
			switch {
			case r.err != nil:
				errs[i] = r.err
			case first[r.user.PhoneNumber] != r.line:
				errs[i] = duplicateInFile(r, first[r.user.PhoneNumber])
			}
		}

		// Every number is offered as a new user, in one statement: the
		// brand's live-number index refuses those it has, and only they
		// are looked up. A file of new users so never searches the
		// brand's users, whose planner statistics lag while an import
		// grows them.
		now := parley.Time{Time: tx.Now()}
		created := make([]*parley.User, len(batch))
		var creates []*parley.User
		for i, r := range batch {
			if errs[i] != nil {
				continue
			}
			u := *r.user
			u.DateCreated, u.DateLastUpdated = now, now
			if !r.consentCell && rec.MessagingConsentDefault != nil {
				c := *rec.MessagingConsentDefault
				u.MessagingConsent = &c
			}
			created[i] = &u
			creates = append(creates, &u)
		}
		if err := tx.InsertUsers(ctx, creates); err != nil {
			return err
		}
		var existing []string
		for i, u := range created {
			if u != nil && u.ID == 0 {
				created[i] = nil
				existing = append(existing, u.PhoneNumber)
			}
		}
		live, err := tx.FindUsersByPhones(ctx, brandID, existing)
		if err != nil {
			return err
		}

		hooks, err := s.db.ListWebhooks(ctx, tx, brandID, true)
		if err != nil {
			return err
		}
		em := &batchEmitter{s: s, tx: tx, brandID: brandID, hooks: hooks}
		var consents []store.ConsentEvent
		var rejected []parley.ImportError
		counts := map[outcome]int64{}
		for i, r := range batch {
			out := outFailed
			switch {
			case errs[i] != nil:
			case created[i] != nil:
				u := created[i]
				out = outCreated
				if err := em.emit(ctx, parley.EventUserCreated, u); err != nil {
					return err
				}
				if u.MessagingConsent != nil {
					consents = append(consents, store.ConsentEvent{UserID: u.ID, New: u.MessagingConsent, Source: "import"})
					if err := em.consent(ctx, u); err != nil {
						return err
					}
				}
			case live[r.user.PhoneNumber] == nil:
				return fmt.Errorf("service: import: user %s neither created nor found", r.user.PhoneNumber)
			case !update:
				out = outSkipped
			default:
				var err error
				out, errs[i], err = run.merge(ctx, tx, em, r, live[r.user.PhoneNumber], &consents)
				if err != nil {
					return err
				}
			}
			if errs[i] != nil {
				rejected = append(rejected, *errs[i])
			}
			counts[out]++
		}
		if err := tx.InsertConsentEvents(ctx, brandID, consents); err != nil {
			return err
		}
		if err := em.flush(ctx); err != nil {
			return err
		}
		if err := tx.InsertImportErrors(ctx, brandID, rec.ID, rejected); err != nil {
			return err
		}

		next.Status = parley.ImportRunning
		next.Created += counts[outCreated]
		next.Updated += counts[outUpdated]
		next.Skipped += counts[outSkipped]
		next.Failed += counts[outFailed]
		next.ProcessedRows += int64(len(batch))
		next.NextOffset, next.NextLine = run.rd.Offset(), run.rd.Line()
		if eof {
			next.Status = parley.ImportCompleted
			next.DateCompleted = &now
			if err := tx.DeleteImportPhones(ctx, brandID, rec.ID); err != nil {
				return err
			}
		}
		return tx.SaveImportProgress(ctx, &next)
	})
	if err != nil {
		return err
	}
	*rec = next
	return nil
}

// merge applies an update row to the existing user u, as POST /users/{id}
// would: only the cells with a value change it.
func (run *importRun) merge(ctx context.Context, tx *store.Tx, em *batchEmitter, r *row, u *parley.User,
	consents *[]store.ConsentEvent) (outcome, *parley.ImportError, error) {
	before := *u
	if err := run.im.s.applyFields(u, &r.fields); err != nil {
		e, err := run.rowError(r.line, err)
		return outFailed, e, err
	}
	if r.upd != nil {
		var err error
		if u.CustomData, err = mergeCustomData(u.CustomData, r.upd, run.fields); err != nil {
			e, err := run.rowError(r.line, err)
			return outFailed, e, err
		}
	}
	if sameUser(&before, u) {
		return outSkipped, nil, nil
	}
	u.DateLastUpdated = parley.Time{Time: tx.Now()}
	if err := tx.UpdateUser(ctx, u); err != nil {
		return outFailed, nil, err
	}
	if err := em.emit(ctx, parley.EventUserUpdated, u); err != nil {
		return outFailed, nil, err
	}
	if !equalBoolPtr(before.MessagingConsent, u.MessagingConsent) {
		*consents = append(*consents, store.ConsentEvent{UserID: u.ID, Previous: before.MessagingConsent,
			New: u.MessagingConsent, Source: "import"})
		if err := em.consent(ctx, u); err != nil {
			return outFailed, nil, err
		}
	}
	return outUpdated, nil, nil
}

func duplicateInFile(r *row, firstLine int64) *parley.ImportError {
	return &parley.ImportError{Line: r.line, Field: "phone_number", Type: parley.EDuplicate,
		Msg: fmt.Sprintf("Duplicate entry for '%s': line %d of the file has this number", r.user.PhoneNumber, firstLine)}
}

// batchEmitter collects a batch's events and writes them in one statement
// at the end of the batch's transaction, their deliveries queued with the
// transaction's other jobs: the same events and payloads the API emits one
// by one (D11).
type batchEmitter struct {
	s       *Service
	tx      *store.Tx
	brandID int64
	hooks   []*store.WebhookRecord
	byType  map[string][]*store.WebhookRecord

	events   []*parley.Event
	payloads [][]byte
}

func (e *batchEmitter) emit(ctx context.Context, typ string, u *parley.User) error {
	if len(e.hooks) == 0 {
		return nil
	}
	if e.byType == nil {
		e.byType = map[string][]*store.WebhookRecord{}
	}
	hooks, ok := e.byType[typ]
	if !ok {
		hooks = slices.DeleteFunc(slices.Clone(e.hooks), func(w *store.WebhookRecord) bool { return !subscribes(w.EventTypes, typ) })
		e.byType[typ] = hooks
	}
	if len(hooks) == 0 {
		return nil
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	ev, payload, err := newEvent(e.tx.Now(), typ, data)
	if err != nil {
		return err
	}
	e.events, e.payloads = append(e.events, ev), append(e.payloads, payload)
	jobs := e.s.jobsOf(e.tx)
	for _, w := range hooks {
		jobs.Webhook(e.brandID, ev.ID, w.ID)
	}
	return nil
}

// flush writes the collected events.
func (e *batchEmitter) flush(ctx context.Context) error {
	if len(e.events) == 0 {
		return nil
	}
	return e.tx.InsertEvents(ctx, e.brandID, e.events, e.payloads)
}

// consent emits user.subscribed or user.unsubscribed for a consent the
// import set, as the API does (D11).
func (e *batchEmitter) consent(ctx context.Context, u *parley.User) error {
	if u.MessagingConsent == nil {
		return nil
	}
	typ := parley.EventUserUnsubscribed
	if *u.MessagingConsent {
		typ = parley.EventUserSubscribed
	}
	return e.emit(ctx, typ, u)
}

// ExportUsers writes the brand's live users as CSV in the import format,
// with a column for every custom data field, and returns how many it wrote:
// importing the file into a brand with the same fields gives the same users.
func (im *Importer) ExportUsers(ctx context.Context, brandID int64, w io.Writer) (int64, error) {
	fields, err := im.s.db.ListCustomFields(ctx, brandID)
	if err != nil {
		return 0, err
	}
	header := slices.Clone(parley.ImportColumns)
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = parley.CustomDataKey(f.FieldName)
		header = append(header, parley.CustomColumnPrefix+keys[i])
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return 0, err
	}
	var n int64
	cells := make([]string, len(header))
	err = im.s.db.EachUser(ctx, brandID, func(u *parley.User) error {
		clear(cells)
		cells[0] = u.PhoneNumber
		cells[1], cells[2], cells[3], cells[4] = deref(u.FirstName), deref(u.LastName), deref(u.EmailAddress), deref(u.DateOfBirth)
		if u.MessagingConsent != nil {
			cells[5] = strconv.FormatBool(*u.MessagingConsent)
		}
		if u.Location != nil {
			cells[6] = deref(u.Location.PostalCode)
		}
		if len(u.CustomData) > 0 {
			var cd map[string]json.RawMessage
			if err := json.Unmarshal(u.CustomData, &cd); err != nil {
				return fmt.Errorf("service: user %d custom_data: %w", u.ID, err)
			}
			for i, key := range keys {
				cells[len(parley.ImportColumns)+i] = cellText(cd[key])
			}
		}
		n++
		return cw.Write(cells)
	})
	if err != nil {
		return n, err
	}
	cw.Flush()
	return n, cw.Error()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cellText is a stored custom_data value as an import cell: a string's
// text, a number's literal, a list's items joined by |.
func cellText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) == nil {
			texts := make([]string, len(items))
			for i, it := range items {
				texts[i] = cellText(it)
			}
			return strings.Join(texts, parley.ListSeparator)
		}
	}
	return string(v)
}
