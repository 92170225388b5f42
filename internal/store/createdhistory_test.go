package store_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// TestInsertUsersWithHistory: the users' insert records each stored user's
// creation (D18) from the row it stored: its consent when set, then each
// custom data value in key order with the stored JSON's own text, old_value
// null, with the transaction's origin and time; nothing for a user whose
// number was taken (not stored) or for null values; each entry once, over
// more users than one statement holds; and the consents in the hourly
// counts (issue #35).
func TestInsertUsersWithHistory(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	now := time.Date(2026, 11, 29, 5, 10, 0, 0, time.UTC)
	db.Now = func() time.Time { return now }
	ctx := t.Context()
	taken := &parley.User{BrandID: brand, PhoneNumber: "+14155550001"}
	if err := insertUser(t, db, taken); err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	// Text as Go's encoder writes it (<, & and > escaped), a number with a
	// trailing zero, a key after "z" in byte order: each must come back as
	// stored, in order.
	tricky := `{"a":"x\u003cy\" \\ \u0026","b":1.50,"c":["a","b\u003e"],"n":null,"z":true,"é":"ü"}`
	users := []*parley.User{
		{PhoneNumber: "+14155550010", MessagingConsent: &yes, CustomData: json.RawMessage(tricky)},
		{PhoneNumber: "+14155550011", MessagingConsent: &no},
		{PhoneNumber: "+14155550012", CustomData: json.RawMessage(`{"k":-2}`)},
		{PhoneNumber: "+14155550013"},
		{PhoneNumber: taken.PhoneNumber, MessagingConsent: &yes, CustomData: json.RawMessage(`{"k":1}`)},
	}
	for i := range 600 { // past one statement's insertChunk
		c := i%3 != 0
		users = append(users, &parley.User{PhoneNumber: fmt.Sprintf("+1415556%04d", i), MessagingConsent: &c})
	}
	channel := "import"
	for _, u := range users {
		u.BrandID, u.Channel = brand, &channel
		u.DateCreated, u.DateLastUpdated = parley.Time{Time: now}, parley.Time{Time: now}
	}
	o := parley.Origin{Source: parley.SourceImport, Detail: "42"}
	if err := db.WithOriginTx(ctx, o, func(tx *store.Tx) error { return tx.InsertUsersWithHistory(ctx, users) }); err != nil {
		t.Fatal(err)
	}
	if users[4].ID != 0 {
		t.Errorf("the taken number's user has id %d, want 0 (not stored)", users[4].ID)
	}
	want := map[int]string{
		0: "messaging_consent null→true\n" +
			`custom_data.a null→"x\u003cy\" \\ \u0026"` + "\n" +
			"custom_data.b null→1.50\n" +
			`custom_data.c null→["a","b\u003e"]` + "\n" +
			"custom_data.z null→true\n" +
			`custom_data.é null→"ü"`,
		1: "messaging_consent null→false",
		2: "custom_data.k null→-2",
		3: "",
	}
	total, ins, outs := 0, 0, 0
	for i, u := range users {
		if i == 4 {
			continue
		}
		if c := u.MessagingConsent; c != nil && *c {
			ins++
		} else if c != nil {
			outs++
		}
		w, ok := want[i]
		if !ok {
			w = "messaging_consent null→" + fmt.Sprint(*u.MessagingConsent)
		}
		entries, err := db.ListHistory(ctx, brand, u.ID, "", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range entries {
			if e.OldValue != nil || e.Source != parley.SourceImport || e.Detail != "42" || e.MessageID != nil ||
				!e.OccurredAt.Equal(now) {
				t.Errorf("user %d entry %+v: want old_value null, source import, detail 42, no message, at %v", i, e, now)
			}
			got = append(got, e.Field+" null→"+string(e.NewValue))
		}
		if g := strings.Join(got, "\n"); g != w {
			t.Errorf("user %d history:\n%s\nwant:\n%s", i, g, w)
		}
		total += len(entries)
	}
	var n int
	if err := db.Writer().QueryRowContext(ctx, `SELECT count(*) FROM user_history`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != total {
		t.Errorf("%d history rows, want %d: the users' entries and no other", n, total)
	}
	hIns, hOuts, err := db.HourlyConsent(ctx, brand, now.Truncate(time.Hour), 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(hIns, []int64{int64(ins)}) || !slices.Equal(hOuts, []int64{int64(outs)}) {
		t.Errorf("hourly consent %v / %v, want [%d] / [%d]", hIns, hOuts, ins, outs)
	}

	// InsertUsers records nothing.
	plain := &parley.User{BrandID: brand, PhoneNumber: "+14155550099", MessagingConsent: &yes}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertUsers(ctx, []*parley.User{plain}) }); err != nil {
		t.Fatal(err)
	}
	if entries, err := db.ListHistory(ctx, brand, plain.ID, "", 0, 10); err != nil || len(entries) != 0 {
		t.Errorf("InsertUsers wrote history %v (%v), want none", entries, err)
	}
}
