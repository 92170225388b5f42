package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// settingsForm is a whole, valid settings form; tests change one field.
func settingsForm(kv ...string) url.Values {
	f := url.Values{"window_start": {"09:30"}, "window_end": {"20:00"}, "time_zone": {"America/Chicago"},
		"cap_max": {"3"}, "cap_hours": {"24"}, "send_rate": {"2.5"}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Set(kv[i], kv[i+1])
	}
	return f
}

// TestSettingsSave: an admin changes the brand's D17 settings through the
// console; they are the ones the admin API reads, and only the brand's.
// Empty frequency-cap fields mean no cap.
func TestSettingsSave(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.get("/console/settings")
	for _, want := range []string{`value="08:00"`, `value="21:00"`, `value="America/New_York"`, "admin@a.example", "agent@a.example"} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("settings page lacks %s", want)
		}
	}
	bBefore, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandB.ID)
	p = w.post("/console/settings", settingsForm())
	if p.Status != http.StatusSeeOther || p.Location != "/console/settings?done=saved" {
		t.Fatalf("save: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	st, err := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID)
	want := parley.BrandSettings{SendingWindow: parley.SendingWindow{Start: "09:30", End: "20:00"}, TimeZone: "America/Chicago",
		FrequencyCap: &parley.FrequencyCap{MaxMessages: 3, PerHours: 24}, SendRate: 2.5}
	if err != nil || st.SendingWindow != want.SendingWindow || st.TimeZone != want.TimeZone || st.FrequencyCap == nil ||
		*st.FrequencyCap != *want.FrequencyCap || st.SendRate != want.SendRate {
		t.Errorf("settings after save = %+v %v (%v), want %+v", st, st.FrequencyCap, err, want)
	}
	p = w.get(p.Location)
	for _, want := range []string{"Settings saved.", `value="09:30"`, `value="America/Chicago"`, `value="3"`, `value="24"`, `value="2.5"`} {
		if !strings.Contains(p.Body, want) {
			t.Errorf("page after save lacks %s", want)
		}
	}
	if p := w.post("/console/settings", settingsForm("cap_max", "", "cap_hours", "", "send_rate", "0")); p.Status != http.StatusSeeOther {
		t.Fatalf("save without a cap: %d\n%s", p.Status, p.Body)
	}
	if st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID); st.FrequencyCap != nil || st.SendRate != 0 {
		t.Errorf("after clearing the cap: %+v %v, want no cap, rate 0", st, st.FrequencyCap)
	}
	if bAfter, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandB.ID); *bAfter != *bBefore {
		t.Errorf("brand B's settings changed: %+v → %+v", bBefore, bAfter)
	}
}

// TestSettingsBadInput: each bad value is refused with the admin API's
// rule, shown next to its field; the form keeps what was typed and the
// settings do not change (D17, D3).
func TestSettingsBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	for name, c := range map[string]struct {
		form  url.Values
		field string
	}{
		"start 25:00":        {settingsForm("window_start", "25:00"), "window_start"},
		"end 9am":            {settingsForm("window_end", "9am"), "window_end"},
		"empty start":        {settingsForm("window_start", ""), "window_start"},
		"unknown zone":       {settingsForm("time_zone", "Mars/Olympus"), "time_zone"},
		"Local zone":         {settingsForm("time_zone", "Local"), "time_zone"},
		"cap 0":              {settingsForm("cap_max", "0"), "cap_max"},
		"cap not a number":   {settingsForm("cap_max", "many"), "cap_max"},
		"cap without hours":  {settingsForm("cap_hours", ""), "cap_hours"},
		"hours over a year":  {settingsForm("cap_hours", "9000"), "cap_hours"},
		"negative rate":      {settingsForm("send_rate", "-1"), "send_rate"},
		"rate not a number":  {settingsForm("send_rate", "fast"), "send_rate"},
		"rate empty":         {settingsForm("send_rate", ""), "send_rate"},
		"rate NaN":           {settingsForm("send_rate", "NaN"), "send_rate"},
		"rate over the max":  {settingsForm("send_rate", "10001"), "send_rate"},
		"hours not a number": {settingsForm("cap_hours", "1.5"), "cap_hours"},
	} {
		p := w.post("/console/settings", c.form)
		if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, `<span id="`+c.field+`-error" class="field-error">`) ||
			!strings.Contains(p.Body, `aria-describedby="`+c.field+`-error"`) {
			t.Errorf("%s: %d, want 422 with the error next to %s\n%s", name, p.Status, c.field, p.Body)
		}
		if c.field == "time_zone" {
			continue // a picker: it offers only the zones it knows
		}
		typ := "text"
		if strings.HasPrefix(c.field, "window_") {
			typ = "time" // issue #32: time inputs
		}
		if v := c.form.Get(c.field); !strings.Contains(p.Body, `id="`+c.field+`" name="`+c.field+`" type="`+typ+`"`) ||
			(v != "" && !strings.Contains(p.Body, `value="`+v+`"`)) {
			t.Errorf("%s: the form does not keep %q", name, v)
		}
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused settings changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

