package csvimport_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/csvimport"
)

type row struct {
	line   int64
	fields []string
	err    string // a RowError's message
}

// readAll reads a whole file: header, rows, and the offset and line after
// each row.
func readAll(t *testing.T, data string) (*csvimport.Header, []row, []int64, []int64) {
	t.Helper()
	h, rd, err := csvimport.ReadHeader(strings.NewReader(data))
	if err != nil {
		t.Fatalf("ReadHeader: %v", err)
	}
	var rows []row
	var offsets, lines []int64
	for {
		rec, line, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var re *csvimport.RowError
		switch {
		case errors.As(err, &re):
			rows = append(rows, row{line: line, err: re.Msg})
		case err != nil:
			t.Fatalf("Read: %v", err)
		default:
			rows = append(rows, row{line: line, fields: slices.Clone(rec)})
		}
		offsets = append(offsets, rd.Offset())
		lines = append(lines, rd.Line())
	}
	return h, rows, offsets, lines
}

func TestHeaderAndRows(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		comma      rune
	}{
		{"Comma", "phone_number,first_name\n+14155552671,Ann\n+14155552672,Bob\n", ','},
		{"Semicolon", "phone_number;first_name\n+14155552671;Ann\n+14155552672;Bob\n", ';'},
		{"BOMAndCRLF", "\xEF\xBB\xBFphone_number,first_name\r\n+14155552671,Ann\r\n+14155552672,Bob", ','},
		{"QuotedHeaderSemicolon", "\"phone_number\";\"first_name, given\"\n+14155552671;Ann\n+14155552672;Bob\n", ';'},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, rows, _, _ := readAll(t, tc.data)
			if h.Comma != tc.comma {
				t.Errorf("comma = %q, want %q", h.Comma, tc.comma)
			}
			if h.Columns[0] != "phone_number" {
				t.Errorf("first column = %q (a BOM must not stick to it)", h.Columns[0])
			}
			if h.DataLine != 2 {
				t.Errorf("DataLine = %d, want 2", h.DataLine)
			}
			want := []row{{line: 2, fields: []string{"+14155552671", "Ann"}}, {line: 3, fields: []string{"+14155552672", "Bob"}}}
			if len(rows) != 2 || !slices.Equal(rows[0].fields, want[0].fields) || !slices.Equal(rows[1].fields, want[1].fields) ||
				rows[0].line != 2 || rows[1].line != 3 {
				t.Errorf("rows = %+v, want %+v", rows, want)
			}
		})
	}
}

// A quoted cell may span lines; the next row's line counts them, and a row
// that is not well-formed CSV is reported without stopping the file.
func TestLinesAndRowErrors(t *testing.T) {
	data := "phone_number,first_name\n" +
		"+14155552671,\"Ann\nMarie\"\n" + // lines 2-3
		"\n" + // blank line 4, skipped
		"+14155552672,Bo\"b\n" + // line 5: bare quote
		"+14155552673,\"Cy\"x\n" + // line 6: text after a closing quote
		"+14155552674,Di\n" // line 7
	_, rows, _, _ := readAll(t, data)
	if len(rows) != 4 {
		t.Fatalf("rows = %+v, want 4", rows)
	}
	if rows[0].line != 2 || rows[0].fields[1] != "Ann\nMarie" {
		t.Errorf("row 1 = %+v", rows[0])
	}
	if rows[1].line != 5 || !strings.Contains(rows[1].err, `bare "`) {
		t.Errorf("row 2 = %+v, want a bare-quote error on line 5", rows[1])
	}
	if rows[2].line != 6 || rows[2].err == "" {
		t.Errorf("row 3 = %+v, want an error on line 6", rows[2])
	}
	if rows[3].line != 7 || rows[3].fields[1] != "Di" {
		t.Errorf("row 4 = %+v", rows[3])
	}
}

// Reading from the offset and line after any row gives exactly the rows
// that follow, with the same line numbers: what a resumed import relies on.
func TestResumeFromOffset(t *testing.T) {
	data := "\xEF\xBB\xBFphone_number;first_name\r\n+14155552671;\"A;\r\nB\"\r\n\r\n+14155552672;C\r\n+14155552673;\"D\"\"\"\r\n+14155552674;E"
	h, rows, offsets, lines := readAll(t, data)
	for i := range rows {
		rd := csvimport.NewReader(strings.NewReader(data[offsets[i]:]), h.Comma, offsets[i], lines[i])
		for j := i + 1; j < len(rows); j++ {
			rec, line, err := rd.Read()
			if err != nil {
				t.Fatalf("resumed after row %d: row %d: %v", i, j, err)
			}
			if line != rows[j].line || !slices.Equal(rec, rows[j].fields) {
				t.Errorf("resumed after row %d: got %q on line %d, want %q on line %d", i, rec, line, rows[j].fields, rows[j].line)
			}
			if rd.Offset() != offsets[j] || rd.Line() != lines[j] {
				t.Errorf("resumed after row %d: offset/line %d/%d, want %d/%d", i, rd.Offset(), rd.Line(), offsets[j], lines[j])
			}
		}
		if _, _, err := rd.Read(); !errors.Is(err, io.EOF) {
			t.Errorf("resumed after row %d: %v at the end, want EOF", i, err)
		}
	}
	if got := rows[len(rows)-1].line; got != 7 {
		t.Errorf("last row on line %d, want 7", got)
	}
}

