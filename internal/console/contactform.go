package console

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/service"
)

// Adding, editing and deleting a contact (issue #32). An edit changes only
// what the form changed, through the API's own update (the same checks,
// the same user.updated and consent events); consent and custom data
// changes are recorded in the contact's history (D18) with source console
// and, as detail, the operator's email and the reason they typed. Every
// refusal is shown next to its field at once, and nothing is saved.
func init() {
	Register(Page{
		Path: "contacts/new", Title: "Add a contact",
		Template: "contact_form.html",
		Get:      func(c *Ctx) error { return c.contactForm(http.StatusOK, c.newForm(), "") },
		Post:     addContact,
	})
	Register(Page{
		Path: "contacts/{id}/edit", Title: "Edit contact",
		Template: "contact_form.html",
		Get:      editContactPage,
		Post:     saveContact,
	})
	Register(Page{
		Path: "contacts/{id}/delete", Title: "Delete contact",
		Template: "contact_delete.html",
		Get: func(c *Ctx) error {
			u, err := c.contact()
			if err != nil {
				return err
			}
			c.Title = "Delete " + displayName(u) + "?"
			return c.Render(u)
		},
		Post: deleteContact,
	})
}

// maxReason bounds the reason an operator gives for a consent change.
const maxReason = 200

// defaultCountry is the country of a phone number typed without "+": the
// brand's default_country setting (D22).
func (c *Ctx) defaultCountry() string {
	if st, err := c.Service.BrandSettings(c, c.BrandID()); err == nil && st.DefaultCountry != "" {
		return st.DefaultCountry
	}
	return parley.DefaultCountry
}

// contactFormData is what contact_form.html shows.
type contactFormData struct {
	User  *parley.User // nil when adding
	Phone string
	First string
	Last  string
	Email string
	ZIP   string
	// Consent is "in", "out" or "none".
	Consent string
	Reason  string
	Fields  []customInput
	// Errors are the refusals in words, by input name.
	Errors  map[string]string
	Country string
}

// customInput is one custom field's input.
type customInput struct {
	Name, Label, Key, Kind, Value string
	Options                       []string
	// Selected are a list's chosen values.
	Selected []string
	Hint     string
	field    *parley.CustomField
}

// IsSelected reports whether v is one of a list's chosen values.
func (in customInput) IsSelected(v string) bool { return slices.Contains(in.Selected, v) }

// Action is where the form posts.
func (d *contactFormData) Action() string {
	if d.User == nil {
		return Prefix + "contacts/new"
	}
	return Prefix + "contacts/" + strconv.FormatInt(d.User.ID, 10) + "/edit"
}

func (c *Ctx) newForm() *contactFormData {
	d := &contactFormData{Consent: "none", Country: c.defaultCountry(), Errors: map[string]string{}}
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err == nil {
		d.Fields = customInputs(fields, nil)
	}
	return d
}

func (c *Ctx) contactForm(status int, d *contactFormData, msg string) error {
	if d.User != nil {
		c.Title = "Edit " + displayName(d.User)
	}
	return c.RenderStatus(status, d, msg)
}

// consentWord is a consent as the form's menu says it.
func consentWord(b *bool) string {
	switch {
	case b == nil:
		return "none"
	case *b:
		return parley.ConsentIn
	}
	return parley.ConsentOut
}

func editContactPage(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	d := &contactFormData{User: u, Phone: u.PhoneNumber, First: deref(u.FirstName), Last: deref(u.LastName),
		Email: deref(u.EmailAddress), Consent: consentWord(u.MessagingConsent), Errors: map[string]string{},
		Fields: customInputs(fields, u.CustomData)}
	if u.Location != nil {
		d.ZIP = deref(u.Location.PostalCode)
	}
	return c.contactForm(http.StatusOK, d, "")
}

