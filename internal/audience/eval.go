package audience

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// An evaluator answers resolved criteria (store.ResolveAudience, which
// has already refused what the SQL compiler refuses) over a table, with
// the SQL compiler's semantics (internal/store/segmentsql.go) case by
// case: that compiler is the oracle, and the differential test holds the
// two to the same members.
type evaluator struct {
	t     *table
	pg    bool // PostgreSQL's BOOLEAN test compares a number's text
	today time.Time
	segs  map[int64]*parley.Segment
	// frozen returns a POINT IN TIME segment's members as rows.
	frozen func(id int64) (bitmap, error)
	memo   map[int64]bitmap
}

// all returns every row (deleted ones are taken out by the caller).
func (e *evaluator) all() bitmap {
	b := newBitmap(e.t.n)
	b.fill(e.t.n)
	return b
}

// criteria ORs the groups of criteria with one and_group_num, each the AND
// of its criteria; no criteria select every row.
func (e *evaluator) criteria(cs []parley.SegmentCriterion) (bitmap, error) {
	if len(cs) == 0 {
		return e.all(), nil
	}
	var nums []int64
	groups := map[int64]bitmap{}
	for i := range cs {
		cr := &cs[i]
		b, err := e.criterion(cr)
		if err != nil {
			return nil, err
		}
		if g, ok := groups[cr.AndGroupNum]; ok {
			g.and(b)
		} else {
			groups[cr.AndGroupNum] = b
			nums = append(nums, cr.AndGroupNum)
		}
	}
	out := groups[nums[0]]
	for _, n := range nums[1:] {
		out.or(groups[n])
	}
	return out, nil
}

func (e *evaluator) criterion(cr *parley.SegmentCriterion) (bitmap, error) {
	a := cr.Attribute
	if a.DimensionType == parley.DimensionSegment {
		return e.membership(cr)
	}
	f, err := e.field(a)
	if err != nil {
		return nil, err
	}
	op := cr.OperatorType
	out := newBitmap(e.t.n)
	negate := false
	switch op {
	case parley.OpIsSet, parley.OpIsNotSet:
		f.present(out)
		if op == parley.OpIsNotSet {
			out.not(e.t.n)
		}
		return out, nil
	case parley.OpNotEquals, parley.OpDoesNotContain:
		negate, op = true, op-1 // the negation of EQUALS, CONTAINS
	}
	if err := e.compare(out, f, op, cr); err != nil {
		return nil, err
	}
	if negate {
		out.not(e.t.n)
	}
	return out, nil
}

// field is how one criterion's field reads: each test sets the rows
// whose value is present and passes.
type field struct {
	typ     int64
	present func(out bitmap)
	// text: a present value's lowered text (STRING, and DATE held as
	// text, with iso to read it as YYYY-MM-DD).
	text func(out bitmap, pred func(string) bool)
	iso  func(string) string
	// number: a present number (INTEGER, FLOAT).
	number func(out bitmap, pred func(float64) bool)
	// stamp: a present timestamp in microseconds (DATE).
	stamp func(out bitmap, pred func(int64) bool)
	// truth: a present BOOLEAN that is v.
	truth func(out bitmap, v bool)
	// hasItem: a LIST with the item.
	hasItem func(out bitmap, item string)
}