func wantFileError(t *testing.T, err error, code, contains string) {
	t.Helper()
	var pe *parley.Error
	if !errors.As(err, &pe) || pe.Code != code || pe.Field != "file" || !strings.Contains(pe.Message, contains) {
		t.Errorf("error = %v, want %s on file containing %q", err, code, contains)
	}
}

// readErr reads a file to its end and returns the first error that is not
// a row's.
func readErr(data []byte) error {
	_, rd, err := csvimport.ReadHeader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	for {
		_, _, err := rd.Read()
		var re *csvimport.RowError
		if errors.As(err, &re) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func TestBadFiles(t *testing.T) {
	long := strings.Repeat("x", csvimport.MaxRowBytes)
	for _, tc := range []struct {
		name     string
		data     []byte
		code     string
		contains string
	}{
		{"Empty", nil, parley.EValidation, "must not be empty"},
		{"OnlyBOM", []byte("\xEF\xBB\xBF"), parley.EValidation, "must not be empty"},
		{"OnlyBlankLines", []byte("\r\n\n\n"), parley.EValidation, "must not be empty"},
		{"PNG", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"), parley.EUnsupportedMediaType, "image/png"},
		{"PDF", []byte("%PDF-1.4\n%\xE2\xE3\xCF\xD3\n1 0 obj\n"), parley.EUnsupportedMediaType, "application/pdf"},
		{"Zip", []byte("PK\x03\x04\x14\x00\x00\x00\x00\x00"), parley.EUnsupportedMediaType, "not a CSV file"},
		{"Binary", []byte{0, 1, 2, 3, 4, 5, 0xFF, 0xFE, 0}, parley.EUnsupportedMediaType, "binary data"},
		{"UTF16", []byte("\xFF\xFEp\x00h\x00o\x00"), parley.EUnsupportedMediaType, "UTF-16"},
		{"NULLater", []byte("phone_number\n" + strings.Repeat("+14155552671\n", 300) + "+1415\x005552672\n"),
			parley.EUnsupportedMediaType, "line 302 holds a NUL"},
		{"Latin1", []byte("phone_number,first_name\n+14155552671,Zo\xEB\n"), parley.EUnsupportedMediaType, "line 2 is not valid UTF-8"},
		{"LongLine", []byte("phone_number,first_name\n+14155552671,Ann\n+14155552672," + long + "\n+14155552673,Cy\n"),
			parley.EValidation, "row starting on line 3 is longer than"},
		{"LongHeader", []byte("phone_number," + long + "\n+14155552671,Ann\n"), parley.EValidation, "line 1 is longer"},
		{"QuoteLeftOpen", []byte("phone_number,first_name\n+14155552671,\"Ann\n" + strings.Repeat("+14155552672,Bob\n", 5000)),
			parley.EValidation, "row starting on line 2 is longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantFileError(t, readErr(tc.data), tc.code, tc.contains)
		})
	}
}

// A row of exactly the limit is fine: the bound is not off by one.
func TestRowAtTheLimit(t *testing.T) {
	prefix := "+14155552672,"
	row := prefix + strings.Repeat("x", csvimport.MaxRowBytes-len(prefix)-1) + "\n"
	data := "phone_number,first_name\n" + row + "+14155552673,Cy\n"
	_, rows, _, _ := readAll(t, data)
	if len(rows) != 2 || rows[1].fields[1] != "Cy" {
		t.Errorf("rows = %d, want 2", len(rows))
	}
}

// The source's own failure is passed on as it is.
func TestSourceError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("phone_number\n+14155552671\n"), &failing{boom})
	_, rd, err := csvimport.ReadHeader(r)
	if err != nil && !errors.Is(err, boom) {
		t.Fatalf("ReadHeader: %v", err)
	}
	for err == nil {
		_, _, err = rd.Read()
	}
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want the source's", err)
	}
}

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }
