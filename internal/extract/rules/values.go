package rules

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// cand is one value found in a text. A nil val is a value that cannot be stored
// (a date without a year, 34.5 for an INTEGER): it still counts as the answer, so
// that a nearby lesser candidate is not taken in its place.
type cand struct {
	start, end int
	val        string // the value as D6 stores it (JSON), "" when it cannot be stored
	key        string // the enum value named, for enum candidates
}

var (
	// A number: not part of a word, a time (3:30), a date (3/3) or a phone number
	// (555-1234); checked around the match in numbers.
	numberRE = regexp.MustCompile(`\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?`)
	emailRE  = regexp.MustCompile(`[a-z0-9._%+\-]+@[a-z0-9\-]+(?:\.[a-z0-9\-]+)*\.[a-z]{2,}`)
	// Dates in common US forms and ISO 8601.
	slashRE = regexp.MustCompile(`\b(\d{1,2})([/-])(\d{1,2})(?:([/-])(\d{4}|\d{2}))?\b`)
	isoRE   = regexp.MustCompile(`\b(\d{4})-(\d{1,2})-(\d{1,2})\b`)
)

var months = map[string]int{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
	"may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9,
	"september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}

// Small numbers in words ("three kids").
var numberWords = map[string]int{
	"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
	"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
	"fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
	"nineteen": 19, "twenty": 20,
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'z' || c >= 0x80 }

// numbers finds the numbers of d as decimal strings ("1200", "12.50"). A number
// followed by "or"/"to"/"-" and another number is a range, not an answer.
func numbers(d *doc) []cand {
	low := d.low
	var cs []cand
	if !strings.ContainsAny(low, "0123456789") {
		goto words // the regexp costs more than this scan
	}
	for _, m := range numberRE.FindAllStringIndex(low, -1) {
		s, e := m[0], m[1]
		if s > 0 {
			if c := low[s-1]; isAlnum(c) || strings.IndexByte("/:.-,@_", c) >= 0 {
				continue
			}
		}
		if e < len(low) {
			c := low[e]
			if isAlnum(c) || strings.IndexByte("/:@_", c) >= 0 {
				continue
			}
			if (c == '-' || c == '.' || c == ',') && e+1 < len(low) && isDigit(low[e+1]) {
				continue
			}
		}
		n := strings.TrimPrefix(strings.ReplaceAll(low[s:e], ",", ""), "$")
		if len(n) > 12 { // a phone or account number, not a quantity
			continue
		}
		cs = append(cs, cand{start: s, end: e, val: n})
	}
words:
	for i, w := range d.words {
		if n, ok := numberWords[w.w]; ok && !w.poss {
			// "no one" is not a number.
			if w.w == "one" && i > 0 && (d.words[i-1].w == "no" || d.words[i-1].w == "the" || d.words[i-1].w == "this" || d.words[i-1].w == "that") {
				continue
			}
			cs = append(cs, cand{start: w.start, end: w.end, val: strconv.Itoa(n)})
		}
	}
	sortCands(cs)
	// Drop ranges: "2 or 3", "2 to 3", "2-3".
	out := cs[:0]
	for i := 0; i < len(cs); i++ {
		if i+1 < len(cs) {
			between := strings.TrimSpace(low[cs[i].end:cs[i+1].start])
			if between == "or" || between == "to" || between == "-" {
				i++
				continue
			}
		}
		out = append(out, cs[i])
	}
	return out
}

func sortCands(cs []cand) {
	// Insertion sort: a text holds a handful of candidates.
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].start < cs[j-1].start; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// number converts a decimal string to the D6 form of typ: INTEGER a whole number,
// FLOAT any number. "" when it does not fit.
func number(n string, integer bool) string {
	if integer {
		if strings.IndexByte(n, '.') >= 0 {
			return ""
		}
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return ""
		}
		return strconv.FormatInt(i, 10)
	}
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// dates finds the dates of d as "MM/DD/YYYY" JSON strings. A date without a year
// or an impossible one is a candidate with no value. A two-digit year is read as the
// year in (now-90, now+10] ending in those digits; without now it is not read.
func dates(d *doc, now time.Time) []cand {
	low := d.low
	var cs []cand
	if !strings.ContainsAny(low, "0123456789") {
		return nil // every form has digits; the regexps cost more than this scan
	}
	add := func(s, e int, y, m, day int, ok bool) {
		for _, c := range cs {
			if s < c.end && c.start < e {
				return // inside a date already found ("03-03" of "1990-03-03")
			}
		}
		c := cand{start: s, end: e}
		if ok && y >= 1000 && y <= 9999 {
			t := time.Date(y, time.Month(m), day, 0, 0, 0, 0, time.UTC)
			if t.Year() == y && int(t.Month()) == m && t.Day() == day {
				c.val = `"` + t.Format("01/02/2006") + `"`
			}
		}
		cs = append(cs, c)
	}
	for _, m := range isoRE.FindAllStringSubmatchIndex(low, -1) {
		y, _ := strconv.Atoi(low[m[2]:m[3]])
		mo, _ := strconv.Atoi(low[m[4]:m[5]])
		day, _ := strconv.Atoi(low[m[6]:m[7]])
		add(m[0], m[1], y, mo, day, true)
	}
	// "March 3, 1990", "Mar. 3rd 1990", by words: cheaper than a regexp.
	for i := 0; i+1 < len(d.words); i++ {
		mo, ok := months[d.words[i].w]
		if !ok || d.words[i].poss || !spaceBetween(low, d.words[i].end, d.words[i+1].start, ".") {
			continue
		}
		dw := d.words[i+1]
		day, rest := leadingInt(dw.w)
		if rest != "" && rest != "st" && rest != "nd" && rest != "rd" && rest != "th" || day < 0 || dw.end-dw.start-len(rest) > 2 {
			continue
		}
		end, y, hasYear := dw.end, 0, false
		if i+2 < len(d.words) && spaceBetween(low, dw.end, d.words[i+2].start, ",") {
			if yw := d.words[i+2].w; len(yw) == 4 {
				if n, r := leadingInt(yw); r == "" {
					end, y, hasYear = d.words[i+2].end, n, true
				}
			}
		}
		add(d.words[i].start, end, y, mo, day, hasYear)
	}
	for _, m := range slashRE.FindAllStringSubmatchIndex(low, -1) {
		s, e := m[0], m[1]
		// Not part of a longer number run: a phone number or a fraction list.
		if s > 0 && strings.IndexByte("/-.", low[s-1]) >= 0 || e < len(low) && strings.IndexByte("/-", low[e]) >= 0 {
			continue
		}
		mo, _ := strconv.Atoi(low[m[2]:m[3]])
		day, _ := strconv.Atoi(low[m[6]:m[7]])
		if m[8] < 0 {
			add(s, e, 0, mo, day, false)
			continue
		}
		if low[m[4]:m[5]] != low[m[8]:m[9]] { // 3/3-1990
			continue
		}
		ys := low[m[10]:m[11]]
		y, _ := strconv.Atoi(ys)
		ok := true
		if len(ys) == 2 {
			if now.IsZero() {
				ok = false
			} else {
				top := now.Year() + 10
				y = top - ((top-y)%100+100)%100
			}
		}
		add(s, e, y, mo, day, ok)
	}
	sortCands(cs)
	return cs
}

// spaceBetween reports whether low[i:j] is white space with at most one of the
// punctuation bytes in punct first ("mar. 3", "3, 1990").
func spaceBetween(low string, i, j int, punct string) bool {
	if i < j && strings.IndexByte(punct, low[i]) >= 0 {
		i++
	}
	if i == j {
		return false
	}
	for ; i < j; i++ {
		if low[i] != ' ' {
			return false
		}
	}
	return true
}

// leadingInt splits w into its leading decimal digits (-1 if none) and the rest.
func leadingInt(w string) (int, string) {
	n, i := 0, 0
	for ; i < len(w) && isDigit(w[i]) && i < 9; i++ {
		n = n*10 + int(w[i]-'0')
	}
	if i == 0 {
		return -1, w
	}
	return n, w[i:]
}

// emails finds e-mail addresses, as written.
func emails(d *doc) []cand {
	var cs []cand
	if strings.IndexByte(d.low, '@') < 0 {
		return nil
	}
	for _, m := range emailRE.FindAllStringIndex(d.low, -1) {
		cs = append(cs, cand{start: m[0], end: m[1], val: strconv.Quote(d.s[m[0]:m[1]])})
	}
	return cs
}

// Yes and no words. An unsure phrase makes the answer no answer.
var (
	yesWords = set("yes", "yeah", "yea", "yep", "yup", "ya", "yah", "yass", "sure", "absolutely",
		"definitely", "certainly", "correct", "true", "affirmative", "y", "ofc")
	noWords = set("no", "nope", "nah", "never", "negative", "false", "n", "not", "don't", "dont",
		"won't", "wont", "nothing")
	unsure = [][]string{{"not", "sure"}, {"maybe"}, {"idk"}, {"dunno"}, {"perhaps"}, {"unsure"},
		{"don't", "know"}, {"dont", "know"}, {"not", "yet", "sure"}}
)

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// booleans finds yes and no words as "true"/"false"; "of course" is yes.
func booleans(d *doc) []cand {
	var cs []cand
	ws := d.words
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if w.poss {
			continue
		}
		if n := phraseAt(ws, i, unsure); n > 0 {
			cs = append(cs, cand{start: w.start, end: ws[i+n-1].end})
			i += n - 1
			continue
		}
		switch {
		case w.w == "of" && i+1 < len(ws) && ws[i+1].w == "course":
			cs = append(cs, cand{start: w.start, end: ws[i+1].end, val: `"true"`})
			i++
		case yesWords[w.w]:
			cs = append(cs, cand{start: w.start, end: w.end, val: `"true"`})
		case noWords[w.w]:
			cs = append(cs, cand{start: w.start, end: w.end, val: `"false"`})
		}
	}
	return cs
}

