package console

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
)

// The segment builder's form (issue #32, D14): conditions in groups, each
// group "all of these", the groups "any of these"; a condition is a field,
// a condition in words and its value or values. "Is one of" has no D14
// operator: it is saved as one AND group per value (with the group's other
// conditions copied into each), which is exactly what a client of the API
// would POST for that meaning; a saved segment is shown collapsed again.

// criterionRow is one condition of the builder.
type criterionRow struct {
	Index, Num int // Num counts from 1, for people
	Group      int // the builder's group, from 0
	Attr, Op   string
	Values     []string
	Error      string
}

func (r criterionRow) values() []string { return r.Values }

// Value is the row's one value (the first).
func (r criterionRow) Value() string {
	if len(r.Values) == 0 {
		return ""
	}
	return r.Values[0]
}

// rowOf shows a stored criterion as a builder row.
func rowOf(cr parley.SegmentCriterion) criterionRow {
	a := cr.Attribute
	r := criterionRow{Attr: attrKey(a.DimensionType, a.FieldName, a.FieldType), Op: strconv.FormatInt(cr.OperatorType, 10)}
	if a.DimensionType == parley.DimensionSegment {
		r.Attr = segmentKey
	}
	switch {
	case cr.StrFieldValue != nil:
		r.Values = []string{*cr.StrFieldValue}
	case cr.IntFieldValue != nil:
		r.Values = []string{strconv.FormatInt(*cr.IntFieldValue, 10)}
	case cr.FloatFieldValue != nil:
		r.Values = []string{strconv.FormatFloat(*cr.FloatFieldValue, 'f', -1, 64)}
	case cr.BoolFieldValue != nil:
		r.Values = []string{strconv.FormatBool(*cr.BoolFieldValue)}
	case cr.DateFieldValue != nil:
		r.Values = []string{*cr.DateFieldValue}
	}
	return r
}

// oneOfBase is the D14 operator "is one of" is saved with for a field of
// type typ: EQUALS, or CONTAINS (has the item) for a LIST; "" where "is
// one of" is not offered.
func oneOfBase(dim, typ int64) string {
	switch {
	case dim == parley.DimensionSegment:
		return ""
	case typ == parley.CustomList:
		return "7"
	case typ == parley.CustomInteger || typ == parley.CustomFloat || typ == parley.CustomString:
		return "1"
	}
	return ""
}

// collapse shows stored criteria as builder groups: the criteria of each
// AND group in the order met, and a group that differs from the one
// before only in the value of one "is" (for a list: "includes") condition
// merged into it as "is one of", so that expandGroups gives the criteria
// back in the same order.
func collapse(criteria parley.Criteria) [][]criterionRow {
	var groups [][]criterionRow
	index := map[int64]int{}
	for _, cr := range criteria {
		i, ok := index[cr.AndGroupNum]
		if !ok {
			i = len(groups)
			index[cr.AndGroupNum] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], rowOf(cr))
	}
	var out [][]criterionRow
	for _, g := range groups {
		if n := len(out); n > 0 {
			if j := mergeAt(out[n-1], g); j >= 0 {
				out[n-1][j].Op = opOneOf
				out[n-1][j].Values = append(out[n-1][j].Values, g[j].Values...)
				continue
			}
		}
		out = append(out, g)
	}
	for i := range out {
		for j := range out[i] {
			out[i][j].Group = i
		}
	}
	return out
}

// mergeAt is the one position where group g differs from prev by the value
// of an "is" condition that prev holds (or holds as "is one of") on the
// same field; -1 for none.
func mergeAt(prev, g []criterionRow) int {
	if len(prev) != len(g) {
		return -1
	}
	at := -1
	for j := range g {
		p, q := prev[j], g[j]
		if p.Attr == q.Attr && p.Op == q.Op && slices.Equal(p.Values, q.Values) {
			continue
		}
		if at >= 0 || p.Attr != q.Attr || len(q.Values) != 1 {
			return -1
		}
		dim, typ := attrDimType(q.Attr)
		base := oneOfBase(dim, typ)
		if base == "" || q.Op != base || (p.Op != base && p.Op != opOneOf) || slices.Contains(p.Values, q.Values[0]) {
			return -1
		}
		at = j
	}
	return at
}

