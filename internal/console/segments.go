package console

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// The Segments pages (D19, D14, D15, issues #18 and #32): the brand's
// segments, each with its criteria as a sentence and its member count
// (counted after the page loads, one segment at a time, so the list stays
// fast at any size); a builder in a marketer's words with a live count;
// create, edit, archive, and a segment's members a page at a time. The
// same service as the v1 /segments API, so the rules are the API's and the
// criteria saved are what the API stores. Admins only.
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
	// A listed segment's count, as a fragment the list loads after the
	// page (static/counts.js).
	Register(Page{
		Path: "segments/{id}/count", Title: "Segment", Admin: true,
		Template: "segments.html", Get: segmentCountFragment,
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
	Segments []segmentRow
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
	custom, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	fs := newFieldSet(custom, list) // the segments read once: their criteria are JSON to decode
	var named []criterionRow
	for _, seg := range list {
		for _, cr := range seg.Criteria {
			named = append(named, rowOf(cr))
		}
	}
	if err := c.nameSegments(fs, namedIDs(named)); err != nil {
		return err
	}
	d := segmentsData{}
	for _, s := range list {
		d.Segments = append(d.Segments, segmentRow{Segment: s, Sentence: fs.segmentSentence(s.Criteria)})
	}
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

// segmentRow is one segment of the list: its criteria as a sentence.
type segmentRow struct {
	*parley.Segment
	Sentence string
}

// fieldSet reads the brand's custom fields and segments for the builder's
// words.
func (c *Ctx) fieldSet() (fieldSet, error) {
	custom, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return fieldSet{}, err
	}
	segs, err := c.Service.ListSegments(c, c.BrandID())
	if err != nil {
		return fieldSet{}, err
	}
	return newFieldSet(custom, segs), nil
}

// nameSegments adds to fs the segments the criteria name that the list of
// visible ones lacks (archived ones keep their meaning where they are
// named, D14): by name, marked archived, so they show and save as they were.
func (c *Ctx) nameSegments(fs fieldSet, ids []int64) error {
	for _, id := range ids {
		if _, ok := fs.Segments[id]; ok {
			continue
		}
		seg, err := c.Service.FindSegment(c, c.BrandID(), id)
		if parley.ErrorCode(err) == parley.ESegmentNotFound {
			continue
		}
		if err != nil {
			return err
		}
		fs.Segments[id] = seg.Name + " (archived)"
	}
	return nil
}

// namedIDs are the segment ids the rows name.
func namedIDs(rows []criterionRow) []int64 {
	var ids []int64
	for _, r := range rows {
		if r.Attr != segmentKey {
			continue
		}
		for _, v := range r.Values {
			if id, err := strconv.ParseInt(v, 10, 64); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// segmentCountData is the count fragment of a listed segment.
type segmentCountData struct {
	Count *parley.SegmentCount
	Zone  *time.Location
}

func segmentCountFragment(c *Ctx) error {
	seg, err := c.findSegment()
	if err != nil {
		return err
	}
	n, err := c.Service.CountSegment(c, c.BrandID(), seg.ID)
	if err != nil {
		return err
	}
	return c.Fragment("listcount", segmentCountData{Count: n, Zone: c.Zone()})
}

// rowView is one condition as segment.html shows it: the field's
// conditions in words and the value control that fits them.
type rowView struct {
	criterionRow
	Field   *segField
	Ops     []opWord
	Control string // "", "text", "number", "date", "days", "select", "checks", "list"
	Choices []choice
	Joined  string // "is one of" values typed, separated by commas
}

// choice is one value of a menu or a checkbox.
type choice struct {
	Value, Label string
	Selected     bool
}

// groupView is one group of conditions, all of which must hold.
type groupView struct {
	Index, Num int
	Rows       []rowView
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
	Fields  []segField
	Groups  []groupView
	Rows    int // how many rows the form holds
	// Live is the count fragment's data when it was asked for.
	Live   *liveCount
	Notice string
}

// liveCount is the count fragment: the count, or the errors of the
// conditions that stop it.
type liveCount struct {
	Count  *int64
	Errors []rowError
	Error  string // one not of a condition (too many conditions, too many counts at once)
}

// rowError is a condition's error, for live.js to show next to it.
type rowError struct {
	Row     int
	Message string
}

// Action is the form's post path below /console/.
func (d segmentData) Action() string {
	if d.Segment == nil {
		return "segments/new"
	}
	return "segments/" + strconv.FormatInt(d.Segment.ID, 10)
}

// view lays a row out for the page.
func (fs fieldSet) view(r criterionRow, self int64) rowView {
	v := rowView{criterionRow: r}
	f, ok := fs.ByKey[r.Attr]
	if !ok {
		return v
	}
	v.Field, v.Ops = &f, opsFor(f)
	if !opFits(f, r.Op) {
		v.Op = v.Ops[0].Value
		v.criterionRow.Op = v.Op
	}
	var menu []choice
	switch f.Kind {
	case kindBool:
		menu = []choice{{Value: "true", Label: "yes"}, {Value: "false", Label: "no"}}
	case kindState:
		for _, st := range usStates {
			menu = append(menu, choice{Value: st.Code, Label: st.Name + " (" + st.Code + ")"})
		}
	case kindEnum, kindList:
		for _, e := range f.Enum {
			menu = append(menu, choice{Value: e, Label: e})
		}
	case kindSegment:
		for _, id := range sortedIDs(fs.Segments) {
			if id != self {
				menu = append(menu, choice{Value: strconv.FormatInt(id, 10), Label: fs.Segments[id]})
			}
		}
	}
	vals := rowValues(f, v.criterionRow)
	if f.Kind == kindState { // a state typed by name shows as picked
		for i, x := range vals {
			if code, ok := stateCode(x); ok {
				vals[i] = code
			}
		}
	}
	for i := range menu {
		menu[i].Selected = containsFold(vals, menu[i].Value)
	}
	switch {
	case v.Op == "10" || v.Op == "11":
	case v.Op == "12" || v.Op == "13" || v.Op == "14":
		v.Control = "days"
	case v.Op == opOneOf && len(menu) > 0:
		// The values picked first, so a long list shows them without
		// scrolling; they are sent in the list's order either way.
		slices.SortStableFunc(menu, func(a, b choice) int {
			switch {
			case a.Selected == b.Selected:
				return 0
			case a.Selected:
				return -1
			}
			return 1
		})
		v.Control, v.Choices = "checks", menu
	case v.Op == opOneOf:
		v.Control, v.Joined = "list", strings.Join(vals, ", ")
	case len(menu) > 0 || f.Kind == kindSegment:
		v.Control, v.Choices = "select", menu
	case f.Kind == kindDate:
		v.Control = "date"
	case f.Kind == kindNumber:
		v.Control = "number"
	default:
		v.Control = "text"
	}
	return v
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func sortedIDs(m map[int64]string) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int64) int { return strings.Compare(strings.ToLower(m[a]), strings.ToLower(m[b])) })
	return ids
}

func (c *Ctx) renderSegment(status int, d segmentData, errMsg string) error {
	var self int64
	if d.Segment != nil {
		self = d.Segment.ID
	}
	fs, err := c.fieldSet()
	if err != nil {
		return err
	}
	if err := c.nameSegments(fs, namedIDs(d.Form.Rows)); err != nil {
		return err
	}
	d.Fields = fs.List
	if len(d.Form.Rows) == 0 {
		d.Form.Rows = []criterionRow{{}} // a condition to start with
	}
	for i := range d.Form.Rows {
		r := &d.Form.Rows[i]
		r.Index, r.Num = i, i+1
		if n := len(d.Groups); n == 0 || d.Groups[n-1].Index != r.Group {
			d.Groups = append(d.Groups, groupView{Index: r.Group, Num: len(d.Groups) + 1})
		}
		g := &d.Groups[len(d.Groups)-1]
		g.Rows = append(g.Rows, fs.view(*r, self))
	}
	d.Rows = len(d.Form.Rows)
	if d.Form.Type == "" {
		d.Form.Type = parley.SegmentStandard
	}
	return c.RenderStatus(status, d, errMsg)
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
	for _, g := range collapse(seg.Criteria) {
		d.Form.Rows = append(d.Form.Rows, g...)
	}
	if c.R.URL.Query().Get("done") == "saved" {
		d.Notice = "Segment saved."
	}
	return c.renderSegment(http.StatusOK, d, "")
}

// builderCriteria checks every row, putting each one's error next to it in
// plain words, and gives the D14 criteria the rows mean, with the row of
// each criterion; ok is false when a row or the whole is refused (then
// formErr says why, for the whole).
func (c *Ctx) builderCriteria(rows []criterionRow, self int64) (criteria parley.Criteria, rowOf []int, formErr string, ok bool, err error) {
	fs, err := c.fieldSet()
	if err == nil {
		err = c.nameSegments(fs, namedIDs(rows))
	}
	if err != nil {
		return nil, nil, "", false, err
	}
	var live []int // the rows with a field: a condition just added and left empty is no criterion
	var per [][]parley.SegmentCriterion
	ok = true
	for i := range rows {
		if rows[i].Attr == "" {
			continue
		}
		crs := fs.rowCriteria(&rows[i])
		if rows[i].Error != "" {
			ok = false
			continue
		}
		// The service's rules on this condition alone (a segment that
		// leads back to this one, or names too many).
		if err := c.Service.CheckCriteria(c, c.BrandID(), self, crs); err != nil {
			if parley.ErrorCode(err) != parley.EValidation {
				return nil, nil, "", false, err
			}
			rows[i].Error, ok = segmentRule(err), false
			continue
		}
		live, per = append(live, i), append(per, crs)
	}
	if !ok {
		return nil, nil, "", false, nil
	}
	sub := make([]criterionRow, len(live))
	for k, i := range live {
		sub[k] = rows[i]
	}
	criteria, rowOf = expandGroups(sub, per)
	for k := range rowOf {
		rowOf[k] = live[rowOf[k]]
	}
	if len(criteria) > parley.MaxCriteria {
		return nil, nil, "With every \u201cis one of\u201d value spelled out, this segment needs more than " +
			strconv.Itoa(parley.MaxCriteria) + " conditions. Use fewer values, or build part of it as a segment of its own and use \u201cSegment is in\u201d.", false, nil
	}
	return criteria, rowOf, "", true, nil
}

// segmentRule is a service error's rule without the member it names, in
// plain words where the service's are a developer's.
func segmentRule(err error) string {
	m := parley.ErrorMessage(err)
	if i := strings.Index(m, ": "); i >= 0 && strings.HasPrefix(m, "criteria") {
		m = m[i+2:]
	}
	switch {
	case strings.Contains(m, "(a cycle)"):
		return "That segment includes this one, so it cannot be used here: choose another."
	case strings.HasPrefix(m, "segment ") && strings.HasSuffix(m, " not found"):
		return "That segment no longer exists: choose another."
	case strings.Contains(m, "more than "+strconv.Itoa(parley.MaxExpandedCriteria)):
		return "With the segments it uses, this segment would have more than " + strconv.Itoa(parley.MaxExpandedCriteria) +
			" conditions: use fewer."
	case strings.Contains(m, "Too many segment queries"):
		return m
	}
	return strings.TrimSuffix(m, " (D14)")
}

// segmentSave handles the builder's buttons: add or remove a condition or
// a group, refresh, count, save, and archive.
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
	edit := action == "refresh" || action == "add-group" || strings.HasPrefix(action, "add-") || strings.HasPrefix(action, "remove-")
	d := segmentData{Segment: seg, Form: segmentForm{Name: strings.TrimSpace(c.Form("name")),
		Description: strings.TrimSpace(c.Form("description")), Type: c.Form("type"), Rows: c.readRows(edit)}}
	if edit {
		switch {
		case action == "add-group":
			g := 0
			if n := len(d.Form.Rows); n > 0 {
				g = d.Form.Rows[n-1].Group + 1
			}
			d.Form.Rows = append(d.Form.Rows, criterionRow{Group: g})
		case strings.HasPrefix(action, "add-"):
			g, _ := strconv.Atoi(strings.TrimPrefix(action, "add-"))
			at := len(d.Form.Rows)
			for i, r := range d.Form.Rows {
				if r.Group > g {
					at = i
					break
				}
			}
			d.Form.Rows = append(d.Form.Rows[:at], append([]criterionRow{{Group: g}}, d.Form.Rows[at:]...)...)
		}
		return c.renderSegment(http.StatusOK, d, "")
	}
	var self int64
	if seg != nil {
		self = seg.ID
	}
	criteria, rowOf, formErr, ok, err := c.builderCriteria(d.Form.Rows, self)
	if err != nil {
		return err
	}
	if !ok {
		if formErr != "" {
			d.Errors = map[string]string{"criteria": formErr}
		}
		return c.renderSegment(http.StatusUnprocessableEntity, d, "Nothing was saved: see the conditions marked below.")
	}
	if action == "count" {
		p, err := c.Service.PreviewSegment(c, c.BrandID(), criteria)
		if err == nil {
			d.Live = &liveCount{Count: &p.Count}
			return c.renderSegment(http.StatusOK, d, "")
		}
		if parley.ErrorCode(err) != parley.EValidation && parley.ErrorCode(err) != parley.ERateLimited {
			return err
		}
		d.Live = &liveCount{Error: segmentRule(err)}
		return c.renderSegment(http.StatusOK, d, "")
	}
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
	switch parley.ErrorCode(err) {
	case parley.EValidation, parley.EDuplicate:
	default:
		return err
	}
	status, _ := statusOf(parley.ErrorCode(err))
	if i := criterionIndex(errField(err)); i >= 0 && i < len(rowOf) {
		d.Form.Rows[rowOf[i]].Error = segmentRule(err)
	} else {
		field := errField(err)
		msg := parley.ErrorMessage(err)
		switch {
		case field == "" || field == "name":
			field = "name" // a name the brand uses, or none
			msg = nameRule(err)
		case strings.HasPrefix(field, "criteria"):
			field, msg = "criteria", segmentRule(err)
		}
		d.Errors = map[string]string{field: msg}
	}
	return c.renderSegment(status, d, "Nothing was saved: see below.")
}

// nameRule says what is wrong with a segment's name.
func nameRule(err error) string {
	if parley.ErrorCode(err) == parley.EDuplicate {
		return "Another segment is already called that: choose another name."
	}
	m := parley.ErrorMessage(err)
	if m == "name: required" {
		return "Enter a name."
	}
	m = strings.TrimPrefix(m, "name: ")
	if strings.HasPrefix(m, "at most ") {
		return "Use " + m + "."
	}
	return m
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

// segmentCount answers the live count for the builder's conditions as
// posted: the count, or the errors of the conditions that stop it.
func segmentCount(c *Ctx) error {
	rows := c.readRows(true) // numbered as the page shows them
	var self int64
	if s := c.Form("segment"); s != "" {
		self, _ = strconv.ParseInt(s, 10, 64)
	}
	criteria, _, formErr, ok, err := c.builderCriteria(rows, self)
	if err != nil {
		return err
	}
	var lc liveCount
	if !ok {
		lc.Error = formErr
		for i, r := range rows {
			if r.Error != "" {
				lc.Errors = append(lc.Errors, rowError{Row: i, Message: r.Error})
			}
		}
		return c.Fragment("count", lc)
	}
	p, err := c.Service.PreviewSegment(c, c.BrandID(), criteria)
	if err == nil {
		lc.Count = &p.Count
		return c.Fragment("count", lc)
	}
	if c.Err() != nil {
		return nil // a newer count replaced this one (live.js aborts it): no one reads the answer
	}
	switch parley.ErrorCode(err) {
	case parley.EValidation:
	case parley.ERateLimited: // the brand's counts at once (issue #31): the next edit counts again
	default:
		return err
	}
	lc.Error = segmentRule(err)
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
