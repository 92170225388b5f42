package console_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// fieldForm is a whole, valid create form; tests change one field.
func fieldForm(kv ...string) url.Values {
	f := url.Values{"field_name": {"Shirt Size"}, "custom_data_type": {"3"}, "subtype": {"0"},
		"description": {"The size they wear"}, "available_enum_values": {"S\r\nM\r\n\r\n  L \r\n"},
		"is_auto_collected": {"1"}, "extraction_prompt": {"Their shirt size.\r\nOnly S, M or L."},
		"include_in_ai_prompt": {"1"}}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" && kv[i] != "field_name" {
			f.Del(kv[i]) // an unchecked box or empty area: not sent
			continue
		}
		f.Set(kv[i], kv[i+1])
	}
	return f
}

// editForm is a whole, valid edit form of a STRING field.
func editForm(kv ...string) url.Values {
	f := fieldForm(kv...)
	f.Del("field_name")
	f.Del("custom_data_type")
	f.Del("subtype")
	return f
}

// v1Field is the field named name as v1 GET /custom_data returns it,
// through a request signed with brand A's credential.
func (e *env) v1Field(t *testing.T, name string) *parley.CustomField {
	t.Helper()
	list, err := e.A.ListCustomFields(e.Ctx)
	if err != nil {
		t.Fatalf("GET /custom_data: %v", err)
	}
	for _, f := range list {
		if f.FieldName == name {
			return f
		}
	}
	t.Fatalf("GET /custom_data has no field %q: %+v", name, list)
	return nil
}

