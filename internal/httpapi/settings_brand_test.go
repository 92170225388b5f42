package httpapi_test

import (
	"encoding/json"
	"testing"
)

// TestBrandIdentitySettings: D22 adds name, phone_number and
// default_country to the admin settings (D17's path): a POST changes only
// the members sent, GET /brand shows the new name and number, a bad value
// is a 422 naming its member and changes nothing, and a number another
// brand has is refused, since inbound texts are routed by it.
func TestBrandIdentitySettings(t *testing.T) {
	t.Parallel()
	e := admEnv(t)
	path := "/brands/" + itoa(e.BrandA.ID) + "/settings"
	st, body := admDo(t, e, admTok, "GET", path, nil)
	if st != 200 || body["name"] != "Brand A" || body["phone_number"] != "+14155550100" || body["default_country"] != "US" {
		t.Fatalf("GET settings: %d %v, want name, number and default_country US (D22)", st, body)
	}
	st, body = admDo(t, e, admTok, "POST", path, map[string]any{"name": " Acme Coffee ", "phone_number": "+1 (415) 555-0177", "default_country": "gb"})
	if st != 200 || body["name"] != "Acme Coffee" || body["phone_number"] != "+14155550177" || body["default_country"] != "GB" ||
		body["time_zone"] != "America/New_York" {
		t.Fatalf("POST settings: %d %v, want the three members changed and the rest as it was", st, body)
	}
	resp, err := e.A.Do(e.Ctx, "GET", "/brand", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var brand map[string]any
	json.Unmarshal(resp.Body, &brand)
	if brand["name"] != "Acme Coffee" || brand["phone_number"] != "+14155550177" {
		t.Errorf("GET /brand = %s, want the new name and number (D22)", resp.Body)
	}
	if st, body := admDo(t, e, admTok, "POST", path, map[string]any{"send_rate": 3}); st != 200 || body["name"] != "Acme Coffee" || body["default_country"] != "GB" {
		t.Errorf("POST send_rate alone: %d %v, want name and default_country kept", st, body)
	}

	for _, c := range []struct{ body, field string }{
		{`{"name": ""}`, "name"},
		{`{"name": "   "}`, "name"},
		{`{"name": null}`, "name"},
		{`{"phone_number": "415 555 0199"}`, "phone_number"},
		{`{"phone_number": "+1415"}`, "phone_number"},
		{`{"phone_number": "` + e.BrandB.PhoneNumber + `"}`, "phone_number"}, // brand B's
		{`{"default_country": "XX"}`, "default_country"},
		{`{"default_country": "USA"}`, "default_country"},
		{`{"default_country": null}`, "default_country"},
		{`{"name": "New", "default_country": "XX"}`, "default_country"}, // one bad member fails all
	} {
		st, body := admDo(t, e, admTok, "POST", path, json.RawMessage(c.body))
		detail, _ := body["detail"].(map[string]any)
		if st != 422 || detail["type"] != "validation_error" || detail["field"] != c.field {
			t.Errorf("%s: %d %v, want 422 validation_error on %q", c.body, st, body, c.field)
		}
	}
	if _, body := admDo(t, e, admTok, "GET", path, nil); body["name"] != "Acme Coffee" || body["phone_number"] != "+14155550177" || body["default_country"] != "GB" {
		t.Errorf("after refused updates: %v, want unchanged", body)
	}
	if _, body := admDo(t, e, admTok, "GET", "/brands/"+itoa(e.BrandB.ID)+"/settings", nil); body["name"] != e.BrandB.Name || body["default_country"] != "US" {
		t.Errorf("brand B's settings changed: %v", body)
	}
}