// attrDimType reads the dimension and type of a field's form key.
func attrDimType(key string) (dim, typ int64) {
	parts := strings.SplitN(key, ":", 3)
	if len(parts) != 3 {
		return 0, 0
	}
	dim, _ = strconv.ParseInt(parts[0], 10, 64)
	typ, _ = strconv.ParseInt(parts[2], 10, 64)
	return dim, typ
}

// readRows reads the builder's rows as sent, ordered by group (the order
// the page shows them in, so a row's index is its place on the page), the
// groups numbered from 0. keepEmpty keeps rows without a field (a
// condition just added); else they are left out.
func (c *Ctx) readRows(keepEmpty bool) []criterionRow {
	n, _ := strconv.Atoi(c.Form("rows"))
	n = min(max(n, 0), parley.MaxCriteria+1)
	remove := -1
	if a, ok := strings.CutPrefix(c.Form("action"), "remove-"); ok {
		remove, _ = strconv.Atoi(a)
	}
	var rows []criterionRow
	for i := range n {
		k := strconv.Itoa(i)
		g, _ := strconv.Atoi(c.Form("group_" + k))
		r := criterionRow{Attr: c.Form("attr_" + k), Op: c.Form("op_" + k), Group: max(g, 0)}
		for _, v := range c.R.PostForm["value_"+k] {
			if v = strings.TrimSpace(v); v != "" {
				r.Values = append(r.Values, v)
			}
		}
		if (r.Attr == "" && !keepEmpty) || i == remove {
			continue
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b criterionRow) int { return a.Group - b.Group })
	g, last := -1, -1
	for i := range rows {
		if rows[i].Group != last {
			g, last = g+1, rows[i].Group
		}
		rows[i].Group = g
	}
	return rows
}

// rowValues are the row's values as its condition reads them: for "is
// one of" on a typed field, values separated by commas, each once.
func rowValues(f segField, r criterionRow) []string {
	if r.Op != opOneOf {
		return r.Values
	}
	var out []string
	for _, v := range r.Values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// criterion turns one value of a row into a D14 criterion, or says in
// plain words what is wrong with it.
func (fs fieldSet) criterion(f segField, op string, v string, group int64) (parley.SegmentCriterion, string) {
	code, _ := strconv.ParseInt(op, 10, 64)
	if op == opOneOf {
		code, _ = strconv.ParseInt(oneOfBase(f.Dim, f.Type), 10, 64)
	}
	cr := parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: f.Dim, FieldName: f.Name, FieldType: f.Type},
		OperatorType: code, AndGroupNum: group}
	if code == parley.OpIsSet || code == parley.OpIsNotSet {
		return cr, ""
	}
	menu := f.Kind == kindBool || f.Kind == kindEnum || f.Kind == kindState || f.Kind == kindSegment || (f.Kind == kindList && len(f.Enum) > 0)
	if v == "" {
		if menu && code < parley.OpInLastDays {
			return cr, "Choose a value."
		}
		return cr, "Enter a value."
	}
	if f.Kind == kindSegment {
		id, err := strconv.ParseInt(v, 10, 64)
		if _, ok := fs.Segments[id]; err != nil || !ok {
			return cr, "Choose a segment."
		}
		cr.IntFieldValue = &id
		return cr, ""
	}
	if code >= parley.OpInLastDays {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > parley.MaxDays {
			return cr, "Enter a number of days, like 30."
		}
		cr.IntFieldValue = &n
		return cr, ""
	}
	switch f.Kind {
	case kindBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return cr, "Choose yes or no."
		}
		cr.BoolFieldValue = &b
		return cr, ""
	case kindState:
		code, ok := stateCode(v)
		if !ok {
			return cr, "Choose a state: a name like New York or a code like NY."
		}
		cr.StrFieldValue = &code
		return cr, ""
	case kindEnum, kindList:
		if len(f.Enum) > 0 {
			i := slices.IndexFunc(f.Enum, func(e string) bool { return strings.EqualFold(e, v) })
			if i < 0 {
				return cr, "Choose one of the field's values."
			}
			v = f.Enum[i]
		}
	case kindDate:
		if _, ok := parley.ParseCriterionDate(v); !ok {
			return cr, "Enter a date, like 2026-12-31."
		}
		cr.DateFieldValue = &v
		return cr, ""
	case kindNumber:
		if f.Type == parley.CustomInteger {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return cr, "Enter a whole number, like 3."
			}
			cr.IntFieldValue = &n
			return cr, ""
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return cr, "Enter a number, like 2.5."
		}
		cr.FloatFieldValue = &x
		return cr, ""
	}
	if n := utf8.RuneCountInString(v); n > parley.MaxCriterionText {
		return cr, "Use at most " + strconv.Itoa(parley.MaxCriterionText) + " characters (" + strconv.Itoa(n) + " given)."
	}
	cr.StrFieldValue = &v
	return cr, ""
}

