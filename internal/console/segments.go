package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

// The Segments pages (D19, D14, D15, issue #18): the brand's segments with
// their member count on demand, a builder for D14 criteria with a live
// count, create, edit, archive, and a segment's members a page at a time.
// The same service as the v1 /segments API, so the rules (and the
// criterion index an error names) are the API's. Admins only.
func init() {
	Register(Page{
		Path: "segments", Title: "Segments", Nav: "Segments", Order: 30, Admin: true,
		Template: "segments.html", Get: segmentsPage,
	})
	Register(Page{
		Path: "segments/new", Title: "New segment", Admin: true,
		Template: "segment.html", Get: segmentNew, Post: segmentSave,
	})
	Register(Page{
		Path: "segments/{id}", Title: "Segment", Admin: true,
		Template: "segment.html", Get: segmentEdit, Post: segmentSave,
	})
	// The live count: the builder's criteria as posted, answered as the
	// count fragment (static/live.js posts it as criteria change).
	Register(Page{
		Path: "segments/count", Title: "Segment", Admin: true,
		Template: "segment.html", Post: segmentCount,
	})
	Register(Page{
		Path: "segments/{id}/members", Title: "Members", Admin: true,
		Template: "segment_members.html", Get: segmentMembers,
	})
}

// segmentMembersPage is how many members the members page shows at once.
const segmentMembersPage = 50

// segmentsData is what segments.html sees.
type segmentsData struct {
	Segments []*parley.Segment
	// Counted is the segment whose count was asked for, and Count it.
	Counted int64
	Count   *parley.SegmentCount
	Notice  string
}

func segmentsPage(c *Ctx) error {
	list, err := c.Service.ListSegments(c, c.BrandID())
	if err != nil {
		return err
	}
	d := segmentsData{Segments: list}
	if c.R.URL.Query().Get("done") == "archived" {
		d.Notice = "Segment archived."
	}
	// The count runs a query over the brand's contacts, so it is asked
	// for, one segment at a time, not run for every row on every view.
	if s := c.R.URL.Query().Get("count"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 1 {
			return parley.SegmentNotFound(0)
		}
		if d.Count, err = c.Service.CountSegment(c, c.BrandID(), id); err != nil {
			return err
		}
		d.Counted = id
	}
	return c.Render(d)
}

// attrOption is one choice of the builder's attribute select: a D14
// dimension, field and type, as "dimension:field:type".
type attrOption struct {
	Value, Label, Group string
}

// criterionRow is one criterion of the builder, as sent.
type criterionRow struct {
	Index, Num             int // Num counts from 1, for people
	Attr, Op, Value, Group string
	Error                  string
}

// segmentForm is the builder as sent.
type segmentForm struct {
	Name, Description, Type string
	Rows                    []criterionRow
}

// segmentData is what segment.html sees.
type segmentData struct {
	Segment *parley.Segment // nil for a new one
	Form    segmentForm
	Errors  map[string]string
	Attrs   []attrOption
	Ops     []attrOption
	// Live is the count fragment's data when it was asked for.
	Live   *liveCount
	Notice string
}

// liveCount is the count fragment: the count, or the error of the
// criterion that stops it.
type liveCount struct {
	Count *int64
	Error string
	Row   int // the criterion the error names, -1 for none
}

// RowNum is Row counted from 1, for people.
func (l liveCount) RowNum() int { return l.Row + 1 }

// Action is the form's post path below /console/.
func (d segmentData) Action() string {
	if d.Segment == nil {
		return "segments/new"
	}
	return "segments/" + strconv.FormatInt(d.Segment.ID, 10)
}

// attrOptions are the attributes criteria may test: the contact fields,
// the brand's custom data, messaging activity, and membership of another
// of the brand's segments (D14).
func (c *Ctx) attrOptions(self int64) ([]attrOption, error) {
	var out []attrOption
	add := func(group string, dim int64, m map[string]int64) {
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		}) {
			out = append(out, attrOption{Group: group, Label: k + " (" + parley.TypeNames[m[k]] + ")",
				Value: strconv.FormatInt(dim, 10) + ":" + k + ":" + strconv.FormatInt(m[k], 10)})
		}
	}
	add("Contact field", parley.DimensionContact, parley.ContactFieldTypes)
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return nil, err
	}
	custom := map[string]int64{}
	for _, f := range fields {
		custom[parley.CustomDataKey(f.FieldName)] = int64(f.CustomDataType)
	}
	add("Custom data", parley.DimensionCustomData, custom)
	add("Messaging activity", parley.DimensionActivity, parley.ActivityFieldTypes)
	out = append(out, attrOption{Group: "Segment", Label: "member of segment (value: its id)", Value: "4::1"})
	return out, nil
}

