package rules

import (
	"unicode"
	"unicode/utf8"
)

// word is one word of a text: letters and digits, with inner apostrophes ("i'm").
type word struct {
	start, end int
	w          string // ASCII-lowercased, ’ read as ', a trailing "'s" removed
	poss       bool   // it had a trailing "'s" ("son's")
}

// doc is an analysed text. low has the same byte offsets as s, so spans found in
// one index the other.
type doc struct {
	s, low  string
	words   []word
	bounds  []int // clause boundaries, ascending; clause i is [bounds[i], bounds[i+1])
	clauses []int // clause index of each word
}

func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// wordRune reports whether the rune at s[i:] is part of a word, and its size.
func wordRune(s string, i int) (bool, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9', 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r), n
}

// apostrophe reports the size of an apostrophe (' or ’) at s[i:], or 0.
func apostrophe(s string, i int) int {
	if s[i] == '\'' {
		return 1
	}
	if len(s)-i >= 3 && s[i:i+3] == "’" {
		return 3
	}
	return 0
}

func analyse(s string) *doc {
	d := &doc{s: s, low: lowerASCII(s), bounds: make([]int, 1, 4), words: make([]word, 0, len(s)/5+1)}
	low := d.low
	for i := 0; i < len(low); {
		ok, n := wordRune(low, i)
		if !ok {
			// Clause boundaries: sentence ends, and ", " before a word (not before
			// the year of "March 3, 1990").
			switch c := low[i]; c {
			case '!', '?', ';', '\n':
				d.bounds = append(d.bounds, i+1)
			case '.':
				if i+1 == len(low) || low[i+1] == ' ' || low[i+1] == '\n' {
					d.bounds = append(d.bounds, i+1)
				}
			case ',':
				if j := i + 1; j+1 < len(low) && low[j] == ' ' && !('0' <= low[j+1] && low[j+1] <= '9') {
					d.bounds = append(d.bounds, i+1)
				}
			}
			i += n
			continue
		}
		start := i
		i = wordEnd(low, i)
		w := word{start: start, end: i, w: low[start:i]}
		if len(w.w) > 0 {
			w.w = replaceCurly(w.w)
		}
		if n := len(w.w); n > 2 && w.w[n-2:] == "'s" {
			w.w, w.poss = w.w[:n-2], true
		}
		if w.w == "but" {
			d.bounds = append(d.bounds, start)
		}
		d.words = append(d.words, w)
	}
	d.bounds = append(d.bounds, len(low))
	d.clauses = make([]int, len(d.words))
	c := 0
	for i, w := range d.words {
		for c+1 < len(d.bounds)-1 && d.bounds[c+1] <= w.start {
			c++
		}
		d.clauses[i] = c
	}
	return d
}

// wordEnd returns the end of the word starting at low[i]. An inner apostrophe
// keeps the word going: "i'm", "son's".
func wordEnd(low string, i int) int {
	for i < len(low) {
		if ok, n := wordRune(low, i); ok {
			i += n
			continue
		}
		if a := apostrophe(low, i); a > 0 && i+a < len(low) {
			if ok, _ := wordRune(low, i+a); ok {
				i += a
				continue
			}
		}
		break
	}
	return i
}

func replaceCurly(w string) string {
	for i := 0; i+3 <= len(w); i++ {
		if w[i:i+3] == "’" {
			return w[:i] + "'" + replaceCurly(w[i+3:])
		}
	}
	return w
}

// clause returns the clause index of byte offset i.
func (d *doc) clause(i int) int {
	c := 0
	for c+1 < len(d.bounds)-1 && d.bounds[c+1] <= i {
		c++
	}
	return c
}

// clauseSpan returns the bytes of clause c.
func (d *doc) clauseSpan(c int) (int, int) { return d.bounds[c], d.bounds[c+1] }