func (e *evaluator) field(a parley.SegmentAttribute) (field, error) {
	t := e.t
	bad := fmt.Errorf("audience: %q is not a field of dimension %d type %d", a.FieldName, a.DimensionType, a.FieldType)
	switch a.DimensionType {
	case parley.DimensionContact:
		if parley.ContactFieldTypes[a.FieldName] != a.FieldType {
			return field{}, bad
		}
		switch a.FieldName {
		case "date_created":
			return e.stampField(a.FieldType, t.stamp[sDateCreated]), nil
		case "messaging_consent":
			col := t.consent
			return field{typ: a.FieldType,
				present: func(out bitmap) {
					for i, v := range col {
						if v >= 0 {
							out.set(i)
						}
					}
				},
				truth: func(out bitmap, want bool) {
					w := int8(0)
					if want {
						w = 1
					}
					for i, v := range col {
						if v == w {
							out.set(i)
						}
					}
				}}, nil
		}
		c, ok := textNames[a.FieldName]
		if !ok {
			return field{}, bad
		}
		col := t.text[c]
		f := field{typ: a.FieldType,
			present: func(out bitmap) { col.match(out, func(string) bool { return true }) },
			text:    col.match}
		if a.FieldName == "date_of_birth" {
			f.iso = isoFromUS // MM/DD/YYYY (D5)
		}
		return f, nil
	case parley.DimensionActivity:
		if parley.ActivityFieldTypes[a.FieldName] != a.FieldType {
			return field{}, bad
		}
		switch a.FieldName {
		case "inbound_count", "outbound_count": // a contact without messages has count 0
			col := t.inbound
			if a.FieldName == "outbound_count" {
				col = t.outbound
			}
			return field{typ: a.FieldType,
				present: func(out bitmap) { out.fill(t.n) },
				number: func(out bitmap, pred func(float64) bool) {
					for i, v := range col {
						if pred(float64(v)) {
							out.set(i)
						}
					}
				}}, nil
		}
		s, ok := stampNames[a.FieldName]
		if !ok {
			return field{}, bad
		}
		return e.stampField(a.FieldType, t.stamp[s]), nil
	case parley.DimensionCustomData:
		return e.customField(a.FieldName, a.FieldType), nil
	}
	return field{}, bad
}

func (e *evaluator) stampField(typ int64, col []int64) field {
	return field{typ: typ,
		present: func(out bitmap) {
			for i, v := range col {
				if v != noStamp {
					out.set(i)
				}
			}
		},
		stamp: func(out bitmap, pred func(int64) bool) {
			for i, v := range col {
				if v != noStamp && pred(v) {
					out.set(i)
				}
			}
		}}
}

// customField reads custom_data[key] by the criterion's type; a value of
// another JSON type counts as missing, as in SQL.
func (e *evaluator) customField(key string, typ int64) field {
	c := e.t.custom[key]
	if c == nil {
		c = &customCol{}
	}
	kinds := func(out bitmap, ok func(uint8) bool) {
		for i, k := range c.kind {
			if ok(k) {
				out.set(i)
			}
		}
	}
	isNum := func(k uint8) bool { return k == kNumber || k == kNumber0 || k == kNumber1 }
	text := func(out bitmap, pred func(string) bool) {
		if c.str != nil {
			c.str.match(out, pred)
		}
	}
	f := field{typ: typ}
	switch typ {
	case parley.CustomInteger, parley.CustomFloat:
		f.present = func(out bitmap) { kinds(out, isNum) }
		f.number = func(out bitmap, pred func(float64) bool) {
			for i, k := range c.kind {
				if isNum(k) && pred(c.num[i]) {
					out.set(i)
				}
			}
		}
	case parley.CustomString:
		f.present = func(out bitmap) { kinds(out, func(k uint8) bool { return k == kString }) }
		f.text = text
	case parley.CustomDate:
		// MM/DD/YYYY or YYYY-MM-DD (D6), compared as YYYY-MM-DD text.
		f.present = func(out bitmap) { kinds(out, func(k uint8) bool { return k == kString }) }
		f.text = text
		f.iso = func(s string) string {
			if substr(s, 3, 1) == "/" {
				return isoFromUS(s)
			}
			return s
		}
	case parley.CustomBoolean:
		// "true"/"false" in any case, or 1/0 (D6). SQLite compares a
		// number's value with 1 and 0, PostgreSQL the number's text.
		one := func(i int, k uint8) bool {
			if e.pg {
				return k == kNumber1
			}
			return isNum(k) && c.num[i] == 1
		}
		zero := func(i int, k uint8) bool {
			if e.pg {
				return k == kNumber0
			}
			return isNum(k) && c.num[i] == 0
		}
		f.present = func(out bitmap) {
			text(out, func(s string) bool { return s == "true" || s == "false" })
			for i, k := range c.kind {
				if one(i, k) || zero(i, k) {
					out.set(i)
				}
			}
		}
		f.truth = func(out bitmap, want bool) {
			if want {
				text(out, func(s string) bool { return s == "true" })
				for i, k := range c.kind {
					if one(i, k) {
						out.set(i)
					}
				}
				return
			}
			// NOT truth, of present values.
			text(out, func(s string) bool { return s == "false" })
			for i, k := range c.kind {
				if zero(i, k) {
					out.set(i)
				}
			}
		}
	case parley.CustomList:
		f.present = func(out bitmap) { kinds(out, func(k uint8) bool { return k == kArray }) }
		f.hasItem = func(out bitmap, it string) {
			want := asciiLower(it)
			n, isNum := parseNumber(it)
			for row, items := range c.list {
				if slices.ContainsFunc(items, func(x item) bool { return x.str && x.s == want || isNum && x.num && x.n == n }) {
					out.set(int(row))
				}
			}
		}
	}
	return f
}

