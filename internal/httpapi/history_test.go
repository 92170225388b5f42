package httpapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// historyOf reads every entry of a user's history through the API (D18),
// as "field old→new source detail" lines.
func historyOf(t *testing.T, e *apitest.Env, userID int64, field string) []string {
	t.Helper()
	var out []string
	f := parley.HistoryFilter{Field: field, Limit: 2} // small pages: the cursor is used
	for {
		entries, next, err := e.A.UserHistory(e.Ctx, userID, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range entries {
			out = append(out, fmt.Sprintf("%s %s→%s %s %s", h.Field, h.OldValue, h.NewValue, h.Source, h.Detail))
		}
		if next == "" {
			return out
		}
		f.Cursor = next
	}
}

// apiCode is the envelope's type of a client error, "" for none.
func apiCode(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return ce.Type
	}
	return ""
}

func wantHistory(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("history:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestHistoryOfAPIChanges: creating a contact records its consent and each
// custom data value; an update records what it changed, and only that;
// the entries come oldest first, one page at a time, filtered by field
// (D18).
func TestHistoryOfAPIChanges(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	yes := true
	u, err := e.A.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"), UserFields: parley.UserFields{
		MessagingConsent: parley.Some(yes),
		CustomData:       parley.Some(json.RawMessage(`{"loyalty_tier":"gold","order_count":3,"tags":["a"]}`))}})
	if err != nil {
		t.Fatal(err)
	}
	wantHistory(t, historyOf(t, e, u.ID, ""),
		"messaging_consent null→true api ",
		`custom_data.loyalty_tier null→"gold" api `,
		"custom_data.order_count null→3 api ",
		`custom_data.tags null→["a"] api `)

	// Changes one value, removes one, appends to a list, leaves one alone.
	if _, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
		CustomData: parley.Some(json.RawMessage(`{"loyalty_tier":"silver","order_count":null,"tags":["b"]}`))}}); err != nil {
		t.Fatal(err)
	}
	// Changes nothing that history keeps.
	if _, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{FirstName: parley.Some("Ann"),
		MessagingConsent: parley.Some(yes)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{MessagingConsent: parley.Null[bool]()}}); err != nil {
		t.Fatal(err)
	}
	wantHistory(t, historyOf(t, e, u.ID, "custom_data.tags"),
		`custom_data.tags null→["a"] api `,
		`custom_data.tags ["a"]→["a","b"] api `)
	wantHistory(t, historyOf(t, e, u.ID, "messaging_consent"),
		"messaging_consent null→true api ",
		"messaging_consent true→null api ")
	if got := historyOf(t, e, u.ID, ""); len(got) != 8 {
		t.Errorf("%d entries, want 8:\n%s", len(got), strings.Join(got, "\n"))
	}
	if got := historyOf(t, e, u.ID, "custom_data.order_count"); len(got) != 2 || got[1] != "custom_data.order_count 3→null api " {
		t.Errorf("order_count history %q, want its removal last", got)
	}

	// A contact created without consent or data has no history.
	bare := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672")})
	wantHistory(t, historyOf(t, e, bare.ID, ""))
}

// TestHistoryNotWrittenForRefusedChange: a change refused after a read
// (a duplicate, a bad custom data value on update) leaves no history; the
// history of a change commits with it (D18).
func TestHistoryNotWrittenForRefusedChange(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(`{"nickname":"Al"}`))}})
	before := e.Count(t, "user_history")
	if _, err := e.A.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(`{"nickname":"Bo"}`))}}); apiCode(err) != parley.EDuplicate {
		t.Fatalf("duplicate create: %v", err)
	}
	if _, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
		CustomData: parley.Some(json.RawMessage(`{"nickname":"Cy","order_count":"many"}`))}}); apiCode(err) != parley.EInvalidCustomData {
		t.Fatalf("bad update: %v", err)
	}
	if n := e.Count(t, "user_history"); n != before {
		t.Errorf("%d history rows after refused changes, want %d", n, before)
	}
}

// TestHistoryReadErrors: another brand's user, a deleted one and a bad
// query answer the documented errors; history outlives the deletion (D18).
func TestHistoryReadErrors(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	yes := true
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"), UserFields: parley.UserFields{MessagingConsent: parley.Some(yes)}})
	if _, _, err := e.B.UserHistory(e.Ctx, u.ID, parley.HistoryFilter{}); apiCode(err) != parley.EUserNotFound {
		t.Errorf("another brand's user: %v, want user_not_found", err)
	}
	for _, f := range []parley.HistoryFilter{{Field: "first_name"}, {Field: "custom_data."}, {Limit: 101}, {Cursor: "%%%"}} {
		if _, _, err := e.A.UserHistory(e.Ctx, u.ID, f); apiCode(err) != parley.EValidation {
			t.Errorf("%+v: %v, want validation_error", f, err)
		}
	}
	if r := authSend(t, e, "GET", "/api/v1/users/1/history?limit=x", nil,
		authHeaders(e.CredA.Username, e.CredA.Secret, "GET", "/api/v1/users/1/history?limit=x", nil, e.ClientNow())); r.status != 422 {
		t.Errorf("limit=x: %d %s", r.status, r.body)
	}
	if _, err := e.A.DeleteUser(e.Ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.A.UserHistory(e.Ctx, u.ID, parley.HistoryFilter{}); apiCode(err) != parley.EUserNotFound {
		t.Errorf("deleted user: %v, want user_not_found", err)
	}
	if n := e.Count(t, "user_history"); n != 1 {
		t.Errorf("%d history rows after the deletion, want the 1 kept", n)
	}
}

// TestHistoryOfImport: an import records its creates and updates with
// source import and the import's id (D18).
func TestHistoryOfImport(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	impStart(t, e)
	yes := true
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552672"), UserFields: parley.UserFields{MessagingConsent: parley.Some(yes)}})
	imp := impRun(t, e, e.A, "phone_number,messaging_consent,custom_nickname\n+14155552671,true,Al\n+14155552672,false,\n",
		map[string]string{"on_duplicate": "update"})
	impWantCounts(t, imp, 1, 1, 0, 0)
	id := strconv.FormatInt(imp.ID, 10)
	created, err := e.A.FindUserByPhone(e.Ctx, "+14155552671")
	if err != nil {
		t.Fatal(err)
	}
	wantHistory(t, historyOf(t, e, created.ID, ""),
		"messaging_consent null→true import "+id,
		`custom_data.nickname null→"Al" import `+id)
	wantHistory(t, historyOf(t, e, u.ID, ""),
		"messaging_consent null→true api ",
		"messaging_consent true→false import "+id)
}