// customInputs are the inputs of the brand's custom fields, with the
// contact's values (data, nil for none).
func customInputs(fields []*parley.CustomField, data json.RawMessage) []customInput {
	var m map[string]json.RawMessage
	if len(data) > 0 {
		_ = json.Unmarshal(data, &m)
	}
	out := make([]customInput, 0, len(fields))
	for _, f := range fields {
		key := parley.CustomDataKey(f.FieldName)
		in := customInput{Name: "cf_" + key, Label: f.FieldName, Key: key, field: f, Hint: f.Description}
		raw := m[key]
		switch {
		case f.CustomDataType == parley.CustomList:
			var items []any
			_ = json.Unmarshal(raw, &items)
			for _, it := range items {
				in.Selected = append(in.Selected, scalarText(it))
			}
			if len(f.AvailableEnumValues) > 0 {
				in.Kind, in.Options = "multi", f.AvailableEnumValues
			} else {
				in.Kind, in.Value = "text", strings.Join(in.Selected, ", ")
				in.Hint = strings.TrimSpace(in.Hint + " Several values: separate them with commas.")
			}
		case len(f.AvailableEnumValues) > 0:
			in.Kind, in.Options, in.Value = "menu", f.AvailableEnumValues, rawText(raw)
		case f.CustomDataType == parley.CustomBoolean:
			in.Kind = "yesno"
			switch strings.ToLower(rawText(raw)) {
			case "true", "1":
				in.Value = "true"
			case "false", "0":
				in.Value = "false"
			}
		case f.CustomDataType == parley.CustomDate:
			in.Kind, in.Value = "date", isoDate(rawText(raw))
		case f.CustomDataType == parley.CustomInteger:
			in.Kind, in.Value = "integer", rawText(raw)
		case f.CustomDataType == parley.CustomFloat:
			in.Kind, in.Value = "number", rawText(raw)
		default:
			in.Kind, in.Value = "text", rawText(raw)
		}
		out = append(out, in)
	}
	return out
}

func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return scalarText(v)
}

func scalarText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// isoDate turns a D6 date (MM/DD/YYYY or YYYY-MM-DD) into a date input's
// YYYY-MM-DD.
func isoDate(s string) string {
	if len(s) == 10 && s[2] == '/' && s[5] == '/' {
		return s[6:] + "-" + s[:2] + "-" + s[3:5]
	}
	return s
}

// readCustom reads the custom field inputs into d.Fields and returns each
// value as custom_data holds it (JSON null for an emptied input).
func (c *Ctx) readCustom(d *contactFormData) map[string]json.RawMessage {
	vals := map[string]json.RawMessage{}
	for i := range d.Fields {
		in := &d.Fields[i]
		f := in.field
		var v any
		switch in.Kind {
		case "multi":
			in.Selected = c.R.PostForm[in.Name]
			if len(in.Selected) > 0 {
				v = in.Selected
			}
		default:
			in.Value = strings.TrimSpace(c.Form(in.Name))
			switch {
			case in.Value == "":
			case f.CustomDataType == parley.CustomList:
				var items []any
				for _, p := range strings.Split(in.Value, ",") {
					if p = strings.TrimSpace(p); p != "" {
						items = append(items, listItem(f.Subtype, p))
					}
				}
				v = items
			case f.CustomDataType == parley.CustomInteger || f.CustomDataType == parley.CustomFloat:
				v = listItem(f.CustomDataType, in.Value)
			default:
				v = in.Value
			}
		}
		b, _ := json.Marshal(v)
		vals[in.Key] = b
	}
	return vals
}

// listItem is a typed value as JSON takes it: a number when the type is
// one and it reads as one (else the text, which the check then refuses).
func listItem(typ int, s string) any {
	if typ == parley.CustomInteger || typ == parley.CustomFloat {
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return json.Number(strconv.FormatFloat(n, 'f', -1, 64))
		}
	}
	return s
}

