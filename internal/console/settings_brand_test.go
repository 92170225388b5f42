package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSettingsBrand: an admin changes the brand's name, sending number
// and default country on the Settings page with the admin API's rules
// (D22): saved, they are what the service and GET /brand show; a number
// another brand uses is refused in plain words next to its field and
// changes nothing; an agent cannot post the form.
func TestSettingsBrand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.get("/console/settings")
	for _, want := range []string{`<h2>Brand</h2>`, `value="` + e.BrandA.Name + `"`, `value="` + e.BrandA.PhoneNumber + `"`,
		`<option value="US" selected>United States</option>`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("Settings page lacks %s", want)
		}
	}
	p = w.post("/console/settings/brand", url.Values{"brand_name": {" Acme Coffee "}, "brand_phone": {"+1 (415) 555-0177"}, "default_country": {"CA"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", p.Status, p.Body)
	}
	st, err := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID)
	if err != nil || st.Name != "Acme Coffee" || st.PhoneNumber != "+14155550177" || st.DefaultCountry != "CA" {
		t.Fatalf("saved settings %+v, %v", st, err)
	}
	if b, _ := e.App.Service.FindBrand(e.Ctx, e.BrandA.ID); b.Name != "Acme Coffee" || b.PhoneNumber != "+14155550177" {
		t.Errorf("brand %+v, want the new name and number (GET /brand)", b)
	}
	p = w.post("/console/settings/brand", url.Values{"brand_name": {"Other"}, "brand_phone": {e.BrandB.PhoneNumber}, "default_country": {"US"}})
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "Another brand on this server already uses this number") ||
		!strings.Contains(p.Body, `id="brand_phone-error"`) {
		t.Errorf("another brand's number: %d\n%s", p.Status, p.Body)
	}
	// Every error at once (issue #32): a blank name, a bad number and no
	// country are all shown, and nothing is saved.
	p = w.post("/console/settings/brand", url.Values{"brand_name": {" "}, "brand_phone": {"12"}, "default_country": {"XX"}})
	for _, id := range []string{`id="brand_name-error"`, `id="brand_phone-error"`, `id="default_country-error"`} {
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, id) {
			t.Errorf("three bad members: %d, want %s shown", p.Status, id)
		}
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID); st.Name != "Acme Coffee" || st.PhoneNumber != "+14155550177" {
		t.Errorf("a refused save changed the brand: %+v", st)
	}
	if p := e.signedIn(t, "agent@a.example").post("/console/settings/brand", url.Values{"brand_name": {"Agent's"}}); p.Status != http.StatusForbidden {
		t.Errorf("an agent's post: %d, want 403", p.Status)
	}
}
