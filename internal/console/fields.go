package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

// The Custom data fields page (D19, D10, D20, issues #18 and #19): the
// brand's fields with their auto-collection flags, a form to create one
// (service.CreateCustomField, as POST /admin/v1/brands/{id}/custom_data_fields)
// and a page to edit one (service.UpdateCustomField, as POST
// …/custom_data_fields/{field_id}): everything but the name, type and
// subtype, which make the custom_data key and the form of stored values.
// The same rules as the admin API, so a bad value (a prompt too long,
// control characters, a bad enum value) changes nothing. Admins only.
func init() {
	Register(Page{
		Path: "fields", Title: "Custom data fields", Nav: "Custom data", Order: 75, Admin: true,
		Template: "fields.html", Get: fieldsPage, Post: fieldCreate,
	})
	Register(Page{
		Path: "fields/{id}", Title: "Custom data field", Admin: true,
		Template: "fields.html", Get: fieldPage, Post: fieldSave,
	})
}

// fieldTypes are the D6 types by number, for the select and the list.
var fieldTypes = []fieldType{{parley.CustomInteger, "Integer"}, {parley.CustomFloat, "Float"},
	{parley.CustomString, "String"}, {parley.CustomList, "List"}, {parley.CustomBoolean, "Boolean"},
	{parley.CustomDate, "Date"}}

type fieldType struct {
	N    int
	Name string
}

// typeName is a D6 type's name ("" for none).
func typeName(n int) string {
	for _, t := range fieldTypes {
		if t.N == n {
			return t.Name
		}
	}
	return ""
}

// fieldForm is the create and edit forms as sent: the field's members,
// with the enum values as the textarea's text (one a line).
type fieldForm struct {
	parley.CustomField
	Enum string
}

// fieldsData is what fields.html sees: the list and create form, or one
// field's edit form when Field is set.
type fieldsData struct {
	Fields []*parley.CustomField
	// Field is the field being edited (field.html), as stored.
	Field *parley.CustomField
	// Form is the form as sent, kept after an error; Errors are its
	// errors by form field name.
	Form   fieldForm
	Errors map[string]string
	Types  []fieldType
	Notice string
	// MaxPrompt bounds the extraction prompt's textarea (D20).
	MaxPrompt int
}

// Key is a field's custom_data key (D6).
func (fieldsData) Key(name string) string { return parley.CustomDataKey(name) }

// TypeName is a D6 type's name.
func (fieldsData) TypeName(n int) string { return typeName(n) }

// Error is the error of the form field name ("" for none).
func (d fieldsData) Error(name string) string { return d.Errors[name] }

func fieldsPage(c *Ctx) error {
	d := fieldsData{Form: fieldForm{CustomField: parley.CustomField{CustomDataType: parley.CustomString}}}
	if c.R.URL.Query().Get("done") == "created" {
		d.Notice = "Field created."
	}
	return c.renderFields(http.StatusOK, d, "")
}

func (c *Ctx) renderFields(status int, d fieldsData, errMsg string) error {
	list, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	d.Fields, d.Types, d.MaxPrompt = list, fieldTypes, parley.MaxExtractionPrompt
	return c.RenderStatus(status, d, errMsg)
}

// readFieldForm reads the members both forms have. A checkbox left
// unchecked is false; a textarea's CRLF lines are kept as LF.
func readFieldForm(c *Ctx) fieldForm {
	lf := strings.NewReplacer("\r\n", "\n")
	f := fieldForm{Enum: lf.Replace(c.Form("available_enum_values"))}
	f.Description = lf.Replace(c.Form("description"))
	f.ExtractionPrompt = lf.Replace(c.Form("extraction_prompt"))
	f.IsAutoCollected = c.Form("is_auto_collected") != ""
	f.IncludeInAIPrompt = c.Form("include_in_ai_prompt") != ""
	f.IncludeUserAnswers = c.Form("include_user_answers") != ""
	f.IsEmphasizeCurrent = c.Form("is_emphasize_current") != ""
	f.IsEmphasizePersonal = c.Form("is_emphasize_personal") != ""
	f.IsAppend = c.Form("is_append") != ""
	f.AvailableEnumValues = enumValues(f.Enum)
	return f
}

