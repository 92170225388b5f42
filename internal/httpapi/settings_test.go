package httpapi_test

import (
	"encoding/json"
	"testing"
)

// TestBrandSettings: a brand starts with D17's defaults; POST changes only
// the members sent; frequency_cap null removes the cap; every bad value is
// a 422 naming its member and changes nothing; another brand is untouched.
func TestBrandSettings(t *testing.T) {
	t.Parallel()
	e := admEnv(t)
	path := "/brands/" + itoa(e.BrandA.ID) + "/settings"
	get := func() string {
		t.Helper()
		st, body := admDo(t, e, admTok, "GET", path, nil)
		if st != 200 {
			t.Fatalf("GET settings: %d %v", st, body)
		}
		b, _ := json.Marshal(body)
		return string(b)
	}
	defaults := `{"default_country":"US","extract_when_opted_out":false,"frequency_cap":null,"keyword_replies":{"help":null,"start":null,"stop":null},"name":"Brand A","phone_number":"+14155550100","send_rate":0,"sending_window":{"end":"21:00","start":"08:00"},"time_zone":"America/New_York"}`
	if got := get(); got != defaults {
		t.Errorf("defaults %s, want %s", got, defaults)
	}

	st, body := admDo(t, e, admTok, "POST", path, map[string]any{"sending_window": map[string]string{"start": "22:00", "end": "02:00"},
		"frequency_cap": map[string]int{"max_messages": 3, "per_hours": 24}})
	if st != 200 {
		t.Fatalf("update: %d %v", st, body)
	}
	want := `{"default_country":"US","extract_when_opted_out":false,"frequency_cap":{"max_messages":3,"per_hours":24},"keyword_replies":{"help":null,"start":null,"stop":null},"name":"Brand A","phone_number":"+14155550100","send_rate":0,"sending_window":{"end":"02:00","start":"22:00"},"time_zone":"America/New_York"}`
	if got := get(); got != want {
		t.Errorf("after update %s, want %s", got, want)
	}
	if st, body := admDo(t, e, admTok, "POST", path, map[string]any{"time_zone": "America/Chicago", "send_rate": 2.5}); st != 200 {
		t.Fatalf("second update: %d %v", st, body)
	}
	want = `{"default_country":"US","extract_when_opted_out":false,"frequency_cap":{"max_messages":3,"per_hours":24},"keyword_replies":{"help":null,"start":null,"stop":null},"name":"Brand A","phone_number":"+14155550100","send_rate":2.5,"sending_window":{"end":"02:00","start":"22:00"},"time_zone":"America/Chicago"}`
	if got := get(); got != want {
		t.Errorf("after the second update %s, want %s: members not sent must stay", got, want)
	}

	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"sending_window": {"start": "8:00", "end": "21:00"}}`, "sending_window.start"},
		{`{"sending_window": {"start": "08:00", "end": "24:00"}}`, "sending_window.end"},
		{`{"sending_window": null}`, "sending_window"},
		{`{"sending_window": {"start": "08:00", "end": "21:00", "days": 5}}`, ""},
		{`{"time_zone": "Mars/Olympus"}`, "time_zone"},
		{`{"time_zone": "Local"}`, "time_zone"},
		{`{"time_zone": ""}`, "time_zone"},
		{`{"extract_when_opted_out":false,"frequency_cap": {"max_messages": 0, "per_hours": 24}}`, "frequency_cap.max_messages"},
		{`{"extract_when_opted_out":false,"frequency_cap": {"max_messages": 1, "per_hours": 0}}`, "frequency_cap.per_hours"},
		{`{"extract_when_opted_out":false,"frequency_cap": {"max_messages": "3", "per_hours": 24}}`, ""},
		{`{"send_rate": -1}`, "send_rate"},
		{`{"send_rate": 1e9}`, "send_rate"},
		{`{"send_rate": null}`, "send_rate"},
		{`{"time_zone": "America/Denver", "send_rate": -1}`, "send_rate"}, // one bad member fails all
		{`{"colour": "red"}`, ""},
		{`{"extract_when_opted_out": null}`, "extract_when_opted_out"}, // D20 (#19)
		{`{"extract_when_opted_out": "yes"}`, "extract_when_opted_out"},
	} {
		st, body := admDo(t, e, admTok, "POST", path, json.RawMessage(c.body))
		detail, _ := body["detail"].(map[string]any)
		if st != 422 || detail["type"] != "validation_error" || c.field != "" && detail["field"] != c.field {
			t.Errorf("%s: %d %v, want 422 validation_error on %q", c.body, st, body, c.field)
		}
	}
	if got := get(); got != want {
		t.Errorf("after refused updates %s, want %s unchanged", got, want)
	}
	if st, _ := admDo(t, e, admTok, "POST", path, map[string]any{"frequency_cap": nil}); st != 200 {
		t.Fatal("removing the cap failed")
	}
	if _, body := admDo(t, e, admTok, "GET", path, nil); body["frequency_cap"] != nil {
		t.Errorf("frequency_cap %v after null, want null", body["frequency_cap"])
	}
	if st, _ := admDo(t, e, admTok, "POST", path, map[string]any{"extract_when_opted_out": true}); st != 200 {
		t.Fatal("extract_when_opted_out true failed")
	}
	if _, body := admDo(t, e, admTok, "GET", path, nil); body["extract_when_opted_out"] != true || body["time_zone"] != "America/Chicago" {
		t.Errorf("after extract_when_opted_out true: %v, want it true and the rest unchanged (D20)", body)
	}
	if _, body := admDo(t, e, admTok, "GET", "/brands/"+itoa(e.BrandB.ID)+"/settings", nil); body["time_zone"] != "America/New_York" || body["extract_when_opted_out"] != false {
		t.Errorf("brand B's settings changed: %v", body)
	}
	if st, _ := admDo(t, e, admTok, "GET", "/brands/999/settings", nil); st != 404 {
		t.Errorf("settings of no brand: %d, want 404", st)
	}
	if st, _ := admDo(t, e, "wrong", "GET", path, nil); st != 401 {
		t.Errorf("wrong token: %d, want 401", st)
	}
}