// TestFieldsAccess: the Custom data fields page and its forms are for the
// brand's admins (D19): signed out → sign in, an agent → 403 (and the
// form changes nothing), another brand's admin → 404 for the field and
// none of brand A's fields in their list.
func TestFieldsAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Secret Tier A", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{}, IsAutoCollected: true, ExtractionPrompt: "their tier"})
	fp := "/console/fields/" + itoa(f.ID)
	before := e.adminState(t)

	anon := e.web(t)
	for _, p := range []string{"/console/fields", fp} {
		if pg := anon.get(p); pg.Status != http.StatusSeeOther || pg.Location != "/console/signin?next="+url.QueryEscape(p) {
			t.Errorf("GET %s signed out: %d %q, want 303 to sign in", p, pg.Status, pg.Location)
		}
	}
	agent := e.signedIn(t, "agent@a.example")
	b := e.signedIn(t, "admin@b.example")
	for _, c := range []struct {
		path string
		form url.Values
	}{{"/console/fields", fieldForm("field_name", "Agent Field")}, {fp, editForm("extraction_prompt", "changed")}} {
		if pg := anon.post(c.path, c.form); pg.Status != http.StatusSeeOther || !strings.HasPrefix(pg.Location, "/console/signin") {
			t.Errorf("POST %s signed out: %d %q, want 303 to sign in", c.path, pg.Status, pg.Location)
		}
		if pg := agent.get(c.path); pg.Status != http.StatusForbidden || pg.h1() != "Forbidden" {
			t.Errorf("GET %s as agent: %d %q, want 403", c.path, pg.Status, pg.h1())
		}
		if pg := agent.post(c.path, c.form); pg.Status != http.StatusForbidden {
			t.Errorf("POST %s as agent: %d, want 403", c.path, pg.Status)
		}
	}
	if pg := b.get(fp); pg.Status != http.StatusNotFound || strings.Contains(pg.Body, "Secret Tier A") {
		t.Errorf("GET brand A's field as brand B's admin: %d, want 404 without it", pg.Status)
	}
	if pg := b.post(fp, editForm("extraction_prompt", "changed by B")); pg.Status != http.StatusNotFound {
		t.Errorf("POST brand A's field as brand B's admin: %d, want 404", pg.Status)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused posts changed the database:\nbefore %s\nafter  %s", before, after)
	}
	if pg := b.get("/console/fields"); pg.Status != 200 || strings.Contains(pg.Body, "Secret Tier A") || strings.Contains(pg.Body, "their tier") {
		t.Errorf("brand B's list: %d, shows brand A's field: %v", pg.Status, strings.Contains(pg.Body, "Secret Tier A"))
	}
	if pg := agent.get("/console/"); strings.Contains(pg.Body, ">Custom data<") {
		t.Errorf("the agent's nav links Custom data")
	}
	a := e.signedIn(t, "admin@a.example")
	for p, h1 := range map[string]string{"/console/fields": "Custom data fields", fp: "Custom data field Secret Tier A"} {
		if pg := a.get(p); pg.Status != 200 || pg.h1() != h1 {
			t.Errorf("GET %s as brand A's admin: %d %q, want 200 %q", p, pg.Status, pg.h1(), h1)
		}
	}
	if pg := a.get("/console/fields"); !strings.Contains(pg.Body, ">Custom data<") || !strings.Contains(pg.Body, "Secret Tier A") {
		t.Errorf("brand A's admin: no nav link or no field in the list")
	}
	for _, bad := range []string{"/console/fields/0", "/console/fields/x", "/console/fields/999999"} {
		if pg := a.get(bad); pg.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", bad, pg.Status)
		}
	}
	// Cross-origin posts with an admin's cookie are refused (D19).
	for _, p := range []string{"/console/fields", fp} {
		if pg := a.post(p, fieldForm("field_name", "Evil"), "Sec-Fetch-Site", "cross-site"); pg.Status != http.StatusForbidden {
			t.Errorf("cross-origin POST %s: %d, want 403", p, pg.Status)
		}
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused posts changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

// TestFieldsRoundTrip: a field created on the console with the three
// members of #19 set (a multi-line prompt among them) is what v1 GET
// /custom_data returns (D10, D20); editing it changes what v1 returns,
// and an unchecked box turns its flag off.
func TestFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	logs := new(apitest.LogBuffer)
	e := newEnv(t, func(c *app.Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	w := e.signedIn(t, "admin@a.example")
	if pg := w.get("/console/fields"); pg.Status != 200 || !strings.Contains(pg.Body, "No custom data fields yet.") {
		t.Fatalf("empty list: %d\n%s", pg.Status, pg.Body)
	}
	pg := w.post("/console/fields", fieldForm("include_user_answers", "1", "is_emphasize_personal", "1"))
	if pg.Status != http.StatusSeeOther || pg.Location != "/console/fields?done=created" {
		t.Fatalf("create: %d %q\n%s", pg.Status, pg.Location, pg.Body)
	}
	got := e.v1Field(t, "Shirt Size")
	want := parley.CustomField{ID: got.ID, FieldName: "Shirt Size", CustomDataType: parley.CustomString, Description: "The size they wear",
		AvailableEnumValues: []string{"S", "M", "L"}, IsAutoCollected: true, ExtractionPrompt: "Their shirt size.\nOnly S, M or L.",
		IncludeInAIPrompt: true, IncludeUserAnswers: true, IsEmphasizePersonal: true}
	if !sameField(got, &want) {
		t.Errorf("v1 after create:\n got %+v\nwant %+v", got, want)
	}
	pg = w.get(pg.Location)
	for _, s := range []string{"Field created.", "Shirt Size", "shirt_size", "S, M, L", "Their shirt size.", "value in AI prompt, earlier answers, own statements only"} {
		if !strings.Contains(pg.Body, s) {
			t.Errorf("list after create lacks %q", s)
		}
	}

	fp := "/console/fields/" + itoa(got.ID)
	pg = w.get(fp)
	for _, s := range []string{`id="is_auto_collected" name="is_auto_collected" type="checkbox" value="1" checked`,
		"Their shirt size.\nOnly S, M or L.</textarea>", "S\nM\nL</textarea>", "shirt_size"} {
		if !strings.Contains(pg.Body, s) {
			t.Errorf("edit page lacks %q\n%s", s, pg.Body)
		}
	}
	if strings.Contains(pg.Body, `name="field_name"`) || strings.Contains(pg.Body, `name="is_append"`) {
		t.Errorf("the edit page offers to change the name or, on a STRING field, is_append")
	}
	pg = w.post(fp, editForm("include_in_ai_prompt", "", "include_user_answers", "", "is_emphasize_current", "1",
		"extraction_prompt", "Shirt size, S to XL.", "available_enum_values", "S\nM\nL\nXL", "description", ""))
	if pg.Status != http.StatusSeeOther || pg.Location != fp+"?done=saved" {
		t.Fatalf("save: %d %q\n%s", pg.Status, pg.Location, pg.Body)
	}
	want.IncludeInAIPrompt, want.IncludeUserAnswers, want.IsEmphasizeCurrent, want.IsEmphasizePersonal = false, false, true, false
	want.ExtractionPrompt, want.AvailableEnumValues, want.Description = "Shirt size, S to XL.", []string{"S", "M", "L", "XL"}, ""
	if got := e.v1Field(t, "Shirt Size"); !sameField(got, &want) {
		t.Errorf("v1 after edit:\n got %+v\nwant %+v", got, want)
	}
	if pg := w.get(pg.Location); !strings.Contains(pg.Body, "Field saved.") || !strings.Contains(pg.Body, "Shirt size, S to XL.</textarea>") {
		t.Errorf("page after save:\n%s", pg.Body)
	}
	// Turning auto-collection off and clearing the enum.
	if pg := w.post(fp, editForm("is_auto_collected", "", "available_enum_values", "")); pg.Status != http.StatusSeeOther {
		t.Fatalf("save off: %d\n%s", pg.Status, pg.Body)
	}
	if got := e.v1Field(t, "Shirt Size"); got.IsAutoCollected || len(got.AvailableEnumValues) != 0 || got.AvailableEnumValues == nil {
		t.Errorf("after turning auto-collect off: %+v", got)
	}

	// A LIST field: its item type and is_append, which its edit form offers.
	pg = w.post("/console/fields", fieldForm("field_name", "Hobbies", "custom_data_type", "4", "subtype", "3", "is_append", "1"))
	if pg.Status != http.StatusSeeOther {
		t.Fatalf("create list: %d\n%s", pg.Status, pg.Body)
	}
	l := e.v1Field(t, "Hobbies")
	if l.CustomDataType != parley.CustomList || l.Subtype != parley.CustomString || !l.IsAppend {
		t.Errorf("list field: %+v", l)
	}
	if pg := w.post("/console/fields/"+itoa(l.ID), editForm("is_append", "")); pg.Status != http.StatusSeeOther {
		t.Fatalf("save list: %d\n%s", pg.Status, pg.Body)
	}
	if l := e.v1Field(t, "Hobbies"); l.IsAppend {
		t.Errorf("is_append still on after unchecking it")
	}
	if b, _ := e.B.ListCustomFields(e.Ctx); len(b) != 0 {
		t.Errorf("brand B has fields: %+v", b)
	}
	// Each change is logged as the console's, by the operator.
	for _, msg := range []string{"console: custom data field created", "console: custom data field changed"} {
		if !strings.Contains(logs.String(), `"msg":"`+msg+`","brand_id":`+itoa(e.BrandA.ID)+`,"field_id":`+itoa(got.ID)) {
			t.Errorf("no log %q of the field\n%s", msg, logs)
		}
	}
	if n := strings.Count(logs.String(), `"source":"console","operator":"admin@a.example"`); n != 5 {
		t.Errorf("%d changes logged with source console and the operator, want 5\n%s", n, logs)
	}
}

func sameField(a, b *parley.CustomField) bool {
	return reflect.DeepEqual(a, b) && a.AvailableEnumValues != nil
}

// TestFieldsBadInput: each bad value is refused with the admin API's rule
// (D6, D20, #15), 422 (409 for a taken name) with the message next to its
// field; the form keeps what was typed and nothing changes.
func TestFieldsBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Size", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"S"}})
	fp := "/console/fields/" + itoa(f.ID)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	long := strings.Repeat("é", parley.MaxExtractionPrompt+1)
	for name, c := range map[string]struct {
		path   string
		form   url.Values
		field  string
		status int
	}{
		"create: prompt too long":   {"/console/fields", fieldForm("extraction_prompt", long), "extraction_prompt", 422},
		"create: control in prompt": {"/console/fields", fieldForm("extraction_prompt", "size\x01"), "extraction_prompt", 422},
		// A NUL anywhere in a form is refused before any page sees it (TestFormNULRefused).
		"create: control in enum value": {"/console/fields", fieldForm("available_enum_values", "S\nM\x07L"), "available_enum_values", 422},
		"create: tab in enum value":     {"/console/fields", fieldForm("available_enum_values", "S\tM"), "available_enum_values", 422},
		"create: control in name":       {"/console/fields", fieldForm("field_name", "Size\x1b"), "field_name", 422},
		"create: empty name":            {"/console/fields", fieldForm("field_name", ""), "field_name", 422},
		"create: name without a letter": {"/console/fields", fieldForm("field_name", "--"), "field_name", 422},
		"create: taken name":            {"/console/fields", fieldForm("field_name", "size"), "field_name", 409},
		"create: type 9":                {"/console/fields", fieldForm("custom_data_type", "9"), "custom_data_type", 422},
		"create: type not a number":     {"/console/fields", fieldForm("custom_data_type", "text"), "custom_data_type", 422},
		"create: subtype on a string":   {"/console/fields", fieldForm("subtype", "1"), "subtype", 422},
		"create: list of lists":         {"/console/fields", fieldForm("custom_data_type", "4", "subtype", "4"), "subtype", 422},
		"create: append on a string":    {"/console/fields", fieldForm("is_append", "1"), "is_append", 422},
		"edit: prompt too long":         {fp, editForm("extraction_prompt", long), "extraction_prompt", 422},
		"edit: control in prompt":       {fp, editForm("extraction_prompt", "line\x0bbreak"), "extraction_prompt", 422},
		"edit: control in description":  {fp, editForm("description", "\x7f\x1f"), "description", 422},
		"edit: control in enum value":   {fp, editForm("available_enum_values", "S\n\x01"), "available_enum_values", 422},
	} {
		p := w.post(c.path, c.form)
		if p.Status != c.status || !strings.Contains(p.Body, `<span id="`+c.field+`-error" class="field-error">`) ||
			!strings.Contains(p.Body, `aria-describedby="`+c.field+`-error"`) {
			t.Errorf("%s: %d, want %d with the error next to %s\n%s", name, p.Status, c.status, c.field, p.Body)
		}
		if v := c.form.Get(c.field); c.field != "is_append" && c.field != "custom_data_type" && c.field != "subtype" &&
			!strings.Contains(p.Body, strings.NewReplacer("\r\n", "\n", "\x00", "\uFFFD").Replace(v)) { // html/template shows NUL as U+FFFD
			t.Errorf("%s: the form does not keep %q", name, v)
		}
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused forms changed the database:\nbefore %s\nafter  %s", before, after)
	}
	if p := w.post("/console/fields/999999", editForm()); p.Status != http.StatusNotFound {
		t.Errorf("save of an unknown field: %d, want 404", p.Status)
	}
}

// TestSettingsExtractWhenOptedOut: the Settings form has D20's
// extract_when_opted_out, off by default; checking it turns the brand's
// setting on, unchecking it off, and the other brand's stays as it was.
func TestSettingsExtractWhenOptedOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	box := `id="extract_when_opted_out" name="extract_when_opted_out" type="checkbox" value="1"`
	p := w.get("/console/settings")
	if !strings.Contains(p.Body, box+">") || !strings.Contains(p.Body, `<label for="extract_when_opted_out" class="inline">`) {
		t.Fatalf("settings page lacks the unchecked box with its label\n%s", p.Body)
	}
	if p := w.post("/console/settings", settingsForm("extract_when_opted_out", "1")); p.Status != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", p.Status, p.Body)
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID); !st.ExtractWhenOptedOut {
		t.Errorf("extract_when_opted_out not on after checking it")
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandB.ID); st.ExtractWhenOptedOut {
		t.Errorf("brand B's extract_when_opted_out turned on")
	}
	if p := w.get("/console/settings"); !strings.Contains(p.Body, box+" checked>") {
		t.Errorf("the box is not shown checked")
	}
	// A refused form keeps the box as sent and changes nothing.
	if p := w.post("/console/settings", settingsForm("send_rate", "fast")); p.Status != 422 || !strings.Contains(p.Body, box+">") {
		t.Errorf("refused form: %d, want 422 with the box as sent (unchecked)", p.Status)
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID); !st.ExtractWhenOptedOut {
		t.Errorf("a refused form turned extract_when_opted_out off")
	}
	if p := w.post("/console/settings", settingsForm()); p.Status != http.StatusSeeOther {
		t.Fatalf("save unchecked: %d", p.Status)
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID); st.ExtractWhenOptedOut {
		t.Errorf("extract_when_opted_out still on after unchecking it")
	}
}

