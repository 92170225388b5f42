// Package csvimport reads contact CSV files the way imports need them:
// streamed with encoding/csv, a UTF-8 byte-order mark dropped, the
// delimiter (comma or semicolon) taken from the header line, every row
// located by its line and byte offset so an import can resume after its
// last committed row, and memory bounded whatever the file holds.
package csvimport

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"

	"github.com/parleyhq/parley"
)

// MaxRowBytes bounds one row, newlines inside quoted cells included. A
// valid contact row is far shorter (custom_data holds at most 16 KiB), so a
// longer one is a quote left open or not a contact file, and the bound
// keeps memory flat whatever the file holds.
const MaxRowBytes = 64 << 10

// sniffLen is how much of the file is looked at to tell text from binary.
const sniffLen = 3072

var bom = []byte("\xEF\xBB\xBF")

// Header is what a file's first row says and where its data starts.
type Header struct {
	Comma   rune
	Columns []string // as written, spaces trimmed
	// DataOffset and DataLine locate the first row after the header.
	DataOffset int64
	DataLine   int64
}

// RowError is a row that is not well-formed CSV: the import reports it and
// goes on with the next row.
type RowError struct {
	Line int64
	Msg  string
}

func (e *RowError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Reader reads the rows of a file from some position in it.
type Reader struct {
	g        *guard
	cr       *csv.Reader
	base     int64 // byte offset in the file where cr started
	baseLine int64 // line number there
}

// NewReader reads the rows of a file from r, which starts at byte offset
// of the file, where line line begins; comma is the file's delimiter.
func NewReader(r io.Reader, comma rune, offset, line int64) *Reader {
	return newReader(bufio.NewReaderSize(r, MaxRowBytes), comma, offset, line)
}

func newReader(br *bufio.Reader, comma rune, offset, line int64) *Reader {
	g := &guard{br: br, line: line}
	cr := csv.NewReader(g)
	cr.Comma = comma
	cr.FieldsPerRecord = -1 // the caller compares with the header, for a clearer message
	cr.ReuseRecord = true
	return &Reader{g: g, cr: cr, base: offset, baseLine: line}
}

// ReadHeader checks that r holds CSV text (415 unsupported_media_type
// otherwise), reads its header row, and returns it with a Reader of the
// rows that follow.
func ReadHeader(r io.Reader) (*Header, *Reader, error) {
	br := bufio.NewReaderSize(r, MaxRowBytes)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	var offset int64
	if bytes.HasPrefix(head, bom) {
		br.Discard(len(bom))
		head, offset = head[len(bom):], int64(len(bom))
	}
	if len(bytes.TrimSpace(head)) == 0 {
		return nil, nil, fileError(parley.EValidation, "must not be empty: want a header row and at least one row of users")
	}
	if err := sniff(head); err != nil {
		return nil, nil, err
	}
	// The delimiter is whichever of , and ; the header line uses more.
	line, err := br.Peek(MaxRowBytes)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, nil, err
	}
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	comma := ','
	if commas, semis := countOutsideQuotes(line); semis > commas {
		comma = ';'
	}

	rd := newReader(br, comma, offset, 1)
	rec, _, err := rd.Read()
	var re *RowError
	switch {
	case errors.Is(err, io.EOF):
		return nil, nil, fileError(parley.EValidation, "must not be empty: want a header row and at least one row of users")
	case errors.As(err, &re):
		return nil, nil, fileError(parley.EValidation, "the header row is not valid CSV: "+re.Error())
	case err != nil:
		return nil, nil, err
	}
	h := &Header{Comma: comma, Columns: make([]string, len(rec)), DataOffset: rd.Offset(), DataLine: rd.Line()}
	for i, c := range rec {
		h.Columns[i] = strings.TrimSpace(c)
	}
	return h, rd, nil
}