// parseNumber reads a LIST item criterion as a number, as the compiler.
func parseNumber(s string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f, err == nil && s != ""
}

// substr is SQL's substr(s, start, n) of characters, 1-based.
func substr(s string, start, n int) string {
	i := 0
	for k := 1; k < start && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	j := i
	for k := 0; k < n && j < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[j:])
		j += w
	}
	return s[i:j]
}

// isoFromUS is the compiler's 'MM/DD/YYYY' → 'YYYY-MM-DD', whatever the
// text.
func isoFromUS(s string) string {
	return substr(s, 7, 4) + "-" + substr(s, 1, 2) + "-" + substr(s, 4, 2)
}

func (e *evaluator) compare(out bitmap, f field, op int64, cr *parley.SegmentCriterion) error {
	bad := fmt.Errorf("audience: criterion does not compile (operator %d, type %d)", op, f.typ)
	switch f.typ {
	case parley.CustomBoolean:
		if op != parley.OpEquals || cr.BoolFieldValue == nil {
			return bad
		}
		f.truth(out, *cr.BoolFieldValue)
		return nil
	case parley.CustomString, parley.CustomList:
		if cr.StrFieldValue == nil {
			return bad
		}
		s := asciiLower(*cr.StrFieldValue)
		switch {
		case f.typ == parley.CustomList && (op == parley.OpEquals || op == parley.OpContains):
			f.hasItem(out, *cr.StrFieldValue)
		case f.typ == parley.CustomList:
			return bad
		case op == parley.OpEquals:
			f.text(out, func(v string) bool { return v == s })
		case op == parley.OpContains:
			f.text(out, func(v string) bool { return strings.Contains(v, s) })
		case op == parley.OpStartsWith:
			f.text(out, func(v string) bool { return strings.HasPrefix(v, s) })
		default:
			return bad
		}
		return nil
	case parley.CustomInteger, parley.CustomFloat:
		var v float64
		switch {
		case f.typ == parley.CustomInteger && cr.IntFieldValue != nil:
			v = float64(*cr.IntFieldValue)
		case f.typ == parley.CustomFloat && cr.FloatFieldValue != nil:
			v = *cr.FloatFieldValue
		default:
			return bad
		}
		var pred func(float64) bool
		switch op {
		case parley.OpEquals:
			pred = func(x float64) bool { return x == v }
		case parley.OpGreaterThan:
			pred = func(x float64) bool { return x > v }
		case parley.OpGreaterOrEqual:
			pred = func(x float64) bool { return x >= v }
		case parley.OpLessThan:
			pred = func(x float64) bool { return x < v }
		case parley.OpLessOrEqual:
			pred = func(x float64) bool { return x <= v }
		default:
			return bad
		}
		f.number(out, pred)
		return nil
	case parley.CustomDate:
		return e.compareDate(out, f, op, cr, bad)
	}
	return bad
}