// opOptions are the D14 operators by code.
func opOptions() []attrOption {
	var out []attrOption
	for op := int64(1); op <= parley.OpAnniversaryWithinDays; op++ {
		out = append(out, attrOption{Value: strconv.FormatInt(op, 10), Label: parley.OperatorNames[op]})
	}
	return out
}

func (c *Ctx) renderSegment(status int, d segmentData, errMsg string) error {
	var self int64
	if d.Segment != nil {
		self = d.Segment.ID
	}
	attrs, err := c.attrOptions(self)
	if err != nil {
		return err
	}
	d.Attrs, d.Ops = attrs, opOptions()
	// One empty row to add a criterion to.
	d.Form.Rows = append(d.Form.Rows, criterionRow{Op: "1", Group: nextGroup(d.Form.Rows)})
	for i := range d.Form.Rows {
		d.Form.Rows[i].Index, d.Form.Rows[i].Num = i, i+1
	}
	if d.Form.Type == "" {
		d.Form.Type = parley.SegmentStandard
	}
	return c.RenderStatus(status, d, errMsg)
}

// nextGroup is the AND group a new row starts in: the last row's.
func nextGroup(rows []criterionRow) string {
	if len(rows) == 0 {
		return "0"
	}
	return rows[len(rows)-1].Group
}

func segmentNew(c *Ctx) error {
	return c.renderSegment(http.StatusOK, segmentData{}, "")
}

// findSegment reads the page's segment, scoped to the operator's brand.
func (c *Ctx) findSegment() (*parley.Segment, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return nil, parley.SegmentNotFound(0)
	}
	return c.Service.FindSegment(c, c.BrandID(), id)
}

func segmentEdit(c *Ctx) error {
	seg, err := c.findSegment()
	if err != nil {
		return err
	}
	c.Title = "Segment " + seg.Name
	d := segmentData{Segment: seg, Form: segmentForm{Name: seg.Name, Description: seg.Description, Type: seg.Type}}
	for _, cr := range seg.Criteria {
		d.Form.Rows = append(d.Form.Rows, rowOf(cr))
	}
	if c.R.URL.Query().Get("done") == "saved" {
		d.Notice = "Segment saved."
	}
	return c.renderSegment(http.StatusOK, d, "")
}

// rowOf shows a stored criterion in the builder.
func rowOf(cr parley.SegmentCriterion) criterionRow {
	a := cr.Attribute
	r := criterionRow{Attr: strconv.FormatInt(a.DimensionType, 10) + ":" + a.FieldName + ":" + strconv.FormatInt(a.FieldType, 10),
		Op: strconv.FormatInt(cr.OperatorType, 10), Group: strconv.FormatInt(cr.AndGroupNum, 10)}
	if a.DimensionType == parley.DimensionSegment {
		r.Attr = "4::1"
	}
	switch {
	case cr.StrFieldValue != nil:
		r.Value = *cr.StrFieldValue
	case cr.IntFieldValue != nil:
		r.Value = strconv.FormatInt(*cr.IntFieldValue, 10)
	case cr.FloatFieldValue != nil:
		r.Value = strconv.FormatFloat(*cr.FloatFieldValue, 'f', -1, 64)
	case cr.BoolFieldValue != nil:
		r.Value = strconv.FormatBool(*cr.BoolFieldValue)
	case cr.DateFieldValue != nil:
		r.Value = *cr.DateFieldValue
	}
	return r
}