// phraseAt returns the length of the first phrase of ps that starts at ws[i], or 0.
func phraseAt(ws []word, i int, ps [][]string) int {
next:
	for _, p := range ps {
		if i+len(p) > len(ws) {
			continue
		}
		for j, pw := range p {
			if ws[i+j].w != pw || ws[i+j].poss {
				continue next
			}
		}
		return len(p)
	}
	return 0
}

// enumHits finds the enum values of f named in d, whole words, ASCII case
// ignored, in the order of the text and then of the enum: at each word,
// the phrases of 1 … f.longest words starting there are looked up.
func enumHits(d *doc, f *field) []cand {
	var cs []cand
	var key strings.Builder
	for i := range d.words {
		key.Reset()
		var at []int // enum indices named at word i
		for j := i; j < len(d.words) && j-i < f.longest && !d.words[j].poss; j++ {
			if j > i {
				key.WriteByte(' ')
			}
			key.WriteString(d.words[j].w)
			at = append(at, f.byPhrase[key.String()]...)
		}
		slices.Sort(at)
		for _, k := range at {
			cs = append(cs, cand{start: d.words[i].start, end: d.words[i+len(f.enum[k])-1].end, key: f.Enum[k]})
		}
	}
	return cs
}

// tokens splits s into the words analyse would find, a trailing "'s" kept.
func tokens(s string) []string {
	low := lowerASCII(s)
	var ws []string
	for i := 0; i < len(low); {
		if ok, n := wordRune(low, i); !ok {
			i += n
			continue
		}
		e := wordEnd(low, i)
		ws = append(ws, replaceCurly(low[i:e]))
		i = e
	}
	return ws
}
