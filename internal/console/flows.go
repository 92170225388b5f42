package console

import (
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The Flows pages (D21, issue #33): the brand's flows with their stats, an
// editor that shows the trigger and the steps as a vertical list (add,
// remove, move; every change posts the form and comes back, so it works
// without a script), and a flow's runs. The editor saves through the same
// service as POST /flows, so a refused flow stores nothing and each error
// is shown next to its field. Admins only.
func init() {
	Register(Page{
		Path: "flows", Title: "Flows", Nav: "Flows", Order: 45, Admin: true,
		Template: "flows.html", Get: flowsPage,
	})
	Register(Page{
		Path: "flows/new", Title: "New flow", Admin: true,
		Template: "flow.html", Get: flowNew, Post: flowPost,
	})
	Register(Page{
		Path: "flows/{id}", Title: "Flow", Admin: true,
		Template: "flow.html", Get: flowEdit, Post: flowPost,
	})
	Register(Page{
		Path: "flows/check", Title: "New flow", Admin: true,
		Template: "flow.html", Post: flowCheck,
	})
	Register(Page{
		Path: "flows/{id}/runs", Title: "Runs", Admin: true,
		Template: "flow_runs.html", Get: flowRuns,
	})
}

func init() {
	funcs["add"] = func(a, b int) int { return a + b }
	funcs["runStatus"] = runStatus
	funcs["list"] = func(s ...string) []string { return s }
}

// runStatus says where a run is, for people.
func runStatus(r *parley.FlowRun) string {
	switch r.Status {
	case parley.RunActive:
		return "In the flow"
	case parley.RunCompleted:
		return "Went through"
	case parley.RunCanceled:
		return "Canceled: the flow was deleted"
	}
	reason := ""
	if r.ExitReason != nil {
		reason = *r.ExitReason
	}
	switch reason {
	case "stop":
		return "Left: texted STOP"
	case "opted_out":
		return "Left: opted out"
	case "contact_deleted":
		return "Left: the contact was deleted"
	case "branch_condition_false":
		return "Left: a condition was not met"
	case "error":
		return "Stopped: its next step failed ten times (see the server's log)"
	}
	return "Left early"
}

func flowsPage(c *Ctx) error {
	list, next, err := c.Service.ListFlows(c, c.BrandID(), parley.FlowFilter{Limit: 50, Cursor: c.R.URL.Query().Get("cursor")})
	if err != nil {
		return err
	}
	segs, err := c.segmentNames()
	if err != nil {
		return err
	}
	rows := make([]flowRow, len(list))
	for i, f := range list {
		rows[i] = flowRow{Flow: f, Trigger: triggerWords(f.Trigger, segs)}
	}
	return c.Render(flowsData{Flows: rows, Next: next})
}

type flowsData struct {
	Flows []flowRow
	Next  string
}

type flowRow struct {
	*parley.Flow
	Trigger string
}

func (c *Ctx) segmentNames() (map[int64]string, error) {
	segs, err := c.Service.ListSegments(c, c.BrandID())
	if err != nil {
		return nil, err
	}
	m := make(map[int64]string, len(segs))
	for _, s := range segs {
		m[s.ID] = s.Name
	}
	return m, nil
}

// triggerWords says what starts a flow, for people.
func triggerWords(t parley.FlowTrigger, segs map[int64]string) string {
	switch t.Type {
	case parley.TriggerSubscribed:
		return "When a contact opts in"
	case parley.TriggerCreated:
		return "When a contact is added"
	case parley.TriggerKeyword:
		return "When a contact texts " + t.Keyword
	case parley.TriggerSegmentEntered:
		name := segs[t.SegmentID]
		if name == "" {
			name = "segment " + strconv.FormatInt(t.SegmentID, 10)
		}
		return "When a contact joins " + name
	case parley.TriggerEvent:
		return "When " + t.Name + " happens"
	case parley.TriggerDate:
		w := "Each year on " + strings.ReplaceAll(t.FieldName, "_", " ")
		if t.OffsetDays != nil && *t.OffsetDays != 0 {
			n := *t.OffsetDays
			w = "Each year " + strconv.Itoa(abs(n)) + " days " + map[bool]string{true: "before", false: "after"}[n < 0] + " " +
				strings.ReplaceAll(t.FieldName, "_", " ")
		}
		return w + " at " + t.Time
	}
	return t.Type
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// flowForm is the editor's form: the trigger's members and the steps.
type flowForm struct {
	ID                          int64
	Name                        string
	Active                      bool
	Trigger                     string
	Keyword, SegmentID, Event   string
	DateField, OffsetDays, Time string
	ReentryDays                 string
	Steps                       []stepForm
}

// stepForm is one step of the editor. Waits are in minutes, hours or
// days; branches go to a step by its number (1-based) or end.
type stepForm struct {
	Type        string
	Body        string
	MessageType string
	Amount      string
	Unit        string
	Time        string
	If          string // replied, event, segment
	IfEvent     string
	IfSegment   string
	Else        string // "" ends the run; else a step number
}

var waitUnits = map[string]int64{"minutes": 60, "hours": 3600, "days": 86400}

type flowData struct {
	Form      flowForm
	Errors    map[string]string
	Segments  []*parley.Segment
	DateField []string
	// Flow is the saved flow (nil while new), for its stats.
	Flow   *parley.Flow
	Notice string
	// Sample names the contact the previews are for; Previews are the
	// send steps' messages filled in for it, by step.
	Sample   string
	Previews map[int]string
}

// Preview returns step i's message as the sample contact would read it.
func (d flowData) Preview(i int) string { return d.Previews[i] }

// problem is an error of the form in the words of its field.
type problem struct{ Label, Msg string }

// Problems are the form's errors in its order, each named as its field is
// labelled.
func (d flowData) Problems() []problem {
	var out []problem
	for _, k := range slices.SortedFunc(maps.Keys(d.Errors), formOrder) {
		out = append(out, problem{fieldLabel(k), d.Errors[k]})
	}
	return out
}

// memberLabels name the API's members as the editor labels their fields.
var memberLabels = map[string]string{
	"name": "Name", "trigger": "When", "trigger.type": "When", "trigger.keyword": "Keyword",
	"trigger.segment_id": "Segment", "trigger.name": "Event name", "trigger.field_name": "Date",
	"trigger.offset_days": "Days after the date", "trigger.time": "At", "reentry_seconds": "Go through again after",
	"steps": "Steps", "body": "message", "message_type": "kind of message", "seconds": "wait for",
	"time": "until", "if": "the condition", "else_step": "otherwise",
}

// fieldLabel names an error's key (formKey) as the editor labels it.
func fieldLabel(key string) string {
	if rest, ok := strings.CutPrefix(key, "steps["); ok {
		i, member, _ := strings.Cut(rest, "].")
		n, _ := strconv.Atoi(i)
		return "Step " + strconv.Itoa(n+1) + " " + cmp.Or(memberLabels[member], member)
	}
	return cmp.Or(memberLabels[key], key)
}

// formOrder orders error keys as their fields come in the editor: the
// name and the trigger's members, then the steps by number.
func formOrder(a, b string) int {
	rank := func(k string) (int, string) {
		if rest, ok := strings.CutPrefix(k, "steps["); ok {
			i, member, _ := strings.Cut(rest, "]")
			n, _ := strconv.Atoi(i)
			return 2 + n, member
		}
		if k == "steps" {
			return 1, k
		}
		return 0, k
	}
	ra, ma := rank(a)
	rb, mb := rank(b)
	return cmp.Or(cmp.Compare(ra, rb), cmp.Compare(ma, mb))
}

// Err returns the error of a field of the form.
func (d flowData) Err(key string) string { return d.Errors[key] }

// StepErr returns the error of member of step i.
func (d flowData) StepErr(i int, member string) string {
	return d.Errors[parley.StepPath(i, member)]
}

func flowNew(c *Ctx) error {
	f := flowForm{Name: "Welcome", Trigger: parley.TriggerSubscribed, Time: "10:00", Steps: []stepForm{{Type: parley.StepSend,
		MessageType: parley.TypeMarketing, Body: "Thanks for joining! Reply STOP to opt out."}}}
	return c.renderFlow(http.StatusOK, flowData{Form: f}, "")
}

func flowEdit(c *Ctx) error {
	f, err := c.findFlow()
	if err != nil {
		return err
	}
	c.Title = f.Name
	return c.renderFlow(http.StatusOK, flowData{Form: flowFormOf(f), Flow: f, Notice: noticeOf(c)}, "")
}

func noticeOf(c *Ctx) string {
	switch c.R.URL.Query().Get("saved") {
	case "1":
		return "Saved."
	}
	return ""
}

func (c *Ctx) findFlow() (*parley.Flow, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err != nil {
		return nil, parley.FlowNotFound(0)
	}
	return c.Service.FindFlow(c, c.BrandID(), id)
}

func (c *Ctx) renderFlow(status int, d flowData, msg string) error {
	segs, err := c.Service.ListSegments(c, c.BrandID())
	if err != nil {
		return err
	}
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	d.Segments = segs
	if err := c.flowPreviews(&d); err != nil {
		return err
	}
	d.DateField = []string{"date_of_birth", "date_created"}
	for _, f := range fields {
		if f.CustomDataType == parley.CustomDate {
			d.DateField = append(d.DateField, parley.CustomDataKey(f.FieldName))
		}
	}
	return c.RenderStatus(status, d, msg)
}

// flowPreviews fills the send steps' messages in for a sample contact:
// the newest with a first name, else the newest.
func (c *Ctx) flowPreviews(d *flowData) error {
	users, err := c.Service.SearchContacts(c, c.BrandID(), "")
	if err != nil || len(users) == 0 {
		return err
	}
	u := users[0]
	for _, x := range users {
		if x.FirstName != nil && *x.FirstName != "" {
			u = x
			break
		}
	}
	d.Sample = strings.TrimSpace(deref(u.FirstName) + " " + deref(u.LastName))
	if d.Sample == "" {
		d.Sample = u.PhoneNumber
	}
	contact := service.Contact{FirstName: deref(u.FirstName), LastName: deref(u.LastName), CustomData: string(u.CustomData)}
	d.Previews = map[int]string{}
	for i, s := range d.Form.Steps {
		if s.Type == parley.StepSend && strings.Contains(s.Body, "{{") {
			d.Previews[i] = service.RenderBody(s.Body, contact)
		}
	}
	return nil
}

// flowFormOf fills the editor with a saved flow.
func flowFormOf(f *parley.Flow) flowForm {
	t := f.Trigger
	ff := flowForm{ID: f.ID, Name: f.Name, Active: f.Active, Trigger: t.Type, Keyword: t.Keyword, Event: t.Name,
		DateField: t.FieldName, Time: t.Time}
	if t.SegmentID != 0 {
		ff.SegmentID = strconv.FormatInt(t.SegmentID, 10)
	}
	if t.OffsetDays != nil {
		ff.OffsetDays = strconv.Itoa(*t.OffsetDays)
	}
	if f.ReentrySeconds != nil {
		ff.ReentryDays = strconv.FormatFloat(float64(*f.ReentrySeconds)/86400, 'f', -1, 64)
	}
	for _, s := range f.Steps {
		sf := stepForm{Type: s.Type, Body: s.Body, MessageType: s.MessageType, Time: s.Time}
		switch s.Type {
		case parley.StepWait:
			sf.Amount, sf.Unit = strconv.FormatInt(s.Seconds/60, 10), "minutes"
			for _, u := range []string{"days", "hours"} {
				if s.Seconds%waitUnits[u] == 0 {
					sf.Amount, sf.Unit = strconv.FormatInt(s.Seconds/waitUnits[u], 10), u
					break
				}
			}
		case parley.StepBranch:
			switch c := s.If; {
			case c.Replied != nil:
				sf.If = "replied"
			case c.Event != nil:
				sf.If, sf.IfEvent = "event", *c.Event
			case c.Criteria != nil && len(*c.Criteria) == 1 && (*c.Criteria)[0].Attribute.DimensionType == parley.DimensionSegment:
				sf.If, sf.IfSegment = "segment", strconv.FormatInt(*(*c.Criteria)[0].IntFieldValue, 10)
			default:
				sf.If = "criteria" // made through the API: kept as it is
			}
			if s.ElseStep != nil {
				sf.Else = strconv.Itoa(*s.ElseStep + 1)
			}
		}
		ff.Steps = append(ff.Steps, sf)
	}
	return ff
}

// readFlowForm reads the editor's form as posted.
func readFlowForm(c *Ctx) flowForm {
	f := flowForm{Name: strings.TrimSpace(c.Form("name")), Active: c.Form("active") == "on", Trigger: c.Form("trigger"),
		Keyword: strings.TrimSpace(c.Form("keyword")), SegmentID: c.Form("segment_id"), Event: strings.TrimSpace(c.Form("event")),
		DateField: c.Form("date_field"), OffsetDays: strings.TrimSpace(c.Form("offset_days")), Time: c.Form("time"),
		ReentryDays: strings.TrimSpace(c.Form("reentry_days"))}
	f.ID, _ = strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	n, _ := strconv.Atoi(c.Form("steps"))
	for i := range min(n, parley.MaxFlowSteps) {
		p := "step-" + strconv.Itoa(i) + "-"
		f.Steps = append(f.Steps, stepForm{Type: c.Form(p + "type"), Body: c.Form(p + "body"), MessageType: c.Form(p + "message_type"),
			Amount: strings.TrimSpace(c.Form(p + "amount")), Unit: c.Form(p + "unit"), Time: c.Form(p + "time"),
			If: c.Form(p + "if"), IfEvent: strings.TrimSpace(c.Form(p + "if_event")), IfSegment: c.Form(p + "if_segment"),
			Else: c.Form(p + "else")})
	}
	return f
}

// flowPost saves the flow, or applies an editing button (add, move,
// remove a step) and shows the form again, or deletes the flow.
func flowPost(c *Ctx) error {
	f := readFlowForm(c)
	action := c.Form("action")
	if f.ID != 0 {
		c.Title = f.Name
	}
	switch {
	case action == "delete":
		if c.Form("confirm") != "yes" {
			return c.renderFlow(http.StatusOK, flowData{Form: f, Notice: "confirm-delete"}, "")
		}
		o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
		if _, err := c.Service.DeleteFlow(c, o, c.BrandID(), f.ID); err != nil {
			return err
		}
		return c.Redirect("flows")
	case strings.HasPrefix(action, "add-"):
		st := stepForm{Type: strings.TrimPrefix(action, "add-"), MessageType: parley.TypeMarketing, Amount: "1", Unit: "days",
			Time: "10:00", If: "replied"}
		if len(f.Steps) < parley.MaxFlowSteps {
			f.Steps = append(f.Steps, st)
		}
		return c.renderFlow(http.StatusOK, flowData{Form: f}, "")
	case strings.HasPrefix(action, "up-"), strings.HasPrefix(action, "down-"), strings.HasPrefix(action, "remove-"):
		verb, num, _ := strings.Cut(action, "-")
		i, _ := strconv.Atoi(num)
		if i >= 0 && i < len(f.Steps) {
			switch {
			case verb == "up" && i > 0:
				f.Steps[i-1], f.Steps[i] = f.Steps[i], f.Steps[i-1]
			case verb == "down" && i+1 < len(f.Steps):
				f.Steps[i+1], f.Steps[i] = f.Steps[i], f.Steps[i+1]
			case verb == "remove":
				f.Steps = slices.Delete(f.Steps, i, i+1)
			}
		}
		return c.renderFlow(http.StatusOK, flowData{Form: f}, "")
	}
	return c.saveFlow(f)
}

// saveFlow creates or updates the flow from the form.
func (c *Ctx) saveFlow(f flowForm) error {
	in, errs := flowInput(f)
	if len(errs) > 0 {
		return c.renderFlow(http.StatusUnprocessableEntity, flowData{Form: f, Errors: errs}, "The flow was not saved: see below.")
	}
	o := parley.Origin{Source: parley.SourceConsole, Detail: c.Operator.Email}
	var saved *parley.Flow
	var err error
	if f.ID == 0 {
		saved, err = c.Service.CreateFlow(c, o, c.BrandID(), in)
	} else {
		saved, err = c.Service.UpdateFlow(c, o, c.BrandID(), f.ID, parley.FlowUpdate(in))
	}
	if err != nil {
		if err := refusal(err, errs); err != nil {
			return err
		}
		return c.renderFlow(http.StatusUnprocessableEntity, flowData{Form: f, Errors: errs}, "The flow was not saved: see below.")
	}
	return c.Redirect("flows/" + strconv.FormatInt(saved.ID, 10) + "?saved=1")
}

// flowCheck answers the editor's live check (static/live.js posts the
// form as it changes): what saving would refuse, each in the words of
// its field, and the messages filled in for the sample contact. It saves
// nothing.
func flowCheck(c *Ctx) error {
	f := readFlowForm(c)
	in, errs := flowInput(f)
	if len(errs) == 0 {
		if err := refusal(c.Service.CheckFlow(c, c.BrandID(), in), errs); err != nil {
			return err
		}
	}
	d := flowData{Form: f, Errors: errs}
	if err := c.flowPreviews(&d); err != nil {
		return err
	}
	return c.Fragment("flow-check", d)
}

// flowInput is the API's input of the form; what the form alone can tell
// is wrong is in errs, keyed by the API's member names.
func flowInput(f flowForm) (parley.FlowCreate, map[string]string) {
	errs := map[string]string{}
	trigger, steps := f.json(errs)
	in := parley.FlowCreate{Name: parley.Some(f.Name), Trigger: parley.Some(parley.RawMember(trigger)),
		Steps: parley.Some(parley.RawMember(steps)), Active: parley.Some(f.Active), ReentrySeconds: parley.Null[int64]()}
	if f.ReentryDays != "" {
		days, err := strconv.ParseFloat(f.ReentryDays, 64)
		if err != nil || days < 0 {
			errs["reentry_seconds"] = "Enter a number of days, or leave it empty to let a contact go through once only."
		}
		in.ReentrySeconds = parley.Some(int64(days * 86400))
	}
	return in, errs
}

// refusal puts the service's refusal of a flow in errs next to its
// field; an error that is not a refusal is returned.
func refusal(err error, errs map[string]string) error {
	if err == nil {
		return nil
	}
	switch parley.ErrorCode(err) {
	case parley.EValidation, parley.ESegmentNotFound, parley.EInvalidMediaItem:
		errs[formKey(errField(err))] = plainRule(err)
		return nil
	}
	return err
}

// formKey is the editor's key of an API member: a step's first member
// (steps[2].if.criteria[0].int_field_value → steps[2].if), the trigger's
// member, or the flow's; the segment of a segment_not_found.
func formKey(field string) string {
	if field == "" {
		return "trigger.segment_id"
	}
	if rest, ok := strings.CutPrefix(field, "steps["); ok {
		i, member, _ := strings.Cut(rest, "].")
		member, _, _ = strings.Cut(member, ".")
		member, _, _ = strings.Cut(member, "[")
		if member == "media_item_uuids" {
			member = "body"
		}
		n, _ := strconv.Atoi(i)
		return parley.StepPath(n, member)
	}
	return field
}

// plainRule is an error's message without the member it names (shown
// next to that member's field).
func plainRule(err error) string {
	msg := parley.ErrorMessage(err)
	if f := errField(err); f != "" {
		msg = strings.TrimPrefix(msg, f+": ")
	}
	if msg != "" {
		msg = strings.ToUpper(msg[:1]) + msg[1:]
	}
	return msg
}

// json turns the form into the API's trigger and steps; what the form
// alone can tell is wrong goes in errs, keyed by the API's member names.
func (f flowForm) json(errs map[string]string) (trigger, steps []byte) {
	t := map[string]any{"type": f.Trigger}
	switch f.Trigger {
	case parley.TriggerKeyword:
		t["keyword"] = f.Keyword
	case parley.TriggerSegmentEntered:
		id, err := strconv.ParseInt(f.SegmentID, 10, 64)
		if err != nil {
			errs["trigger.segment_id"] = "Choose a segment."
		}
		t["segment_id"] = id
	case parley.TriggerEvent:
		t["name"] = f.Event
	case parley.TriggerDate:
		t["field_name"], t["time"] = f.DateField, f.Time
		if f.OffsetDays != "" {
			n, err := strconv.Atoi(f.OffsetDays)
			if err != nil {
				errs["trigger.offset_days"] = "Enter a whole number of days (negative for before)."
			}
			t["offset_days"] = n
		}
	}
	out := make([]map[string]any, len(f.Steps))
	for i, s := range f.Steps {
		m := map[string]any{"type": s.Type}
		switch s.Type {
		case parley.StepSend:
			m["body"], m["message_type"] = s.Body, s.MessageType
		case parley.StepWait:
			n, err := strconv.ParseInt(s.Amount, 10, 64)
			if err != nil || n < 1 {
				errs[parley.StepPath(i, "seconds")] = "Enter how long to wait: a whole number of at least 1."
			}
			m["seconds"] = n * waitUnits[s.Unit]
		case parley.StepWaitUntil:
			m["time"] = s.Time
		case parley.StepBranch:
			switch s.If {
			case "replied":
				m["if"] = map[string]any{"replied": true}
			case "event":
				m["if"] = map[string]any{"event": s.IfEvent}
			case "segment":
				id, err := strconv.ParseInt(s.IfSegment, 10, 64)
				if err != nil {
					errs[parley.StepPath(i, "if")] = "Choose a segment."
				}
				m["if"] = map[string]any{"criteria": []any{map[string]any{"attribute": map[string]any{"dimension_type": parley.DimensionSegment,
					"field_name": "", "field_type": parley.CustomInteger}, "operator_type": parley.OpEquals, "int_field_value": id, "and_group_num": 1}}}
			default:
				errs[parley.StepPath(i, "if")] = "This condition was made through the API; choose one of these to change it."
			}
			m["else_step"] = nil
			if s.Else != "" {
				k, _ := strconv.Atoi(s.Else)
				m["else_step"] = k - 1
			}
		}
		out[i] = m
	}
	trigger, _ = json.Marshal(t)
	steps, _ = json.Marshal(out)
	return trigger, steps
}

func flowRuns(c *Ctx) error {
	f, err := c.findFlow()
	if err != nil {
		return err
	}
	c.Title = "Runs of " + f.Name
	q := c.R.URL.Query()
	runs, next, err := c.Service.ListRuns(c, c.BrandID(), f.ID, parley.RunFilter{Status: q.Get("status"), Limit: 50, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	return c.Render(flowRunsData{Flow: f, Runs: runs, Next: next, Status: q.Get("status")})
}

type flowRunsData struct {
	Flow   *parley.Flow
	Runs   []*parley.FlowRun
	Next   string
	Status string
}