// readRows reads the builder's rows: rows without an attribute are left
// out, so a row's index is its criterion's index.
func (c *Ctx) readRows() []criterionRow {
	n, _ := strconv.Atoi(c.Form("rows"))
	n = min(max(n, 0), parley.MaxCriteria+1)
	remove := -1
	if a, ok := strings.CutPrefix(c.Form("action"), "remove-"); ok {
		remove, _ = strconv.Atoi(a)
	}
	var rows []criterionRow
	for i := range n {
		k := strconv.Itoa(i)
		r := criterionRow{Attr: c.Form("attr_" + k), Op: c.Form("op_" + k),
			Value: strings.TrimSpace(c.Form("value_" + k)), Group: strings.TrimSpace(c.Form("group_" + k))}
		if r.Attr == "" || i == remove {
			continue
		}
		rows = append(rows, r)
	}
	return rows
}

// criteriaOf turns rows into criteria; a value that is not of the field's
// type is an error naming the row, as the service names a criterion.
func criteriaOf(rows []criterionRow) (parley.Criteria, error) {
	out := parley.Criteria{}
	for i, r := range rows {
		at := "criteria[" + strconv.Itoa(i) + "]"
		bad := func(member, rule string) error { return parley.FieldError(parley.EValidation, at+"."+member, rule) }
		parts := strings.SplitN(r.Attr, ":", 3)
		if len(parts) != 3 {
			return nil, bad("attribute", "choose a field")
		}
		dim, err1 := strconv.ParseInt(parts[0], 10, 64)
		typ, err2 := strconv.ParseInt(parts[2], 10, 64)
		op, err3 := strconv.ParseInt(r.Op, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, bad("attribute", "choose a field")
		}
		if err3 != nil {
			return nil, bad("operator_type", "choose an operator")
		}
		group, err := strconv.ParseInt(cmpOr(r.Group, "0"), 10, 64)
		if err != nil || group < 0 {
			return nil, bad("and_group_num", "the AND group must be a whole number ≥ 0")
		}
		cr := parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: dim, FieldName: parts[1], FieldType: typ},
			OperatorType: op, AndGroupNum: group}
		if err := setValue(&cr, r.Value, bad); err != nil {
			return nil, err
		}
		out = append(out, cr)
	}
	return out, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// setValue puts the row's value in the member D14 reads for the
// criterion: none for IS_SET and IS_NOT_SET, N days or a segment id as an
// integer, else the member of the field's type.
func setValue(cr *parley.SegmentCriterion, v string, bad func(member, rule string) error) error {
	op, typ := cr.OperatorType, cr.Attribute.FieldType
	if op == parley.OpIsSet || op == parley.OpIsNotSet {
		return nil // no value: one typed is ignored
	}
	if v == "" {
		return bad("value", "a value is required with "+parley.OperatorNames[op])
	}
	intValue := func(what string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return bad("int_field_value", what)
		}
		cr.IntFieldValue = &n
		return nil
	}
	switch {
	case cr.Attribute.DimensionType == parley.DimensionSegment:
		return intValue("must be a segment's id (a whole number)")
	case op >= parley.OpInLastDays && op <= parley.OpAnniversaryWithinDays:
		return intValue("must be a number of days (a whole number)")
	}
	switch typ {
	case parley.CustomInteger:
		return intValue("must be a whole number")
	case parley.CustomFloat:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return bad("float_field_value", "must be a number")
		}
		cr.FloatFieldValue = &f
	case parley.CustomBoolean:
		b, err := strconv.ParseBool(strings.ToLower(v))
		if err != nil {
			return bad("bool_field_value", "must be true or false")
		}
		cr.BoolFieldValue = &b
	case parley.CustomDate:
		cr.DateFieldValue = &v
	default:
		cr.StrFieldValue = &v
	}
	return nil
}

// criterionIndex reads the index of the criterion a service error names
// ("criteria[2].operator_type" → 2), -1 for none.
func criterionIndex(field string) int {
	rest, ok := strings.CutPrefix(field, "criteria[")
	if !ok {
		return -1
	}
	n, _, ok := strings.Cut(rest, "]")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return -1
	}
	return i
}

// rowError puts a criteria error next to its row; it reports whether it
// named one.
func rowError(rows []criterionRow, err error) bool {
	i := criterionIndex(errField(err))
	if i < 0 || i >= len(rows) {
		return false
	}
	rows[i].Error = parley.ErrorMessage(err)
	return true
}

