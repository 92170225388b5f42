package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/csvimport"
	"github.com/parleyhq/parley/internal/phone"
)

// rowReader reads an import's file and checks its rows. It runs ahead of
// the batches' commits, in a goroutine of its own (readAhead), so it
// holds its own copy of what it needs of the import, and nothing it
// reads changes while it runs.
type rowReader struct {
	s         *Service
	batchSize int
	brandID   int64
	country   string // the import's default country (D22)
	cols      []column
	fields    map[string]*parley.CustomField
	rd        *csvimport.Reader
}

// row is a row read and checked, not yet written.
type row struct {
	line int64
	// errs are every error of a rejected row (D22); cells its cells as
	// read, for the rejected-rows file (nil for a row that is not CSV).
	errs  []*parley.ImportError
	cells []string
	// user is the user the row creates; fields and upd what it changes in
	// an existing user (on_duplicate=update).
	user        *parley.User
	fields      parley.UserFields
	upd         map[string]json.RawMessage
	consentCell bool // messaging_consent had a value
}

// readBatch is a batch of rows read and checked, and where the file stands
// after it: the import's progress once the batch commits.
type readBatch struct {
	rows   []*row
	eof    bool
	offset int64
	line   int64
	err    error
}

// readAhead reads the file's batches in a goroutine while the caller
// commits the ones before: reading and checking rows takes about a fifth
// of an import's CPU, which the other core then does beside the writes
// (issue #35). The channel is unbuffered, so the goroutine reads one
// batch ahead and waits for it to be taken: two batches are held at most.
// It ends after the last batch, a failed read, or ctx's end; stop cancels
// it and waits for it, so the file can be closed after stop returns.
func (rr *rowReader) readAhead(ctx context.Context) (next <-chan readBatch, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan readBatch)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for {
			rows, eof, err := rr.read(ctx)
			b := readBatch{rows: rows, eof: eof, offset: rr.rd.Offset(), line: rr.rd.Line(), err: err}
			select {
			case ch <- b:
			case <-ctx.Done():
				return
			}
			if eof || err != nil {
				return
			}
		}
	}()
	return ch, func() { cancel(); <-done }
}

// read reads and checks up to a batch of rows; eof says the file ended.
func (rr *rowReader) read(ctx context.Context) ([]*row, bool, error) {
	n := max(1, rr.batchSize)
	batch := make([]*row, 0, n)
	for len(batch) < n {
		rec, line, err := rr.rd.Read()
		var re *csvimport.RowError
		switch {
		case errors.Is(err, io.EOF):
			return batch, true, nil
		case errors.As(err, &re):
			batch = append(batch, &row{line: re.Line, errs: []*parley.ImportError{{Line: re.Line, Type: parley.EValidation, Msg: re.Msg}}})
			continue
		case err != nil:
			return nil, false, err
		}
		r, err := rr.check(ctx, rec, line)
		if err != nil {
			return nil, false, err
		}
		batch = append(batch, r)
	}
	return batch, false, nil
}