// sniff refuses what is not text: binary files, spreadsheets saved in their
// own format, UTF-16.
func sniff(head []byte) error {
	if bytes.HasPrefix(head, []byte{0xFF, 0xFE}) || bytes.HasPrefix(head, []byte{0xFE, 0xFF}) {
		return fileError(parley.EUnsupportedMediaType, "is UTF-16 text; save it as CSV UTF-8")
	}
	m := mimetype.Detect(head)
	for p := m; p != nil; p = p.Parent() {
		if p.Is("text/plain") {
			return nil
		}
	}
	name, _, _ := mime.ParseMediaType(m.String())
	what := name
	switch {
	case strings.Contains(name, "spreadsheetml") || name == "application/vnd.ms-excel":
		what = "an Excel workbook"
	case name == "application/octet-stream":
		what = "binary data"
	}
	return fileError(parley.EUnsupportedMediaType, "is not a CSV file (it looks like "+what+"); export the contacts as CSV UTF-8")
}

// countOutsideQuotes counts the commas and semicolons of a line that are
// not inside a quoted cell.
func countOutsideQuotes(line []byte) (commas, semis int) {
	quoted := false
	for _, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == ',':
			commas++
		case c == ';':
			semis++
		}
	}
	return commas, semis
}

// Read returns the next row and the line it starts on. A row that is not
// well-formed CSV comes back as a *RowError, after which reading goes on;
// io.EOF ends the file; any other error is about the whole file.
func (r *Reader) Read() ([]string, int64, error) {
	rec, err := r.cr.Read()
	r.g.rowBoundary()
	if r.g.err != nil {
		return nil, 0, r.g.err // csv may hand back a partial row with it
	}
	if err == nil {
		l, _ := r.cr.FieldPos(0)
		return rec, r.baseLine + int64(l) - 1, nil
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		line := r.baseLine + int64(pe.StartLine) - 1
		return nil, line, &RowError{Line: line, Msg: "not valid CSV: " + pe.Err.Error()}
	}
	return nil, 0, err
}

// Offset is the byte offset in the file just past the last row read: where
// reading resumes.
func (r *Reader) Offset() int64 { return r.base + r.cr.InputOffset() }

// Line is the line number at Offset.
func (r *Reader) Line() int64 { return r.g.line }

// guard sits between the file and encoding/csv. It hands csv one line per
// Read, so csv never reads past the row it is parsing and the guard always
// knows the line number; and it stops the file at the first line that is
// too long, holds a NUL byte or is not UTF-8.
type guard struct {
	br      *bufio.Reader
	pending []byte // the rest of the current line, inside br's buffer
	line    int64  // number of the next line to hand out
	rowLen  int    // bytes of the current row so far
	rowLine int64  // line the current row started on
	err     error
}

func (g *guard) Read(p []byte) (int, error) {
	if len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.br.ReadSlice('\n')
		if g.rowLen == 0 {
			g.rowLine = g.line
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			g.err = g.tooLong()
			return 0, g.err
		case err != nil && !errors.Is(err, io.EOF):
			g.err = err
			return 0, err
		case len(line) == 0:
			return 0, io.EOF
		}
		if bytes.IndexByte(line, 0) >= 0 {
			g.err = fileError(parley.EUnsupportedMediaType, fmt.Sprintf("is not a CSV text file: line %d holds a NUL byte", g.line))
			return 0, g.err
		}
		if !utf8.Valid(line) {
			g.err = fileError(parley.EUnsupportedMediaType, fmt.Sprintf("is not UTF-8: line %d is not valid UTF-8 text; save the file as CSV UTF-8", g.line))
			return 0, g.err
		}
		if g.rowLen += len(line); g.rowLen > MaxRowBytes {
			g.err = g.tooLong()
			return 0, g.err
		}
		if line[len(line)-1] == '\n' {
			g.line++
		}
		g.pending = line
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// rowBoundary is called when csv has returned a row: having been handed
// line by line, it has consumed exactly what the guard gave it.
func (g *guard) rowBoundary() { g.rowLen = 0 }

func (g *guard) tooLong() error {
	return fileError(parley.EValidation, fmt.Sprintf("the row starting on line %d is longer than %d bytes "+
		"(is a quote left open?); rows of contacts are far shorter", g.rowLine, MaxRowBytes))
}

// fileError is a problem with the file as a whole.
func fileError(code, rule string) *parley.Error {
	return parley.FieldError(code, "file", rule)
}
