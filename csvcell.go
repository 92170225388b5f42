package parley

import "strconv"

// FormulaSafe returns s as a CSV cell that no spreadsheet reads as a
// formula (OWASP "CSV Injection"): a cell starting with =, +, -, @, tab or
// carriage return gets a leading ', and so does one that only looks
// neutralised already (quotes, then one of those), so that
// FromFormulaSafe gives s back whatever it holds. Parley writes every
// free-text cell through it; validated E.164 numbers and numbers are
// written as they are, since a spreadsheet reads them as plain values (#15).
func FormulaSafe(s string) string {
	if startsFormula(s) {
		return "'" + s
	}
	return s
}

// FromFormulaSafe undoes FormulaSafe: an imported cell that is ' followed
// by what FormulaSafe would quote loses that one '. Any other cell,
// '=1+1's unquoted form included, is taken as it is.
func FromFormulaSafe(s string) string {
	if len(s) > 1 && s[0] == '\'' && startsFormula(s[1:]) {
		return s[1:]
	}
	return s
}

// startsFormula reports whether s starts with a formula trigger, after any
// number of single quotes.
func startsFormula(s string) bool {
	i := 0
	for i < len(s) && s[i] == '\'' {
		i++
	}
	if i == len(s) {
		return false
	}
	switch s[i] {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

// ImportErrorColumns is the header of an import's errors CSV.
var ImportErrorColumns = []string{"line", "field", "type", "msg"}

// Record is e as a row of the errors CSV. The column and message can
// quote what the file held, so they are formula-safe.
func (e *ImportError) Record() []string {
	return []string{strconv.FormatInt(e.Line, 10), FormulaSafe(e.Field), e.Type, FormulaSafe(e.Msg)}
}
