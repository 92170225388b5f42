package console

import (
	"net/http"
	"strings"

	"github.com/parleyhq/parley"
)

// The brand part of the Settings page (D22, issue #32): the brand's name,
// its number (inbound texts are routed to the brand by it) and the default
// country of its contacts' national numbers, saved through the service of
// POST /admin/v1/brands/{id}/settings. Admins only.
func init() {
	Register(Page{
		Path: "settings/brand", Title: "Settings", Admin: true,
		Template: "settings*.html", Post: settingsBrandSave,
	})
}

// brandForm is the brand form as sent or stored, with its errors by field.
type brandForm struct {
	Name, PhoneNumber, DefaultCountry string
	Errors                            map[string]string
}

// Countries are the default-country menu's choices.
func (f brandForm) Countries() []country { return countryOptions(f.DefaultCountry) }

// brandFormOf is the form of the stored settings, unless f was sent.
func (c *Ctx) brandFormOf(f brandForm) (brandForm, error) {
	if f.Errors != nil {
		return f, nil
	}
	st, err := c.Service.BrandSettings(c, c.BrandID())
	if err != nil {
		return f, err
	}
	return brandForm{Name: st.Name, PhoneNumber: st.PhoneNumber, DefaultCountry: st.DefaultCountry}, nil
}

func settingsBrandSave(c *Ctx) error {
	f := brandForm{Name: strings.TrimSpace(c.Form("brand_name")), PhoneNumber: strings.TrimSpace(c.Form("brand_phone")),
		DefaultCountry: c.Form("default_country")}
	u := parley.BrandSettingsUpdate{BrandIdentityUpdate: parley.BrandIdentityUpdate{
		Name: parley.Some(f.Name), PhoneNumber: parley.Some(f.PhoneNumber), DefaultCountry: parley.Some(f.DefaultCountry)}}
	if _, err := c.Service.UpdateBrandSettings(c, c.BrandID(), u); err != nil {
		if parley.ErrorCode(err) != parley.EValidation {
			return err
		}
		// Every refusal at once, each member checked alone.
		all, cerr := c.Service.CheckBrandIdentity(c, c.BrandID(), u.BrandIdentityUpdate)
		if cerr != nil {
			return cerr
		}
		if len(all) == 0 {
			all = []error{err}
		}
		f.Errors = map[string]string{}
		for _, e := range all {
			field := map[string]string{"name": "brand_name", "phone_number": "brand_phone", "default_country": "default_country"}[errField(e)]
			f.Errors[field] = brandErrorText(errField(e), parley.ErrorMessage(e))
		}
		return c.renderSettings(http.StatusUnprocessableEntity, settingsData{Brand: f}, "The brand was not saved: see below.")
	}
	c.console.Logger.InfoContext(c, "console: brand name, number or country changed", "brand_id", c.BrandID(),
		"source", parley.SourceConsole, "operator", c.Operator.Email)
	return c.Redirect("settings?done=saved")
}

// brandErrorText is the service's message in the form's words.
func brandErrorText(field, msg string) string {
	switch field {
	case "name":
		return "Enter the brand's name, as your contacts know it (at most 100 characters)."
	case "phone_number":
		if strings.Contains(msg, "another brand") {
			return "Another brand on this server already uses this number. Each brand needs its own number, because replies are routed to a brand by the number they are sent to."
		}
		return "Enter the number you send from in international form, with + and the country code, such as +12125550100."
	case "default_country":
		return "Choose a country from the list."
	}
	return msg
}