// TestBrowserFieldAutoCollect: in Chromium, an admin opens Custom data,
// creates a field, turns on "Auto-collect" with a two-line prompt on it,
// saves and sees it listed as auto-collected (D19, D20, #19); the pages
// keep D19's rules at desktop and phone width.
func TestBrowserFieldAutoCollect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := newBrowser(t, e.Server.URL)
	b.signIn("admin@a.example", password)
	b.Submit("Custom data")
	if h := b.H1(); h != "Custom data fields" {
		t.Fatalf("Custom data link: %q", h)
	}
	b.checkPage()
	b.Fill("Name", "Favorite Color")
	b.Submit("Create field")
	b.WaitText("Field created.")
	b.Submit("Favorite Color")
	if h := b.H1(); h != "Custom data field Favorite Color" {
		t.Fatalf("field link: %q", h)
	}
	b.checkPage()
	b.Check("Auto-collect")
	b.Fill("Extraction prompt", "The color they like best.\nOne word.")
	b.Fill("Allowed values", "red\ngreen\nblue")
	b.Submit("Save field")
	b.WaitText("Field saved.")
	b.Submit("All custom data fields")
	b.WaitText("The color they like best.")
	if txt := b.Text(); !strings.Contains(txt, "Favorite Color\tfavorite_color\tString\tred, green, blue\tyes") {
		t.Errorf("the list does not show the field auto-collected:\n%s", txt)
	}
	f := e.v1Field(t, "Favorite Color")
	if !f.IsAutoCollected || f.ExtractionPrompt != "The color they like best.\nOne word." {
		t.Errorf("stored field: %+v", f)
	}
	b.Phone()
	b.checkPage()
	b.Go("/console/fields/" + itoa(f.ID))
	b.checkPage()
}

// Check clicks the checkbox labelled label.
func (b *browser) Check(label string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(labelled(label)), chromedp.Click(labelled(label)))
}

// TestFieldsEnumBounds: the console's field form refuses an enum list
// over the service's bounds (issue #31 item 7) next to the list, and
// creates nothing.
func TestFieldsEnumBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	many := ""
	for i := range parley.MaxEnumValues + 1 {
		many += "v" + itoa(int64(i)) + "\n"
	}
	for _, tc := range []struct{ enum, msg string }{
		{many, "at most 500 values (501 given)"},
		{"S\nM\n" + strings.Repeat("L", 101), "at most 100 characters (101 given)"},
	} {
		pg := w.post("/console/fields", fieldForm("available_enum_values", tc.enum))
		if pg.Status != http.StatusUnprocessableEntity || !strings.Contains(pg.Body, tc.msg) {
			t.Errorf("enum list %.20q…: %d, want 422 with %q", tc.enum, pg.Status, tc.msg)
		}
	}
	if list, err := e.A.ListCustomFields(e.Ctx); err != nil || len(list) != 0 {
		t.Errorf("fields after refused forms: %v %v", list, err)
	}
}