// check applies POST /users's validation to a row. Only an internal
// failure is an error; a bad row comes back with every one of its errors
// (D22).
func (rr *rowReader) check(ctx context.Context, rec []string, line int64) (*row, error) {
	r := &row{line: line, cells: slices.Clone(rec)} // rec is the reader's, reused
	if len(rec) != len(rr.cols) {
		r.errs = []*parley.ImportError{{Line: line, Type: parley.EValidation,
			Msg: fmt.Sprintf("the row has %d cells; the header has %d columns", len(rec), len(rr.cols))}}
		return r, nil
	}
	in := parley.UserCreate{PhoneNumber: parley.Null[string](), Channel: parley.Some(parley.ImportChannel)}
	var custom []byte
	var bad []*parley.ImportError
	values := make([]string, len(rec)) // the cells as checked; "" for none or one already reported
	for i, c := range rr.cols {
		if c.kind == colIgnore {
			continue
		}
		// Checked before trimming, which would take a leading tab away
		// and turn "\t=1+1" into a formula (#15).
		if rule := parley.ControlCharRule(rec[i], false); rule != "" {
			bad = append(bad, &parley.ImportError{Line: line, Field: c.name, Type: c.code(), Msg: c.name + ": " + rule})
			continue
		}
		// A cell Parley neutralised on export reads as the value it was.
		v := parley.FromFormulaSafe(strings.TrimSpace(rec[i]))
		if v == "" {
			continue // an empty cell is no value: null on create, untouched on update
		}
		switch c.kind {
		case colPhone:
			e164, err := rr.phone(v)
			if err != nil {
				bad = append(bad, &parley.ImportError{Line: line, Field: c.name, Type: parley.EInvalidPhoneNumber, Msg: err.Error()})
				continue
			}
			in.PhoneNumber = parley.Some(e164)
		case colConsent:
			consent, ok := parseConsent(v)
			if !ok {
				bad = append(bad, &parley.ImportError{Line: line, Field: c.name, Type: parley.EValidation,
					Msg: c.name + ": must be true, false, yes, no, 1, 0 or empty"})
				continue
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
			custom = appendCell(custom, rr.fields[c.key], v)
		default:
			setTextField(&in.UserFields, c.kind, v)
		}
		values[i] = v
	}
	var whole error
	if len(bad) == 0 {
		u, err := rr.s.NewUser(ctx, rr.brandID, in)
		if err == nil && custom != nil {
			custom = append(custom, '}')
			if r.upd, err = parseCustomData(custom, rr.fields); err == nil {
				u.CustomData, err = mergeCustomData(nil, r.upd, nil)
			}
		}
		if err == nil {
			r.user, r.fields = u, in.UserFields
			return r, nil
		}
		whole = err
	}
	var err error
	r.errs, err = rr.diagnose(ctx, line, values, bad, whole)
	return r, err
}

// phone reads a phone number cell: E.164 with its "+", or a national
// number of the import's default country (D22).
func (rr *rowReader) phone(v string) (string, error) {
	if e164, ok := phone.NormalizeIn(v, rr.country, rr.s.PhoneMode); ok {
		return e164, nil
	}
	if strings.HasPrefix(v, "+") {
		return "", errors.New("Invalid phone number [" + v + "] provided.")
	}
	return "", fmt.Errorf("Invalid phone number [%s] provided: not a phone number of %s (the import's default country); write a number of another country with + and its country code", v, rr.country)
}

// setTextField sets the member of f that a text column of kind names to
// v, and reports whether kind is such a column.
func setTextField(f *parley.UserFields, kind int, v string) bool {
	var m *parley.Optional[string]
	switch kind {
	case colFirstName:
		m = &f.FirstName
	case colLastName:
		m = &f.LastName
	case colEmail:
		m = &f.EmailAddress
	case colDateOfBirth:
		m = &f.DateOfBirth
	case colPostalCode:
		m = &f.PostalCode
	default:
		return false
	}
	*m = parley.Some(v)
	return true
}

// diagnose finds every error of a rejected row, one column at a time:
// bad holds those found while reading it, whole the error of the row as a
// whole, reported when no single column explains it (custom data over its
// size limit).
func (rr *rowReader) diagnose(ctx context.Context, line int64, values []string, bad []*parley.ImportError, whole error) ([]*parley.ImportError, error) {
	errs := bad
	reported := map[string]bool{}
	for _, e := range bad {
		reported[e.Field] = true
	}
	for i, c := range rr.cols {
		v := values[i]
		if c.kind == colIgnore || c.kind == colConsent || reported[c.name] || (v == "" && c.kind != colPhone) {
			continue
		}
		var err error
		var f parley.UserFields
		switch c.kind {
		case colPhone:
			if v == "" {
				err = invalid("phone_number", "required")
			}
		case colCustom:
			key, _ := json.Marshal(c.key)
			raw := appendCell(append(append([]byte{'{'}, key...), ':'), rr.fields[c.key], v)
			_, err = parseCustomData(append(raw, '}'), rr.fields)
		default:
			if setTextField(&f, c.kind, v) {
				err = rr.s.applyFields(&parley.User{BrandID: rr.brandID}, &f)
			}
		}
		if err != nil {
			e, ierr := rr.rowError(line, err)
			if ierr != nil {
				return nil, ierr
			}
			errs = append(errs, e)
		}
	}
	if len(errs) == 0 && whole != nil {
		e, err := rr.rowError(line, whole)
		if err != nil {
			return nil, err
		}
		errs = append(errs, e)
	}
	if len(errs) == 0 { // cannot be: the row failed for a reason
		errs = append(errs, &parley.ImportError{Line: line, Type: parley.EValidation, Msg: "the row could not be imported"})
	}
	return errs, nil
}

// rowError turns a validation error into the row's report, with the column
// it names; any other error is an internal failure and is returned.
func (rr *rowReader) rowError(line int64, err error) (*parley.ImportError, error) {
	var pe *parley.Error
	if !errors.As(err, &pe) {
		return nil, err
	}
	e := &parley.ImportError{Line: line, Field: pe.Field, Type: pe.Code, Msg: pe.Message}
	// Name the column as the file does: custom_data.tier is the column
	// custom_tier; custom_data as a whole (its size) is no one column.
	key, custom := strings.CutPrefix(pe.Field, "custom_data.")
	for _, c := range rr.cols {
		if (custom && c.kind == colCustom && c.key == key) ||
			(!custom && c.kind >= 0 && c.kind != colCustom && parley.ImportColumns[c.kind] == pe.Field) {
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
			v = enumSpelling(f, v)
		}
		return appendScalar(b, typ, v)
	}
	b = append(b, '[')
	for i, item := range strings.Split(v, parley.ListSeparator) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendScalar(b, f.Subtype, enumSpelling(f, strings.TrimSpace(item)))
	}
	return append(b, ']')
}

// enumSpelling is v as the field's enumeration spells it when v matches
// one of its values ASCII case-insensitively (gold is Gold, D22), else v.
func enumSpelling(f *parley.CustomField, v string) string {
	for _, e := range f.AvailableEnumValues {
		if e == v {
			return v
		}
	}
	for _, e := range f.AvailableEnumValues {
		if equalFoldASCII(e, v) {
			return e
		}
	}
	return v
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