// compareDate compares by calendar day in UTC, as the compiler: text
// dates as 'YYYY-MM-DD' text, timestamps against day bounds in
// microseconds.
func (e *evaluator) compareDate(out bitmap, f field, op int64, cr *parley.SegmentCriterion, bad error) error {
	day := func(t time.Time) string { return t.Format("2006-01-02") }
	// between: from ≤ value < to; a nil bound is open; a bound past year
	// 9999 as in the compiler.
	between := func(from, to *time.Time) {
		if to != nil && !parley.InYearRange(*to) {
			to = nil
		}
		if from != nil && !parley.InYearRange(*from) {
			return // 1 = 0
		}
		if f.stamp != nil {
			lo, hi := int64(-1<<63+1), int64(1<<63-1)
			if from != nil {
				lo = from.UnixMicro()
			}
			var pred func(int64) bool
			if to != nil {
				hi = to.UnixMicro()
				pred = func(v int64) bool { return v >= lo && v < hi }
			} else {
				pred = func(v int64) bool { return v >= lo }
			}
			f.stamp(out, pred)
			return
		}
		var lo, hi string
		if from != nil {
			lo = day(*from)
		}
		if to != nil {
			hi = day(*to)
		}
		f.text(out, func(s string) bool {
			v := f.iso(s)
			return (from == nil || v >= lo) && (to == nil || v < hi)
		})
	}
	at := func(t time.Time) *time.Time { return &t }
	if op >= parley.OpInLastDays {
		if cr.IntFieldValue == nil || *cr.IntFieldValue < 0 || *cr.IntFieldValue > parley.MaxDays {
			return bad
		}
		n := int(*cr.IntFieldValue)
		switch op {
		case parley.OpInLastDays:
			between(at(e.today.AddDate(0, 0, -n)), at(e.today.AddDate(0, 0, 1)))
		case parley.OpMoreThanDaysAgo:
			between(nil, at(e.today.AddDate(0, 0, -n)))
		case parley.OpAnniversaryWithinDays:
			e.anniversary(out, f, n)
		default:
			return bad
		}
		return nil
	}
	if cr.DateFieldValue == nil {
		return bad
	}
	d, ok := parley.ParseCriterionDate(*cr.DateFieldValue)
	if !ok {
		return bad
	}
	next := d.AddDate(0, 0, 1)
	switch op {
	case parley.OpEquals:
		between(at(d), at(next))
	case parley.OpGreaterThan:
		between(at(next), nil)
	case parley.OpGreaterOrEqual:
		between(at(d), nil)
	case parley.OpLessThan:
		between(nil, at(d))
	case parley.OpLessOrEqual:
		between(nil, at(next))
	default:
		return bad
	}
	return nil
}

// anniversary: month and day within today … today + n, the year ignored,
// compared as 'MM-DD' text; a window across a year end is its two ends
// OR'ed.
func (e *evaluator) anniversary(out bitmap, f field, n int) {
	if n >= 366 {
		f.present(out)
		return
	}
	end := e.today.AddDate(0, 0, n)
	from, to := e.today.Format("01-02"), end.Format("01-02")
	across := end.Year() != e.today.Year()
	in := func(md string) bool {
		if across {
			return md >= from || md <= to
		}
		return md >= from && md <= to
	}
	if f.stamp != nil {
		// strftime('%m-%d', µs / 1000000, 'unixepoch'): whole seconds, UTC.
		memo := map[int64]bool{}
		f.stamp(out, func(v int64) bool {
			d := floorDiv(v/1_000_000, 86400)
			hit, ok := memo[d]
			if !ok {
				hit = in(time.Unix(d*86400, 0).UTC().Format("01-02"))
				memo[d] = hit
			}
			return hit
		})
		return
	}
	f.text(out, func(s string) bool { return in(substr(f.iso(s), 6, 5)) })
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// membership: a POINT IN TIME segment's frozen members, or a standard
// segment's criteria.
func (e *evaluator) membership(cr *parley.SegmentCriterion) (bitmap, error) {
	if cr.IntFieldValue == nil {
		return nil, fmt.Errorf("audience: membership without a segment")
	}
	id := *cr.IntFieldValue
	b, ok := e.memo[id]
	if !ok {
		seg := e.segs[id]
		if seg == nil {
			return nil, fmt.Errorf("audience: segment %d not resolved", id)
		}
		var err error
		if seg.Type == parley.SegmentPointInTime {
			b, err = e.frozen(id)
		} else {
			b, err = e.criteria(seg.Criteria)
		}
		if err != nil {
			return nil, err
		}
		e.memo[id] = b
	}
	out := slices.Clone(b)
	if cr.OperatorType == parley.OpNotEquals {
		out.not(e.t.n)
	}
	return out, nil
}

// evaluate returns the live rows of the resolved audience.
func (e *evaluator) evaluate(r *store.ResolvedAudience) (bitmap, error) {
	var b bitmap
	var err error
	if r.PointInTime != 0 {
		b, err = e.frozen(r.PointInTime)
	} else {
		b, err = e.criteria(r.Criteria)
	}
	if err != nil {
		return nil, err
	}
	b.and(e.t.live)
	return b, nil
}