// readForm reads the posted form into d and the fields to send.
func (c *Ctx) readForm(d *contactFormData) parley.UserFields {
	d.First, d.Last = strings.TrimSpace(c.Form("first_name")), strings.TrimSpace(c.Form("last_name"))
	d.Email, d.ZIP = strings.TrimSpace(c.Form("email")), strings.TrimSpace(c.Form("zip"))
	d.Consent, d.Reason = c.Form("consent"), strings.TrimSpace(c.Form("reason"))
	var in parley.UserFields
	text := func(o *parley.Optional[string], v string, was *string) {
		if v != deref(was) {
			if v == "" {
				*o = parley.Null[string]()
			} else {
				*o = parley.Some(v)
			}
		}
	}
	var u parley.User
	if d.User != nil {
		u = *d.User
	}
	text(&in.FirstName, d.First, u.FirstName)
	text(&in.LastName, d.Last, u.LastName)
	text(&in.EmailAddress, d.Email, u.EmailAddress)
	var zip *string
	if u.Location != nil {
		zip = u.Location.PostalCode
	}
	text(&in.PostalCode, d.ZIP, zip)
	if d.Consent != consentWord(u.MessagingConsent) {
		switch d.Consent {
		case parley.ConsentIn:
			in.MessagingConsent = parley.Some(true)
		case parley.ConsentOut:
			in.MessagingConsent = parley.Some(false)
		case "none":
			in.MessagingConsent = parley.Null[bool]()
		default:
			d.Errors["consent"] = "Choose opted in, opted out or not given."
		}
	}
	// Only the custom data values the form changed are sent.
	was := customInputs(fieldsOf(d.Fields), u.CustomData)
	vals := c.readCustom(d)
	changed := map[string]json.RawMessage{}
	for i, in := range d.Fields {
		if in.Value != was[i].Value || !slices.Equal(in.Selected, was[i].Selected) {
			changed[in.Key] = vals[in.Key]
		}
	}
	if len(changed) > 0 {
		b, _ := json.Marshal(changed)
		in.CustomData = parley.Some(json.RawMessage(b))
	}
	if in.MessagingConsent.Set {
		switch {
		case d.Reason == "":
			d.Errors["reason"] = "Say why the consent changes (for example “asked by phone to stop”): it is kept in the contact's history."
		case utf8.RuneCountInString(d.Reason) > maxReason:
			d.Errors["reason"] = "At most " + strconv.Itoa(maxReason) + " characters."
		}
	}
	return in
}

func fieldsOf(ins []customInput) []*parley.CustomField {
	out := make([]*parley.CustomField, len(ins))
	for i, in := range ins {
		out[i] = in.field
	}
	return out
}

// fieldErrors turns the service's refusals into words next to the inputs.
func fieldErrors(d *contactFormData, errs []*parley.Error) {
	for _, e := range errs {
		switch e.Field {
		case "first_name", "last_name":
			d.Errors[e.Field] = "At most 50 characters."
		case "email_address":
			d.Errors["email"] = "Enter one email address, like name@example.com."
		case "postal_code":
			d.Errors["zip"] = "Enter a US ZIP code: 5 digits, or ZIP+4 like 10001-1234."
		case "phone_number":
			d.Errors["phone"] = "This is not a phone number we can text. Enter it as you would dial it in " + d.CountryName() + ", like (415) 555-0123, or with + and the country code."
		default:
			key, ok := strings.CutPrefix(e.Field, "custom_data.")
			if !ok {
				d.Errors["form"] = parley.ErrorMessage(e)
				continue
			}
			for _, in := range d.Fields {
				if in.Key == key {
					d.Errors[in.Name] = customRule(in)
				}
			}
		}
	}
}

// customRule says what a custom field takes.
func customRule(in customInput) string {
	switch {
	case len(in.Options) > 0:
		return "Choose values from the list."
	case in.field.CustomDataType == parley.CustomInteger:
		return "Enter a whole number, like 3."
	case in.field.CustomDataType == parley.CustomFloat:
		return "Enter a number, like 2.5."
	case in.field.CustomDataType == parley.CustomDate:
		return "Enter a date."
	case in.field.CustomDataType == parley.CustomList && in.field.Subtype == parley.CustomInteger:
		return "Enter whole numbers separated by commas."
	case in.field.CustomDataType == parley.CustomList && in.field.Subtype == parley.CustomFloat:
		return "Enter numbers separated by commas."
	}
	return "This value is too long or not allowed here."
}