// enumValues reads the textarea's values, one a line: each trimmed of
// spaces, empty lines skipped (an empty textarea is any value). What is
// left goes to the service, which refuses control characters in a value.
func enumValues(s string) []string {
	out := []string{}
	for line := range strings.SplitSeq(s, "\n") {
		if v := strings.Trim(line, " \r"); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// fieldCreate creates a field with the admin API's rules (D10).
func fieldCreate(c *Ctx) error {
	f := readFieldForm(c)
	f.FieldName = strings.TrimSpace(c.Form("field_name"))
	f.CustomDataType = formInt(c.Form("custom_data_type"))
	f.Subtype = formInt(c.Form("subtype"))
	nf := f.CustomField
	nf.BrandID = c.BrandID()
	if err := c.Service.CreateCustomField(c, &nf); err != nil {
		return c.fieldError(err, f, nil, "The field was not created: see below.")
	}
	c.console.Logger.InfoContext(c, "console: custom data field created", "brand_id", c.BrandID(), "field_id", nf.ID,
		"field_name", nf.FieldName, "is_auto_collected", nf.IsAutoCollected,
		"source", parley.SourceConsole, "operator", c.Operator.Email)
	return c.Redirect("fields?done=created")
}

// fieldError shows a refused form with the error next to its field: 422
// for a bad value, 409 for a name the brand has; other errors are the
// error page's.
func (c *Ctx) fieldError(err error, f fieldForm, field *parley.CustomField, msg string) error {
	status, _ := statusOf(parley.ErrorCode(err))
	if status != http.StatusUnprocessableEntity && status != http.StatusConflict {
		return err
	}
	name := fieldName(errField(err))
	if name == "" {
		name = "field_name" // a taken name
	}
	d := fieldsData{Form: f, Errors: map[string]string{name: parley.ErrorMessage(err)}}
	if field == nil {
		return c.renderFields(status, d, msg)
	}
	return c.renderField(status, field, d, msg)
}

// findField returns the field of the page's {id}, of the operator's brand.
func findField(c *Ctx) (*parley.CustomField, error) {
	id, err := strconv.ParseInt(c.R.PathValue("id"), 10, 64)
	if err == nil && id > 0 {
		list, err := c.Service.ListCustomFields(c, c.BrandID())
		if err != nil {
			return nil, err
		}
		for _, f := range list {
			if f.ID == id {
				return f, nil
			}
		}
	}
	return nil, parley.Errorf(parley.ENotFound, "There is no such custom data field.")
}

func fieldPage(c *Ctx) error {
	f, err := findField(c)
	if err != nil {
		return err
	}
	d := fieldsData{Form: fieldForm{CustomField: *f, Enum: strings.Join(f.AvailableEnumValues, "\n")}}
	if c.R.URL.Query().Get("done") == "saved" {
		d.Notice = "Field saved."
	}
	return c.renderField(http.StatusOK, f, d, "")
}

func (c *Ctx) renderField(status int, f *parley.CustomField, d fieldsData, errMsg string) error {
	c.Title = "Custom data field " + f.FieldName
	d.Field, d.Types, d.MaxPrompt = f, fieldTypes, parley.MaxExtractionPrompt
	return c.RenderStatus(status, d, errMsg)
}

// fieldSave applies the edit form: every member it shows is set, so an
// unchecked box turns its flag off (#19).
func fieldSave(c *Ctx) error {
	f, err := findField(c)
	if err != nil {
		return err
	}
	in := readFieldForm(c)
	u := parley.CustomFieldUpdate{
		Description:         parley.Some(in.Description),
		AvailableEnumValues: parley.Some(in.AvailableEnumValues),
		IncludeInAIPrompt:   parley.Some(in.IncludeInAIPrompt),
		IncludeUserAnswers:  parley.Some(in.IncludeUserAnswers),
		IsAutoCollected:     parley.Some(in.IsAutoCollected),
		ExtractionPrompt:    parley.Some(in.ExtractionPrompt),
		IsEmphasizeCurrent:  parley.Some(in.IsEmphasizeCurrent),
		IsEmphasizePersonal: parley.Some(in.IsEmphasizePersonal),
	}
	if f.CustomDataType == parley.CustomList {
		u.IsAppend = parley.Some(in.IsAppend) // the form shows it for lists only
	}
	out, err := c.Service.UpdateCustomField(c, c.BrandID(), f.ID, u)
	if err != nil {
		return c.fieldError(err, in, f, "The field was not saved: see below.")
	}
	c.console.Logger.InfoContext(c, "console: custom data field changed", "brand_id", c.BrandID(), "field_id", out.ID,
		"field_name", out.FieldName, "is_auto_collected", out.IsAutoCollected, "include_in_ai_prompt", out.IncludeInAIPrompt,
		"source", parley.SourceConsole, "operator", c.Operator.Email)
	return c.Redirect("fields/" + strconv.FormatInt(f.ID, 10) + "?done=saved")
}

// input is one form control of the field forms, for the templates "text",
// "area" and "check": its name, label, value and error.
type input struct {
	Name, Label, Value, Error, Hint string
	Checked                         bool
	// Max bounds a textarea's length (0: none).
	Max int
}

// Text is the text input name.
func (d fieldsData) Text(name, label, value string) input {
	return input{Name: name, Label: label, Value: value, Error: d.Errors[name]}
}

// Area is the textarea name; hint says what it takes.
func (d fieldsData) Area(name, label, value, hint string, max int) input {
	return input{Name: name, Label: label, Value: value, Error: d.Errors[name], Hint: hint, Max: max}
}

// Check is the checkbox name.
func (d fieldsData) Check(name, label string, checked bool) input {
	return input{Name: name, Label: label, Checked: checked, Error: d.Errors[name]}
}

// Flags names a field's D20 flags other than is_auto_collected, for the
// list ("" for none).
func (fieldsData) Flags(f *parley.CustomField) string {
	var out []string
	for _, fl := range []struct {
		on   bool
		name string
	}{{f.IncludeInAIPrompt, "value in AI prompt"}, {f.IncludeUserAnswers, "earlier answers"},
		{f.IsEmphasizeCurrent, "latest wins"}, {f.IsEmphasizePersonal, "own statements only"}, {f.IsAppend, "appends"}} {
		if fl.on {
			out = append(out, fl.name)
		}
	}
	return strings.Join(out, ", ")
}