// rowCriteria turns one row into its criteria, one per value for "is one
// of", all in AND group 0; it sets the row's error in plain words.
func (fs fieldSet) rowCriteria(r *criterionRow) []parley.SegmentCriterion {
	f, ok := fs.ByKey[r.Attr]
	if !ok {
		r.Error = "Choose a field: this one no longer exists."
		return nil
	}
	if !opFits(f, r.Op) {
		r.Error = "Choose a condition for " + f.Label + "."
		return nil
	}
	vals := rowValues(f, *r)
	if r.Op == opOneOf && len(vals) == 0 {
		r.Error = "Choose or enter at least one value."
		return nil
	}
	if r.Op != opOneOf {
		vals = []string{r.Value()}
	}
	// Values picked from a menu are saved in the menu's order, whatever
	// order they were picked or sent in.
	slices.SortStableFunc(vals, func(a, b string) int { return menuIndex(f, a) - menuIndex(f, b) })
	var out []parley.SegmentCriterion
	for _, v := range vals {
		cr, bad := fs.criterion(f, r.Op, v, 0)
		if bad != "" {
			if r.Op == opOneOf {
				bad = v + ": " + bad
			}
			r.Error = bad
			return nil
		}
		out = append(out, cr)
		if cr.OperatorType == parley.OpIsSet || cr.OperatorType == parley.OpIsNotSet {
			break
		}
	}
	return out
}

// expandGroups turns valid rows into the D14 criteria they mean: each
// builder group, with each "is one of" spelled out, becomes as many AND
// groups as its values combine to, numbered from 0 in the page's order.
// per holds each row's criteria (rowCriteria). rowOfCriterion gives, for
// each criterion, the row it came from.
func expandGroups(rows []criterionRow, per [][]parley.SegmentCriterion) (criteria parley.Criteria, rowOfCriterion []int) {
	criteria = parley.Criteria{}
	var group int64
	for start := 0; start < len(rows); {
		end := start
		for end < len(rows) && rows[end].Group == rows[start].Group {
			end++
		}
		// Each combination of the group's values, the last row's fastest.
		pick := make([]int, end-start)
		for {
			for k := range pick {
				cr := per[start+k][pick[k]]
				cr.AndGroupNum = group
				criteria = append(criteria, cr)
				rowOfCriterion = append(rowOfCriterion, start+k)
				if len(criteria) > parley.MaxCriteria {
					return criteria, rowOfCriterion
				}
			}
			group++
			k := len(pick) - 1
			for ; k >= 0; k-- {
				if pick[k]++; pick[k] < len(per[start+k]) {
					break
				}
				pick[k] = 0
			}
			if k < 0 {
				break
			}
		}
		start = end
	}
	return criteria, rowOfCriterion
}

// menuIndex is where a value stands in its field's menu (states by code
// or name, a field's values in any case); after them, a value not in it.
func menuIndex(f segField, v string) int {
	switch f.Kind {
	case kindState:
		code, _ := stateCode(v)
		if i := slices.IndexFunc(usStates, func(st usState) bool { return st.Code == code }); i >= 0 {
			return i
		}
		return len(usStates)
	case kindEnum, kindList:
		if i := slices.IndexFunc(f.Enum, func(e string) bool { return strings.EqualFold(e, v) }); i >= 0 {
			return i
		}
		return len(f.Enum)
	}
	return 0
}