// segmentSave handles the builder's buttons: add or remove a row, count,
// save, and archive.
func segmentSave(c *Ctx) error {
	var seg *parley.Segment
	if c.R.PathValue("id") != "" {
		var err error
		if seg, err = c.findSegment(); err != nil {
			return err
		}
		c.Title = "Segment " + seg.Name
	}
	action := c.Form("action")
	if action == "archive" && seg != nil {
		o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
		if _, err := c.Service.ArchiveSegment(c, o, c.BrandID(), seg.ID); err != nil {
			return err
		}
		return c.Redirect("segments?done=archived")
	}
	d := segmentData{Segment: seg, Form: segmentForm{Name: strings.TrimSpace(c.Form("name")),
		Description: strings.TrimSpace(c.Form("description")), Type: c.Form("type"), Rows: c.readRows()}}
	if action == "add" || strings.HasPrefix(action, "remove-") {
		return c.renderSegment(http.StatusOK, d, "")
	}
	criteria, err := criteriaOf(d.Form.Rows)
	if err == nil && action == "count" {
		var p *parley.SegmentPreview
		if p, err = c.Service.PreviewSegment(c, c.BrandID(), criteria); err == nil {
			d.Live = &liveCount{Count: &p.Count, Row: -1}
			return c.renderSegment(http.StatusOK, d, "")
		}
	}
	if err == nil && action != "count" {
		o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
		if seg == nil {
			seg, err = c.Service.CreateSegment(c, o, c.BrandID(), &parley.Segment{Name: d.Form.Name, IsActive: true, Source: parley.SourceUserDefined,
				Description: d.Form.Description, Type: d.Form.Type, Criteria: criteria})
		} else {
			_, err = c.Service.UpdateSegment(c, o, c.BrandID(), seg.ID, parley.SegmentUpdate{Name: parley.Some(d.Form.Name),
				Description: parley.Some(d.Form.Description), Type: parley.Some(d.Form.Type), Criteria: parley.Some(criteria)})
		}
		if err == nil {
			return c.Redirect("segments/" + strconv.FormatInt(seg.ID, 10) + "?done=saved")
		}
	}
	switch parley.ErrorCode(err) {
	case parley.EValidation, parley.EDuplicate:
	default:
		return err
	}
	status, _ := statusOf(parley.ErrorCode(err))
	if !rowError(d.Form.Rows, err) {
		field := errField(err)
		if field == "" {
			field = "name" // a name the brand uses
		}
		d.Errors = map[string]string{field: parley.ErrorMessage(err)}
	}
	return c.renderSegment(status, d, "Nothing was saved: see below.")
}

// segmentCount answers the live count for the builder's criteria as
// posted: the count, or the error next to the criterion it names.
func segmentCount(c *Ctx) error {
	rows := c.readRows()
	lc := liveCount{Row: -1}
	criteria, err := criteriaOf(rows)
	if err == nil {
		var p *parley.SegmentPreview
		if p, err = c.Service.PreviewSegment(c, c.BrandID(), criteria); err == nil {
			lc.Count = &p.Count
		}
	}
	if err != nil {
		if c.Err() != nil {
			return nil // a newer count replaced this one (live.js aborts it): no one reads the answer
		}
		switch parley.ErrorCode(err) {
		case parley.EValidation:
		case parley.ERateLimited: // the brand's counts at once (issue #31): the next edit counts again
		default:
			return err
		}
		lc.Error, lc.Row = parley.ErrorMessage(err), criterionIndex(errField(err))
	}
	return c.Fragment("count", lc)
}

// membersData is what segment_members.html sees.
type membersData struct {
	Segment *parley.Segment
	Users   []*parley.User
	Next    string
}

func segmentMembers(c *Ctx) error {
	seg, err := c.findSegment()
	if err != nil {
		return err
	}
	c.Title = "Members of " + seg.Name
	users, next, err := c.Service.SegmentUsers(c, c.BrandID(), seg.ID, segmentMembersPage, c.R.URL.Query().Get("cursor"))
	if err != nil {
		return err
	}
	return c.Render(membersData{Segment: seg, Users: users, Next: next})
}