var linkInput = regexp.MustCompile(`id="signin-link" type="text" readonly value="([^"]+)"`)

// TestSettingsOperators: an admin adds an operator with a password (who
// then signs in) or without one (the page shows a one-time sign-in link
// that works), and removes one, ending their sessions; never themselves
// (D19).
func TestSettingsOperators(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	p := w.post("/console/settings/operators", url.Values{"action": {"add"}, "email": {"New.Agent@A.example"}, "role": {"agent"}, "password": {password}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/settings?done=added" {
		t.Fatalf("add with password: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	na := e.signedIn(t, "new.agent@a.example")
	if p := na.get("/console/inbox"); p.Status != 200 { // an agent's home (D19)
		t.Errorf("the new agent's console: %d", p.Status)
	}
	if p := na.get("/console/settings"); p.Status != http.StatusForbidden {
		t.Errorf("the new agent on Settings: %d, want 403 (an agent)", p.Status)
	}

	p = w.post("/console/settings/operators", url.Values{"action": {"add"}, "email": {"boss@a.example"}, "role": {"admin"}})
	m := linkInput.FindStringSubmatch(p.Body)
	if p.Status != http.StatusCreated || m == nil {
		t.Fatalf("add without password: %d, want 201 with a sign-in link\n%s", p.Status, p.Body)
	}
	link, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
	if err != nil || link.Path != "/console/link" || "http://"+link.Host != e.Server.URL {
		t.Fatalf("sign-in link %q (%v)", m[1], err)
	}
	boss := e.web(t)
	if p := boss.post("/console/link", url.Values{"token": {link.Query().Get("token")}}); p.Status != http.StatusSeeOther || p.Location != "/console/password" {
		t.Errorf("using the link: %d %q, want 303 to choose a password", p.Status, p.Location)
	}
	if p := boss.get("/console/settings"); p.Status != 200 {
		t.Errorf("the new admin on Settings: %d", p.Status)
	}
	ops, _ := e.App.Operators.List(e.Ctx, e.BrandA.ID)
	if len(ops) != 4 || ops[2].Email != "new.agent@a.example" || ops[2].Role != parley.RoleAgent || ops[3].Role != parley.RoleAdmin || ops[3].HasPassword {
		t.Errorf("operators after adding = %+v", ops)
	}

	// Remove asks first, naming the operator, and removes nothing yet
	// (issue #32).
	p = w.post("/console/settings/operators", url.Values{"action": {"remove"}, "id": {itoa(ops[2].ID)}})
	if p.Status != http.StatusOK || p.h1() != "Remove new.agent@a.example?" || !strings.Contains(p.Body, ">Remove new.agent@a.example</button>") ||
		!strings.Contains(p.Body, `name="confirm" value="1"`) {
		t.Fatalf("remove without confirming: %d %q, want the question naming them\n%s", p.Status, p.h1(), p.Body)
	}
	if p := na.get("/console/inbox"); p.Status != http.StatusOK {
		t.Fatalf("the operator was removed before the admin confirmed: %d", p.Status)
	}
	p = w.post("/console/settings/operators", url.Values{"action": {"remove"}, "id": {itoa(ops[2].ID)}, "confirm": {"1"}})
	if p.Status != http.StatusSeeOther || p.Location != "/console/settings?done=removed" {
		t.Fatalf("remove: %d %q\n%s", p.Status, p.Location, p.Body)
	}
	if p := na.get("/console/"); p.Status != http.StatusSeeOther {
		t.Errorf("a removed operator's session still works: %d", p.Status)
	}
	if p := w.get("/console/settings"); strings.Contains(p.Body, "new.agent@a.example") {
		t.Errorf("the removed operator is still listed")
	}
	before := e.adminState(t)
	p = w.post("/console/settings/operators", url.Values{"action": {"remove"}, "id": {itoa(e.AdminA.ID)}, "confirm": {"1"}})
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(p.Body, "You cannot remove yourself") {
		t.Errorf("remove yourself: %d\n%s", p.Status, p.Body)
	}
	if strings.Contains(w.get("/console/settings").Body, `name="id" value="`+itoa(e.AdminA.ID)+`"`) {
		t.Errorf("the page offers to remove the signed-in admin")
	}
	for name, c := range map[string]struct {
		form   url.Values
		field  string
		status int
	}{
		"bad email":      {url.Values{"email": {"not an email"}, "role": {"agent"}}, "email", 422},
		"no email":       {url.Values{"email": {""}, "role": {"agent"}}, "email", 422},
		"taken here":     {url.Values{"email": {"agent@a.example"}, "role": {"agent"}}, "email", 409}, // another brand's: TestOperatorEmailOfAnotherBrand
		"bad role":       {url.Values{"email": {"x@a.example"}, "role": {"owner"}}, "role", 422},
		"short password": {url.Values{"email": {"x@a.example"}, "role": {"agent"}, "password": {"short"}}, "password", 422},
	} {
		c.form.Set("action", "add")
		p := w.post("/console/settings/operators", c.form)
		if p.Status != c.status || !strings.Contains(p.Body, `class="field-error">`) {
			t.Errorf("%s: %d, want %d with the error next to %s\n%s", name, p.Status, c.status, c.field, p.Body)
		}
		if c.field != "role" && !strings.Contains(p.Body, `id="`+c.field+`-error"`) {
			t.Errorf("%s: the error is not next to %s", name, c.field)
		}
	}
	for name, form := range map[string]url.Values{
		"no action":             {},
		"unknown id":            {"action": {"remove"}, "id": {"999999"}},
		"unknown id, confirmed": {"action": {"remove"}, "id": {"999999"}, "confirm": {"1"}},
		"new link, unknown id":  {"action": {"newlink"}, "id": {"999999"}},
		"id not numeric":        {"action": {"remove"}, "id": {"x"}},
	} {
		if p := w.post("/console/settings/operators", form); p.Status != http.StatusUnprocessableEntity && p.Status != http.StatusNotFound {
			t.Errorf("%s: %d, want 422 or 404", name, p.Status)
		}
	}
	if after := e.adminState(t); after != before {
		t.Errorf("refused operator forms changed the database:\nbefore %s\nafter  %s", before, after)
	}
}

// TestBrowserSettings: in Chromium, at 1280 px and at phone width, an
// admin sets the sending window with time inputs and picks a zone by its
// plain name; saved, the pages name the zone; bad values are all shown at
// once next to their fields (D17, D19, issue #32).
func TestBrowserSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, phone := range []bool{false, true} {
		b := newBrowser(t, e.Server.URL)
		if phone {
			b.Phone()
		}
		b.signIn("admin@a.example", password)
		b.Go("/console/settings")
		if h := b.H1(); h != "Settings" {
			t.Fatalf("Settings: %q", h)
		}
		b.checkPage()
		b.shot("settings", phone)
		start, zone := "10:15", "America/Chicago"
		if phone {
			start, zone = "09:45", "America/Los_Angeles"
		}
		b.SetValue("Sending window starts", start)
		b.SetValue("Sending window ends", "19:45")
		b.Choose("Time zone", zone)
		b.Submit("Save settings")
		if txt := b.Text(); !strings.Contains(txt, "Settings saved.") {
			t.Fatalf("after Save settings:\n%s", txt)
		}
		if v := b.Value("Sending window starts"); v != start {
			t.Errorf("window start shown after saving = %q", v)
		}
		st, _ := e.App.Service.BrandSettings(e.Ctx, e.BrandA.ID)
		if st.SendingWindow != (parley.SendingWindow{Start: start, End: "19:45"}) || st.TimeZone != zone {
			t.Errorf("saved %+v %s", st.SendingWindow, st.TimeZone)
		}
		want := map[bool]string{false: "Times in Central Time (America/Chicago)", true: "Times in Pacific Time (America/Los_Angeles)"}[phone]
		if foot := b.read("footer", `document.querySelector('footer')?.innerText`); !strings.Contains(foot, want) {
			t.Errorf("footer %q, want %q", foot, want)
		}
		b.Fill("Send rate (messages per second, 0 for no limit)", "fast")
		b.Fill("Frequency cap: at most this many messages", "0")
		b.Fill("Frequency cap: per this many hours", "24")
		b.Submit("Save settings")
		txt := b.Text()
		for _, w := range []string{"2 values need fixing", "Enter messages per second", "Enter how many messages"} {
			if !strings.Contains(txt, w) {
				t.Errorf("bad values: the page lacks %q\n%s", w, txt)
			}
		}
		b.checkPage()
		b.shot("settings-errors", phone)
	}
}
