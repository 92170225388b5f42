package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// The contacts list (issue #32): a search, or the whole list filtered
// (consent, state, segment, a custom field's value), sorted, a page at a
// time, with its total and an export of the filter.
func init() {
	Register(Page{
		Path: "contacts/export", Title: "Export contacts", Admin: true,
		Template: "contacts.html",
		Get:      exportContacts,
	})
}

// ContactsPageSize is how many contacts a page of the list shows.
const ContactsPageSize = 50

type contactsData struct {
	Query string
	// Searched: the page shows the search's matches, not the list.
	Searched bool
	Users    []*parley.User
	Filter   parley.ContactFilter
	Sort     string
	Page     *service.ContactListPage
	// Total says how many the filter selects, in words.
	Total string
	// FieldErr is the custom field filter's refusal, in words.
	FieldErr string
	Segments []*parley.Segment
	Fields   []*parley.CustomField
	States   any
	Sorts    []option
	Consents []option
	Admin    bool
	// Notice tells what the last action did.
	Notice string
}

type option struct{ Value, Label string }

var sortOptions = []option{
	{parley.SortNewest, "Newest first"}, {parley.SortOldest, "Oldest first"},
	{parley.SortName, "Name (A to Z)"}, {parley.SortActivity, "Latest activity first"},
}

var consentOptions = []option{
	{"", "Any"}, {parley.ConsentIn, "Opted in"}, {parley.ConsentOut, "Opted out"}, {parley.ConsentNone, "Not given"},
}

// filterOf reads the list's filter and sort from the query string.
func filterOf(q url.Values) (parley.ContactFilter, string) {
	f := parley.ContactFilter{Consent: q.Get("consent"), StateCode: q.Get("state"), Field: q.Get("field"), Value: q.Get("value")}
	f.SegmentID, _ = strconv.ParseInt(q.Get("segment"), 10, 64)
	if f.Field == "" {
		f.Value = ""
	}
	return f, q.Get("sort")
}

// query is the filter and sort as a query string, for links.
func (d contactsData) query() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("consent", d.Filter.Consent)
	set("state", d.Filter.StateCode)
	if d.Filter.SegmentID != 0 {
		v.Set("segment", strconv.FormatInt(d.Filter.SegmentID, 10))
	}
	set("field", d.Filter.Field)
	set("value", d.Filter.Value)
	set("sort", d.Sort)
	return v
}

// PageLink is the list's path at cursor.
func (d contactsData) PageLink(cursor string) string {
	v := d.query()
	v.Set("cursor", cursor)
	return Prefix + "contacts?" + v.Encode()
}

// ExportLink downloads the filtered list.
func (d contactsData) ExportLink() string {
	return Prefix + "contacts/export?" + d.query().Encode()
}

// WindowSize is how many contacts a page of a filter no index serves
// looks through.
func (contactsData) WindowSize() string { return count(int64(service.ContactWindow())) }

// Filtered reports whether a filter is set.
func (d contactsData) Filtered() bool { return !d.Filter.IsZero() }

func contactsPage(c *Ctx) error {
	qs := c.R.URL.Query()
	d := contactsData{Query: strings.TrimSpace(qs.Get("q")), Sorts: sortOptions, Consents: consentOptions,
		States: usStates, Admin: c.Operator.Role == parley.RoleAdmin}
	d.Filter, d.Sort = filterOf(qs)
	if qs.Has("deleted") {
		d.Notice = "The contact was deleted."
	}
	var err error
	if d.Segments, err = c.Service.ListSegments(c, c.BrandID()); err != nil {
		return err
	}
	if d.Fields, err = c.Service.ListCustomFields(c, c.BrandID()); err != nil {
		return err
	}
	if d.Query != "" {
		d.Searched = true
		d.Users, err = c.Service.SearchContacts(c, c.BrandID(), d.Query)
		if err != nil {
			return err
		}
		return c.Render(d)
	}
	d.Page, err = c.Service.ListContacts(c, c.BrandID(), service.ContactListQuery{Filter: d.Filter, Sort: d.Sort,
		Cursor: qs.Get("cursor"), Limit: ContactsPageSize})
	if err != nil {
		return c.filterRefused(d, err)
	}
	d.Users = d.Page.Users
	if d.Total, err = c.contactTotal(d.Filter); err != nil {
		return c.filterRefused(d, err)
	}
	return c.Render(d)
}

