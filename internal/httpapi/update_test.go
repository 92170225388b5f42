package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

func TestUpdateUser(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{
			FirstName: parley.Some("Ann"), LastName: parley.Some("Lee"),
			PostalCode: parley.Some("10001"), MessagingConsent: parley.Some(true),
		}})
	e.Advance(time.Second)

	t.Run("OnlySentMembersChange", func(t *testing.T) {
		got, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
			FirstName: parley.Some("Anna")}})
		if err != nil {
			t.Fatal(err)
		}
		if *got.FirstName != "Anna" || got.LastName == nil || *got.LastName != "Lee" ||
			got.Location == nil || got.MessagingConsent == nil || !*got.MessagingConsent {
			t.Errorf("got %+v; want only first_name changed (D4)", got)
		}
		if !got.DateLastUpdated.After(u.DateLastUpdated.Time) {
			t.Errorf("date_last_updated %v did not move past %v (D5)", got.DateLastUpdated, u.DateLastUpdated)
		}
		if !got.DateCreated.Equal(u.DateCreated.Time) {
			t.Errorf("date_created moved")
		}
	})

	t.Run("NullClears", func(t *testing.T) {
		got, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
			LastName: parley.Null[string](), PostalCode: parley.Null[string](), MessagingConsent: parley.Null[bool]()}})
		if err != nil {
			t.Fatal(err)
		}
		if got.LastName != nil || got.Location != nil || got.MessagingConsent != nil {
			t.Errorf("got %+v; want last_name, location and consent cleared (D4, D7)", got)
		}
		again, _ := e.A.GetUser(e.Ctx, u.ID)
		if again.LastName != nil || again.Location != nil {
			t.Errorf("clear not persisted: %+v", again)
		}
	})

	t.Run("NoChangeKeepsTimestamp", func(t *testing.T) {
		cur, _ := e.A.GetUser(e.Ctx, u.ID)
		e.Advance(time.Second)
		got, err := e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{
			FirstName: parley.Some(*cur.FirstName)}})
		if err != nil {
			t.Fatal(err)
		}
		if !got.DateLastUpdated.Equal(cur.DateLastUpdated.Time) {
			t.Errorf("date_last_updated moved from %v to %v with no change (D5)", cur.DateLastUpdated, got.DateLastUpdated)
		}
		empty := mustDo(t, e.A, "POST", "/users/"+itoa(u.ID), map[string]any{})
		if empty.StatusCode != 200 {
			t.Errorf("empty update: %d %s", empty.StatusCode, empty.Body)
		}
	})

	t.Run("ValidationChangesNothing", func(t *testing.T) {
		before := e.State(t)
		for _, body := range []string{
			`{"first_name":"` + strings.Repeat("x", 51) + `"}`,
			`{"email_address":"nope"}`,
			`{"postal_code":"1"}`,
			`{"date_of_birth":"13/01/2000"}`,
			`{"first_name":"Bob","email_address":"nope"}`, // one bad member rejects the whole update
		} {
			resp, err := e.A.Do(e.Ctx, "POST", "/users/"+itoa(u.ID), []byte(body), "application/json")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 422 {
				t.Errorf("%s: status %d, want 422", body, resp.StatusCode)
			}
		}
		if e.State(t) != before {
			t.Error("rejected updates changed the database")
		}
	})

	t.Run("MissingUser", func(t *testing.T) {
		_, err := e.A.UpdateUser(e.Ctx, 9999, parley.UserUpdate{UserFields: parley.UserFields{FirstName: parley.Some("X")}})
		ae := wantAPIError(t, err, 404, parley.EUserNotFound)
		if ae.Msg != "User with ID [9999] not found." {
			t.Errorf("msg = %q (D5)", ae.Msg)
		}
	})
}

func TestDeleteUser(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{FirstName: parley.Some("Ann")}})
	e.Advance(time.Second)
	got, err := e.A.DeleteUser(e.Ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.IsDeleted || got.ID != u.ID || *got.FirstName != "Ann" {
		t.Errorf("deleted user = %+v; want the user with is_deleted true (spec, D5)", got)
	}
	if !got.DateLastUpdated.After(u.DateLastUpdated.Time) {
		t.Errorf("date_last_updated did not move on delete (D5)")
	}
	// D5: deleted users are invisible to every operation.
	_, err = e.A.GetUser(e.Ctx, u.ID)
	wantAPIError(t, err, 404, parley.EUserNotFound)
	_, err = e.A.FindUserByPhone(e.Ctx, "+14155552671")
	wantAPIError(t, err, 404, parley.EUserNotFound)
	_, err = e.A.UpdateUser(e.Ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{FirstName: parley.Some("B")}})
	wantAPIError(t, err, 404, parley.EUserNotFound)
	before := e.State(t)
	_, err = e.A.DeleteUser(e.Ctx, u.ID)
	ae := wantAPIError(t, err, 404, parley.EUserNotFound)
	if ae.Msg != "User with ID ["+itoa(u.ID)+"] not found." {
		t.Errorf("msg = %q", ae.Msg)
	}
	if e.State(t) != before {
		t.Error("deleting a deleted user changed the database")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
