package parley_test

import (
	"testing"

	"github.com/parleyhq/parley"
)

// TestFormulaSafe: free-text cells that a spreadsheet would read as a
// formula get a leading ' (OWASP "CSV Injection", #15).
func TestFormulaSafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Ann", "Ann"},
		{"", ""},
		{"=1+1", "'=1+1"},
		{"+1", "'+1"},
		{"-5", "'-5"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\t=1+1", "'\t=1+1"},
		{"\r=1+1", "'\r=1+1"},
		{"=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"a=b", "a=b"},
		{" =1", " =1"},
		{"'Neil", "'Neil"},
		// A value that already looks neutralised is quoted again, so
		// reading the cell back gives the value, not less.
		{"'=1", "''=1"},
		{"''@x", "'''@x"},
		{"'", "'"},
	} {
		if got := parley.FormulaSafe(c.in); got != c.want {
			t.Errorf("FormulaSafe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFromFormulaSafe: the importer reads a neutralised cell as the
// value, and any value survives FormulaSafe then FromFormulaSafe.
func TestFromFormulaSafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"'=1+1", "=1+1"},
		{"'-5", "-5"},
		{"'@x", "@x"},
		{"'+14155552671", "+14155552671"},
		{"'\t=1", "\t=1"},
		{"''=1", "'=1"},
		{"'Neil", "'Neil"},
		{"'", "'"},
		{"=1+1", "=1+1"},
		{"Ann", "Ann"},
	} {
		if got := parley.FromFormulaSafe(c.in); got != c.want {
			t.Errorf("FromFormulaSafe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, v := range []string{"", "'", "''", "'a", "'=", "''=", "'''-", "=", "-", "+1", "a", "'\t", "@'", "=''"} {
		if got := parley.FromFormulaSafe(parley.FormulaSafe(v)); got != v {
			t.Errorf("round trip of %q gives %q", v, got)
		}
	}
}

// TestImportErrorRecord: the errors CSV's free-text cells are formula-safe.
func TestImportErrorRecord(t *testing.T) {
	e := &parley.ImportError{Line: 3, Field: "=f", Type: parley.EValidation, Msg: "-msg"}
	got := e.Record()
	want := []string{"3", "'=f", "validation_error", "'-msg"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Record() = %q, want %q", got, want)
		}
	}
}