// filterRefused shows the list's form again with what was wrong with it.
func (c *Ctx) filterRefused(d contactsData, err error) error {
	code := parley.ErrorCode(err)
	var e *parley.Error
	if code != parley.EValidation && code != parley.ESegmentNotFound {
		return err
	}
	msg := "This filter cannot be used: " + parley.ErrorMessage(err)
	if pe, ok := err.(*parley.Error); ok {
		e = pe
	}
	switch {
	case code == parley.ESegmentNotFound:
		msg = "That segment no longer exists: choose another."
	case e != nil && e.Field == "cursor":
		msg = "That page link is out of date: the list starts again here."
	case e != nil && e.Field == "value":
		msg = "The value " + strings.TrimPrefix(e.Message, "value: ") + " for this field."
	case e != nil && e.Field == "field":
		msg = "There is no such custom field: choose one from the menu."
	}
	d.FieldErr = msg
	d.Page, d.Users = nil, nil
	return c.RenderStatus(http.StatusUnprocessableEntity, d, msg)
}

// contactTotal says in words how many contacts f selects, within the page
// budget: counted exactly up to store's cap of 10,000 by index; past it,
// with no filter or consent alone, the dashboard's figures (at most a
// minute old: "about"), else "more than 10,000"; a segment or custom field
// among the newest contacts of a window.
func (c *Ctx) contactTotal(f parley.ContactFilter) (string, error) {
	plural := func(n int64) string {
		if n == 1 {
			return "1 contact"
		}
		return count(n) + " contacts"
	}
	n, err := c.Service.CountContactList(c, c.BrandID(), f)
	if err != nil {
		return "", err
	}
	if f.StateCode == "" && f.SegmentID == 0 && f.Field == "" {
		about := ""
		if n.Capped {
			st, err := c.console.Dashboard.Stats(c, c.BrandID())
			if err != nil {
				return "", err
			}
			about = "About "
			switch f.Consent {
			case parley.ConsentIn:
				n.N = st.OptedIn
			case parley.ConsentOut:
				n.N = st.OptedOut
			case parley.ConsentNone:
				n.N = st.Contacts - st.OptedIn - st.OptedOut
			default:
				n.N = st.Contacts
			}
		}
		switch f.Consent {
		case parley.ConsentIn:
			return about + plural(n.N) + " opted in", nil
		case parley.ConsentOut:
			return about + plural(n.N) + " opted out", nil
		case parley.ConsentNone:
			return about + plural(n.N) + " who never gave consent", nil
		}
		return about + plural(n.N) + " in all", nil
	}
	switch {
	case n.Capped:
		return "More than " + plural(n.N) + " match", nil
	case n.Window > 0:
		return fmt.Sprintf("%s of the newest %s match (counting all of them would take too long for this page; the segment's page counts a segment exactly)",
			count(n.N), count(n.Window)), nil
	case n.N == 1:
		return "1 contact matches", nil
	}
	return plural(n.N) + " match", nil
}

// count writes n with thousands separators: 1234567 → 1,234,567.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// exportContacts downloads the filtered list as CSV in the import format,
// through the same code as the API's export (Importer.ExportUsers).
func exportContacts(c *Ctx) error {
	f, _ := filterOf(c.R.URL.Query())
	if c.console.Importer == nil {
		return c.NotFound("Exports are not available on this server.")
	}
	out := &lazyCSV{w: c.W, name: "contacts-" + c.Now.In(c.Zone()).Format("2006-01-02") + ".csv"}
	_, err := c.console.Importer.ExportUsers(c, c.BrandID(), out, parley.ExportFilter{Contacts: f})
	if err != nil && !out.started {
		return err
	}
	if err != nil {
		panic(http.ErrAbortHandler) // the file is cut short, not ended as if whole
	}
	if !out.started {
		out.start()
	}
	return nil
}

// lazyCSV sends a CSV attachment's headers with its first byte, so an
// export refused before it starts is still an error page.
type lazyCSV struct {
	w       http.ResponseWriter
	name    string
	started bool
}

func (l *lazyCSV) start() {
	l.started = true
	l.w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	l.w.Header().Set("Content-Disposition", `attachment; filename="`+l.name+`"`)
	l.w.WriteHeader(http.StatusOK)
}

func (l *lazyCSV) Write(p []byte) (int, error) {
	if !l.started {
		l.start()
	}
	return l.w.Write(p)
}