// CountryName names the default country for people.
func (d *contactFormData) CountryName() string {
	if d.Country == "" || d.Country == "US" {
		return "the US"
	}
	return d.Country
}

// refused answers the form again with every error; nothing was saved.
func (c *Ctx) refused(d *contactFormData) error {
	n := len(d.Errors)
	msg := "Nothing was saved: fix the field marked below."
	if n > 1 {
		msg = "Nothing was saved: fix the " + strconv.Itoa(n) + " fields marked below."
	}
	if m, ok := d.Errors["form"]; ok {
		msg = "Nothing was saved: " + m
	}
	return c.contactForm(http.StatusUnprocessableEntity, d, msg)
}

// origin is the history's source and detail for the operator's change.
func (c *Ctx) origin(reason string) parley.Origin {
	detail := c.Operator.Email
	if reason != "" {
		detail += ": " + reason
	}
	return parley.Origin{Source: parley.SourceConsole, Detail: detail}
}

func saveContact(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	fields, err := c.Service.ListCustomFields(c, c.BrandID())
	if err != nil {
		return err
	}
	d := &contactFormData{User: u, Phone: u.PhoneNumber, Errors: map[string]string{}, Fields: customInputs(fields, u.CustomData)}
	in := c.readForm(d)
	fieldErrors(d, c.Service.UserFieldErrors(c, c.BrandID(), in))
	if len(d.Errors) > 0 {
		return c.refused(d)
	}
	reason := ""
	if in.MessagingConsent.Set {
		reason = d.Reason
	}
	if _, err := c.Service.UpdateUser(c, c.origin(reason), c.BrandID(), u.ID, parley.UserUpdate{UserFields: in}); err != nil {
		if parley.ErrorCode(err) == parley.EInternal || parley.ErrorCode(err) == parley.EUnavailable {
			return err
		}
		d.Errors["form"] = parley.ErrorMessage(err)
		return c.refused(d)
	}
	return c.Redirect("contacts/" + strconv.FormatInt(u.ID, 10))
}

func addContact(c *Ctx) error {
	d := c.newForm()
	d.Phone = strings.TrimSpace(c.Form("phone"))
	in := c.readForm(d)
	errs := c.Service.UserFieldErrors(c, c.BrandID(), in)
	e164 := service.NationalNumber(d.Phone, d.Country)
	fieldErrors(d, errs)
	if d.Phone == "" {
		d.Errors["phone"] = "Enter the contact's phone number."
	} else if c.Service.CheckPhone(e164) != nil {
		fieldErrors(d, []*parley.Error{{Field: "phone_number"}})
	}
	if len(d.Errors) > 0 {
		return c.refused(d)
	}
	reason := ""
	if in.MessagingConsent.Set {
		reason = d.Reason
	}
	u, err := c.Service.CreateUser(c, c.origin(reason), c.BrandID(), parley.UserCreate{PhoneNumber: parley.Some(e164), UserFields: in})
	switch parley.ErrorCode(err) {
	case "":
		return c.Redirect("contacts/" + strconv.FormatInt(u.ID, 10))
	case parley.EInvalidPhoneNumber:
		fieldErrors(d, []*parley.Error{{Field: "phone_number"}})
	case parley.EDuplicate:
		d.Errors["phone"] = e164 + " is already a contact: search for it above, or enter another number."
	case parley.EInternal, parley.EUnavailable:
		return err
	default:
		d.Errors["form"] = parley.ErrorMessage(err)
	}
	return c.refused(d)
}

func deleteContact(c *Ctx) error {
	u, err := c.contact()
	if err != nil {
		return err
	}
	if _, err := c.Service.DeleteUser(c, c.origin(""), c.BrandID(), u.ID); err != nil {
		return err
	}
	return c.Redirect("contacts?deleted=" + strconv.FormatInt(u.ID, 10))
}
