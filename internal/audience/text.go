package audience

// textCol holds a text value per row, ASCII-lowered (every text test of
// D14 ignores ASCII case, and date text holds no letters a test could
// tell apart), or missing. A column of few distinct values is
// dictionary-coded: a test runs once per distinct value, then a table
// lookup per row. Past maxDict distinct values (phone numbers, emails) it
// keeps the bytes of each row instead: a dictionary's map would cost more
// than the text.
type textCol struct {
	// dictionary form: codes[row] indexes vals; code 0 is missing.
	codes []uint32
	vals  []string
	index map[string]uint32
	// plain form (plain true): the row's text is arena[off:off+ln];
	// ln = missingLen is missing.
	plain bool
	arena []byte
	off   []uint32
	ln    []uint32
}

const (
	maxDict    = 1 << 16
	missingLen = ^uint32(0)
)

func newTextCol() *textCol {
	return &textCol{vals: []string{""}, index: map[string]uint32{}}
}

func (c *textCol) len() int {
	if c.plain {
		return len(c.off)
	}
	return len(c.codes)
}

// set stores s (already lowered) at row i, growing the column with
// missing values; ok false stores missing.
func (c *textCol) set(i int, s string, ok bool) {
	if c.plain {
		setPlain(c, i, s, ok)
		return
	}
	var code uint32
	if ok {
		var found bool
		if code, found = c.index[s]; !found {
			if len(c.vals) >= maxDict {
				c.toPlain()
				setPlain(c, i, s, ok)
				return
			}
			code = uint32(len(c.vals))
			c.vals = append(c.vals, s)
			c.index[s] = code
		}
	}
	c.setCode(i, code)
}

// setBytes is set of bytes the column does not keep (lowered already):
// a value already in the dictionary costs no allocation.
func (c *textCol) setBytes(i int, b []byte, ok bool) {
	switch {
	case c.plain:
		setPlain(c, i, b, ok)
	case !ok:
		c.setCode(i, 0)
	default:
		if code, found := c.index[string(b)]; found {
			c.setCode(i, code)
		} else {
			c.set(i, string(b), true)
		}
	}
}

// setCode stores a dictionary code at row i, growing the column.
func (c *textCol) setCode(i int, code uint32) {
	for len(c.codes) <= i {
		c.codes = append(c.codes, 0)
	}
	c.codes[i] = code
}

// setPlain stores v at row i of a plain column, growing the column with
// missing values; ok false stores missing. An update leaves the old
// bytes behind; a reload compacts.
func setPlain[T string | []byte](c *textCol, i int, v T, ok bool) {
	for len(c.off) <= i {
		c.off = append(c.off, 0)
		c.ln = append(c.ln, missingLen)
	}
	if !ok {
		c.ln[i] = missingLen
		return
	}
	c.off[i], c.ln[i] = uint32(len(c.arena)), uint32(len(v))
	c.arena = append(c.arena, v...)
}

func (c *textCol) toPlain() {
	c.plain = true
	c.off = make([]uint32, len(c.codes), cap(c.codes))
	c.ln = make([]uint32, len(c.codes), cap(c.codes))
	for i, code := range c.codes {
		if code == 0 {
			c.ln[i] = missingLen
			continue
		}
		c.off[i], c.ln[i] = uint32(len(c.arena)), uint32(len(c.vals[code]))
		c.arena = append(c.arena, c.vals[code]...)
	}
	c.codes, c.vals, c.index = nil, nil, nil
}

// match sets in out the rows whose value is present and satisfies pred.
func (c *textCol) match(out bitmap, pred func(string) bool) {
	if !c.plain {
		hit := make([]bool, len(c.vals))
		for code, v := range c.vals[1:] {
			hit[code+1] = pred(v)
		}
		for i, code := range c.codes {
			if hit[code] {
				out.set(i)
			}
		}
		return
	}
	for i, l := range c.ln {
		if l != missingLen && pred(string(c.arena[c.off[i]:c.off[i]+l])) {
			out.set(i)
		}
	}
}

// get returns row i's value.
func (c *textCol) get(i int) (string, bool) {
	if i >= c.len() {
		return "", false
	}
	if !c.plain {
		return c.vals[c.codes[i]], c.codes[i] != 0
	}
	if c.ln[i] == missingLen {
		return "", false
	}
	return string(c.arena[c.off[i] : c.off[i]+c.ln[i]]), true
}

// permute reorders the rows: row i takes old row perm[i].
func (c *textCol) permute(perm []int32) {
	if !c.plain {
		c.codes = permuted(c.codes, perm)
		return
	}
	old := len(c.ln)
	c.off, c.ln = permuted(c.off, perm), permuted(c.ln, perm)
	for i, p := range perm {
		if int(p) >= old {
			c.ln[i] = missingLen
		}
	}
}

// permuted reorders s by perm, growing it to len(perm) with zero values.
func permuted[T any](s []T, perm []int32) []T {
	out := make([]T, len(perm))
	for i, p := range perm {
		if int(p) < len(s) {
			out[i] = s[p]
		}
	}
	return out
}

func (c *textCol) bytes() int64 {
	if !c.plain {
		n := int64(len(c.codes))*4 + int64(len(c.vals))*16
		for _, v := range c.vals {
			n += int64(len(v))
		}
		return n + int64(len(c.index))*40
	}
	return int64(len(c.arena)) + int64(len(c.off))*8
}

// lowerAppend appends b to dst with ASCII letters folded.
func lowerAppend(dst, b []byte) []byte {
	for _, ch := range b {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		dst = append(dst, ch)
	}
	return dst
}

// asciiLower folds ASCII letters only, as the SQL compiler does.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
