package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestCampaignSendAtBounds: send_at is at most one year ahead and not
// more than 60 s in the past (D16); a time RFC 3339 can write but whose
// UTC is in year 10000 — 9999-12-31T23:59:59-23:59 — is refused with the
// rest, so the brand's campaigns stay listable by the Go client (#31
// item 9).
func TestCampaignSendAtBounds(t *testing.T) {
	t.Parallel()
	e := newCampEnv(t)
	now := e.Now()
	create := func(sendAt string) authResp {
		return hardSend(t, e.Env, "POST", "/api/v1/campaigns",
			fmt.Sprintf(`{"name":"X","segment_id":%d,"body":"Hi","send_at":%q}`, e.segA.ID, sendAt))
	}
	before := campState(t, e)
	for _, c := range []struct{ name, sendAt, msg string }{
		{"year 10000 in UTC", "9999-12-31T23:59:59-23:59", "more than one year ahead"},
		{"year 9999", "9999-12-31T23:59:59Z", "more than one year ahead"},
		{"a year and a second", now.AddDate(1, 0, 0).Add(time.Second).Format(time.RFC3339), "more than one year ahead"},
		{"year 0000 in UTC", "0001-01-01T00:00:00+01:00", "in the past"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := create(c.sendAt)
			msg := wantError(t, r, http.StatusUnprocessableEntity, parley.EValidation)
			if _, _, field := authEnvelope(t, r.body); field != "send_at" || !strings.Contains(msg, c.msg) {
				t.Errorf("field %q msg %q, want send_at saying %q", field, msg, c.msg)
			}
			if campState(t, e) != before {
				t.Error("a refused send_at stored something")
			}
		})
	}
	// The bounds themselves are accepted.
	for _, at := range []time.Time{now.AddDate(1, 0, 0), now.Add(-parley.SendAtGrace)} {
		if r := create(at.Format(time.RFC3339Nano)); r.status != http.StatusCreated {
			t.Errorf("send_at %v: %d %s, want 201", at, r.status, r.body)
		}
	}
	list, _, err := e.A.ListCampaigns(e.Ctx, parley.CampaignFilter{Limit: 100})
	if err != nil || len(list) != 2 {
		t.Errorf("the Go client lists %d campaigns, %v; want the 2 created", len(list), err)
	}
}

// TestDatesInYearRange: every date the API stores from input is in years
// 0001–9999 (#31 item 9): a DATE custom data value, a D14
// date_field_value, a date_of_birth and an import's cells for them; year
// 0000 is refused where year 0001 and 9999 are taken.
func TestDatesInYearRange(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impFields(t, e, e.BrandA.ID) // custom_data joined is a DATE
	post := func(path, body string) authResp {
		return hardSend(t, e, "POST", path, body, "Content-Type", "application/json")
	}
	criterionOn := func(dim int, field string, op int, day string) string {
		return fmt.Sprintf(`{"criteria":[{"attribute":{"dimension_type":%d,"field_name":%q,"field_type":6},`+
			`"operator_type":%d,"and_group_num":0,"date_field_value":%q}]}`, dim, field, op, day)
	}
	criterion := func(day string) string { return criterionOn(1, "date_created", parley.OpGreaterOrEqual, day) }
	before := e.State(t)
	for _, c := range []struct {
		name, path, body, typ, field string
	}{
		{"custom DATE ISO", "/api/v1/users", `{"phone_number":"+14155552601","custom_data":{"joined":"0000-01-01"}}`,
			parley.EInvalidCustomData, "custom_data.joined"},
		{"custom DATE US", "/api/v1/users", `{"phone_number":"+14155552601","custom_data":{"joined":"01/01/0000"}}`,
			parley.EInvalidCustomData, "custom_data.joined"},
		{"date_of_birth", "/api/v1/users", `{"phone_number":"+14155552601","date_of_birth":"01/01/0000"}`,
			parley.EValidation, "date_of_birth"},
		{"criterion preview", "/api/v1/segments/preview", criterion("0000-01-01"),
			parley.EValidation, "criteria[0].date_field_value"},
		{"criterion save", "/api/v1/segments", `{"name":"Y0",` + criterion("0000-12-31")[1:],
			parley.EValidation, "criteria[0].date_field_value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(c.path, c.body)
			wantError(t, r, http.StatusUnprocessableEntity, c.typ)
			if _, _, field := authEnvelope(t, r.body); field != c.field {
				t.Errorf("field %q, want %q (%s)", field, c.field, r.body)
			}
			if e.State(t) != before {
				t.Error("a refused date stored something")
			}
		})
	}
	for _, body := range []string{
		`{"phone_number":"+14155552602","custom_data":{"joined":"0001-01-01"}}`,
		`{"phone_number":"+14155552603","custom_data":{"joined":"12/31/9999"}}`,
	} {
		if r := post("/api/v1/users", body); r.status != http.StatusCreated {
			t.Errorf("%s: %d %s, want 201", body, r.status, r.body)
		}
	}
	// The first and last days compare as days (a bound past 9999 bounds
	// nothing), on a stored time (date_created) and a DATE held as text.
	for _, c := range []struct {
		dim   int
		field string
		op    int
		day   string
		want  int
	}{
		{1, "date_created", parley.OpGreaterOrEqual, "0001-01-01", 2},
		{1, "date_created", parley.OpLessThan, "0001-01-01", 0},
		{1, "date_created", parley.OpLessOrEqual, "9999-12-31", 2},
		{1, "date_created", parley.OpGreaterThan, "9999-12-31", 0},
		{2, "joined", parley.OpGreaterOrEqual, "0001-01-01", 2},
		{2, "joined", parley.OpEquals, "0001-01-01", 1},
		{2, "joined", parley.OpLessThan, "0001-01-01", 0},
		{2, "joined", parley.OpLessOrEqual, "9999-12-31", 2},
		{2, "joined", parley.OpEquals, "9999-12-31", 1},
		{2, "joined", parley.OpGreaterThan, "9999-12-31", 0},
		{2, "joined", parley.OpGreaterThan, "9999-12-30", 1},
	} {
		r := post("/api/v1/segments/preview", criterionOn(c.dim, c.field, c.op, c.day))
		var got struct{ Count int }
		if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil || got.Count != c.want {
			t.Errorf("%s op %d %s: %d %s, want count %d", c.field, c.op, c.day, r.status, r.body, c.want)
		}
	}

	impStart(t, e)
	imp := impRun(t, e, e.A, "phone_number,date_of_birth,custom_joined\n"+
		"+14152000901,,0000-01-01\n"+
		"+14152000902,01/01/0000,\n"+
		"+14152000903,,9999-12-31\n", nil)
	impWantCounts(t, imp, 1, 0, 0, 2)
	impWantErrors(t, impErrors(t, e, e.A, imp.ID), [][3]string{
		{"2", "custom_joined", parley.EInvalidCustomData},
		{"3", "date_of_birth", parley.EValidation},
	})
}
