package store_test

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

// The segment tests run on SQLite and, with PARLEY_TEST_POSTGRES_URL, on
// PostgreSQL (TestMain): one table, so both engines give the same members
// for the same data (D14).

// segNow is the clock: 28 December, so a 7-day birthday window crosses
// the year end.
var segNow = time.Date(2025, 12, 28, 12, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// segFixture is a brand whose users are known by name, and another brand.
type segFixture struct {
	db     *store.DB
	brand  int64
	other  int64
	ids    map[string]int64
	byID   map[int64]string
	userOf map[string]*parley.User
	// eng answers every audience too (issue #34): it must agree with SQL,
	// catching up the fixture's later writes.
	eng *audience.Engine
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateTime, s)
	if err != nil {
		panic(err)
	}
	return t
}

// mustSegFixture seeds:
//
//	ann  Ann Lee, dob 01/02/1990, consent true, Boston, America/New_York,
//	     {age 30, score 2.5, tier Gold, tags [VIP, x, 2], vip "TRUE", renewal 12/01/2025},
//	     created 2025-12-01; 1 inbound (12-27), 1 outbound sent+delivered (12-20)
//	bob  bob, city "", dob 12/31/1985, consent false,
//	     {age 45, score 10, tier silver, tags [], vip 0, renewal 2025-12-27},
//	     created 2025-06-15; outbound: one queued, one sent→failed, one sent→undelivered (11-01)
//	cy   nothing set, created 2025-12-28 00:00:00; no messages
//	dee  Dee Ünal, dob 06/15/2000, consent true,
//	     {age null, tier GOLDEN, tags [b], vip "false", renewal 2024-12-28, score "9" (a string: wrong type)},
//	     created 2024-12-28 23:59:59; 2 inbound (2025-01-01, 2025-12-28)
//	eve  deleted, otherwise ann's twin
//	zed  the other brand's, ann's twin
func mustSegFixture(t *testing.T) *segFixture {
	t.Helper()
	ctx := t.Context()
	db := mustOpenDB(t)
	db.Now = func() time.Time { return segNow }
	f := &segFixture{db: db, brand: mustBrand(t, db), other: mustBrand(t, db),
		ids: map[string]int64{}, byID: map[int64]string{}, userOf: map[string]*parley.User{}}
	annData := `{"age":30,"score":2.5,"tier":"Gold","tags":["VIP","x",2],"vip":"TRUE","renewal":"12/01/2025"}`
	boston := &parley.Location{PostalCode: ptr("02108"), City: ptr("Boston"), State: ptr("Massachusetts"), StateCode: ptr("MA")}
	users := []struct {
		name  string
		brand int64
		u     parley.User
		tz    string
	}{
		{"ann", f.brand, parley.User{PhoneNumber: "+14155550001", FirstName: ptr("Ann"), LastName: ptr("Lee"),
			EmailAddress: ptr("ann@example.com"), DateOfBirth: ptr("01/02/1990"), MessagingConsent: ptr(true),
			Location: boston, CustomData: []byte(annData), DateCreated: parley.Time{Time: day("2025-12-01 10:00:00")}}, "America/New_York"},
		{"bob", f.brand, parley.User{PhoneNumber: "+14155550002", FirstName: ptr("bob"), DateOfBirth: ptr("12/31/1985"),
			MessagingConsent: ptr(false), Location: &parley.Location{PostalCode: ptr("99999"), City: ptr("")},
			CustomData:  []byte(`{"age":45,"score":10,"tier":"silver","tags":[],"vip":0,"renewal":"2025-12-27"}`),
			DateCreated: parley.Time{Time: day("2025-06-15 08:00:00")}}, ""},
		{"cy", f.brand, parley.User{PhoneNumber: "+16175550003", DateCreated: parley.Time{Time: day("2025-12-28 00:00:00")}}, ""},
		{"dee", f.brand, parley.User{PhoneNumber: "+16175550004", FirstName: ptr("Dee"), LastName: ptr("Ünal"),
			DateOfBirth: ptr("06/15/2000"), MessagingConsent: ptr(true),
			CustomData:  []byte(`{"age":null,"tier":"GOLDEN","tags":["b"],"vip":"false","renewal":"2024-12-28","score":"9"}`),
			DateCreated: parley.Time{Time: day("2024-12-28 23:59:59")}}, ""},
		{"eve", f.brand, parley.User{PhoneNumber: "+14155550005", FirstName: ptr("Ann"), DateOfBirth: ptr("01/02/1990"),
			MessagingConsent: ptr(true), CustomData: []byte(annData), IsDeleted: true,
			DateCreated: parley.Time{Time: day("2025-12-28 01:00:00")}}, "America/New_York"},
		{"zed", f.other, parley.User{PhoneNumber: "+14155550001", FirstName: ptr("Ann"), DateOfBirth: ptr("01/02/1990"),
			MessagingConsent: ptr(true), CustomData: []byte(annData),
			DateCreated: parley.Time{Time: day("2025-12-28 01:00:00")}}, "America/New_York"},
	}
	for _, x := range users {
		u := x.u
		u.BrandID = x.brand
		u.DateLastUpdated = u.DateCreated
		if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertUser(ctx, &u) }); err != nil {
			t.Fatalf("user %s: %v", x.name, err)
		}
		if x.tz != "" {
			if err := db.Exec(ctx, `UPDATE users SET time_zone = ? WHERE id = ?`, x.tz, u.ID); err != nil {
				t.Fatal(err)
			}
		}
		f.ids[x.name], f.byID[u.ID], f.userOf[x.name] = u.ID, x.name, &u
	}

	// Messages: inserted in the statuses given, then moved as a delivery
	// would, so the activity columns are kept by both paths.
	msg := func(user, dir, status string, created time.Time) *parley.Message {
		m := &parley.Message{BrandID: f.userOf[user].BrandID, UserID: f.ids[user], Direction: dir, Status: status,
			Body: "hi", Type: "CONVERSATIONAL", DateCreated: parley.Time{Time: created}}
		if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertMessage(ctx, m) }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	move := func(m *parley.Message, status string, at time.Time) {
		tr := store.Transition{Status: status, At: at}
		if err := db.WithTx(ctx, func(tx *store.Tx) error {
			ok, err := tx.TransitionMessage(ctx, m.BrandID, m.ID, tr)
			if err == nil && !ok {
				t.Errorf("message %d: no transition to %s", m.ID, status)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	msg("ann", "inbound", "delivered", day("2025-12-27 10:00:00"))
	m := msg("ann", "outbound", "queued", day("2025-12-20 09:00:00"))
	move(m, parley.StatusSent, day("2025-12-20 09:00:01"))
	move(m, parley.StatusDelivered, day("2025-12-20 09:00:05"))
	msg("bob", "outbound", "queued", day("2025-12-27 09:00:00"))
	m = msg("bob", "outbound", "queued", day("2025-12-26 09:00:00"))
	move(m, parley.StatusSent, day("2025-12-26 09:00:01"))
	move(m, parley.StatusFailed, day("2025-12-26 09:00:02")) // leaves the count, and its date with it
	m = msg("bob", "outbound", "queued", day("2025-11-01 09:00:00"))
	move(m, parley.StatusSent, day("2025-11-01 09:00:01"))
	move(m, parley.StatusUndelivered, day("2025-11-01 09:00:09"))
	msg("dee", "inbound", "delivered", day("2025-01-01 00:00:00"))
	msg("dee", "inbound", "delivered", day("2025-12-28 09:00:00"))
	msg("zed", "inbound", "delivered", day("2025-12-28 09:00:00"))
	return f
}

// members evaluates a with both store functions, which must agree, and
// returns the members' names sorted.
func (f *segFixture) members(t *testing.T, a store.Audience) ([]string, error) {
	t.Helper()
	ctx := t.Context()
	n, err := f.db.CountAudience(ctx, f.brand, a)
	if err != nil {
		return nil, err
	}
	var names []string
	after := int64(0)
	for {
		page, err := f.db.AudienceUsers(ctx, f.brand, a, after, 2)
		if err != nil {
			return nil, err
		}
		for _, u := range page {
			if u.ID <= after {
				t.Fatalf("page not in id order: %d after %d", u.ID, after)
			}
			names = append(names, f.byID[u.ID])
			after = u.ID
		}
		if len(page) < 2 {
			break
		}
	}
	if int64(len(names)) != n {
		t.Errorf("count %d, but pages hold %v", n, names)
	}
	sort.Strings(names)
	f.engineAgrees(t, a, n, names)
	return names, nil
}

// engineAgrees demands the in-memory engine's count, pages and preview
// give the SQL path's members.
func (f *segFixture) engineAgrees(t *testing.T, a store.Audience, n int64, want []string) {
	t.Helper()
	ctx := t.Context()
	if f.eng == nil {
		f.eng = audience.New(f.db, nil)
		f.eng.Eager = true
	}
	got, err := f.eng.Count(ctx, f.brand, a)
	if err != nil || got != n {
		t.Errorf("engine count %d, %v; SQL %d", got, err, n)
	}
	var names []string
	after := int64(0)
	for {
		page, err := f.eng.Users(ctx, f.brand, a, after, 2)
		if err != nil {
			t.Fatalf("engine users: %v", err)
		}
		for _, u := range page {
			if u.ID <= after {
				t.Fatalf("engine page not in id order: %d after %d", u.ID, after)
			}
			names = append(names, f.byID[u.ID])
			after = u.ID
		}
		if len(page) < 2 {
			break
		}
	}
	sort.Strings(names)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("engine members %v, SQL %v", names, want)
	}
}

type segCase struct {
	name     string
	criteria []parley.SegmentCriterion
	want     string // member names, space-separated, sorted
}

func c(dim int64, field string, typ, op int64, group int64) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: dim, FieldName: field, FieldType: typ},
		OperatorType: op, AndGroupNum: group}
}
func cs(dim int64, field string, typ, op int64, v string) parley.SegmentCriterion {
	x := c(dim, field, typ, op, 0)
	x.StrFieldValue = &v
	return x
}
func ci(dim int64, field string, typ, op int64, v int64) parley.SegmentCriterion {
	x := c(dim, field, typ, op, 0)
	x.IntFieldValue = &v
	return x
}
func cf(dim int64, field string, op int64, v float64) parley.SegmentCriterion {
	x := c(dim, field, parley.CustomFloat, op, 0)
	x.FloatFieldValue = &v
	return x
}
func cb(dim int64, field string, op int64, v bool) parley.SegmentCriterion {
	x := c(dim, field, parley.CustomBoolean, op, 0)
	x.BoolFieldValue = &v
	return x
}
func cd(dim int64, field string, op int64, v string) parley.SegmentCriterion {
	x := c(dim, field, parley.CustomDate, op, 0)
	x.DateFieldValue = &v
	return x
}
func g(group int64, x parley.SegmentCriterion) parley.SegmentCriterion {
	x.AndGroupNum = group
	return x
}
func one(x parley.SegmentCriterion) []parley.SegmentCriterion { return []parley.SegmentCriterion{x} }

const (
	contact  = parley.DimensionContact
	custom   = parley.DimensionCustomData
	activity = parley.DimensionActivity
	str      = parley.CustomString
	integer  = parley.CustomInteger
	list     = parley.CustomList
	date     = parley.CustomDate
	boolean  = parley.CustomBoolean
)

// segCases runs every operator on every type it fits, the missing-value
// rule (a missing value matches only IS_NOT_SET, NOT_EQUALS and
// DOES_NOT_CONTAIN) and AND/OR groups.
var segCases = []segCase{
	{"NoCriteriaIsEveryLiveUserOfTheBrand", nil, "ann bob cy dee"},

	// STRING, contact field: ASCII case ignored; null and "" are missing.
	{"StringEquals", one(cs(contact, "first_name", str, parley.OpEquals, "aNN")), "ann"},
	{"StringNotEqualsMatchesMissing", one(cs(contact, "first_name", str, parley.OpNotEquals, "ann")), "bob cy dee"},
	{"StringContains", one(cs(contact, "first_name", str, parley.OpContains, "E")), "dee"},
	{"StringDoesNotContainMatchesMissing", one(cs(contact, "first_name", str, parley.OpDoesNotContain, "e")), "ann bob cy"},
	{"StringStartsWith", one(cs(contact, "first_name", str, parley.OpStartsWith, "Bo")), "bob"},
	{"StringStartsWithNotMissing", one(cs(contact, "first_name", str, parley.OpStartsWith, "")), "ann bob dee"},
	{"StringIsSet", one(c(contact, "first_name", str, parley.OpIsSet, 0)), "ann bob dee"},
	{"StringIsNotSet", one(c(contact, "first_name", str, parley.OpIsNotSet, 0)), "cy"},
	{"EmptyContactFieldIsMissing", one(c(contact, "city", str, parley.OpIsNotSet, 0)), "bob cy dee"},
	{"EmptyContactFieldNeverEquals", one(cs(contact, "city", str, parley.OpEquals, "")), ""},
	{"OnlyASCIICaseFolds", one(cs(contact, "last_name", str, parley.OpEquals, "ünal")), ""},
	{"ASCIIFoldsBesideNonASCII", one(cs(contact, "last_name", str, parley.OpEquals, "ÜNAL")), "dee"},
	{"NonASCIIAsStored", one(cs(contact, "last_name", str, parley.OpEquals, "Ünal")), "dee"},
	{"NonASCIIContains", one(cs(contact, "last_name", str, parley.OpContains, "üN")), ""},
	{"Email", one(cs(contact, "email_address", str, parley.OpContains, "@EXAMPLE")), "ann"},
	{"Phone", one(cs(contact, "phone_number", str, parley.OpStartsWith, "+1617")), "cy dee"},
	{"PostalCode", one(cs(contact, "postal_code", str, parley.OpEquals, "02108")), "ann"},
	{"StateCode", one(cs(contact, "state_code", str, parley.OpEquals, "ma")), "ann"},
	{"State", one(cs(contact, "state", str, parley.OpStartsWith, "mass")), "ann"},
	{"County", one(c(contact, "county", str, parley.OpIsNotSet, 0)), "ann bob cy dee"},
	{"TimeZone", one(cs(contact, "time_zone", str, parley.OpEquals, "america/new_york")), "ann"},
	{"LikeWildcardsAreText", one(cs(contact, "first_name", str, parley.OpContains, "%")), ""},

	// STRING, custom data.
	{"CustomStringEquals", one(cs(custom, "tier", str, parley.OpEquals, "GOLD")), "ann"},
	{"CustomStringNotEquals", one(cs(custom, "tier", str, parley.OpNotEquals, "gold")), "bob cy dee"},
	{"CustomStringContains", one(cs(custom, "tier", str, parley.OpContains, "gold")), "ann dee"},
	{"CustomStringDoesNotContain", one(cs(custom, "tier", str, parley.OpDoesNotContain, "gold")), "bob cy"},
	{"CustomStringStartsWith", one(cs(custom, "tier", str, parley.OpStartsWith, "SIL")), "bob"},
	{"CustomStringIsSet", one(c(custom, "tier", str, parley.OpIsSet, 0)), "ann bob dee"},
	{"CustomStringIsNotSet", one(c(custom, "tier", str, parley.OpIsNotSet, 0)), "cy"},

	// LIST: has the item (text ignoring ASCII case, or the number).
	{"ListContains", one(cs(custom, "tags", list, parley.OpContains, "vip")), "ann"},
	{"ListContainsNumber", one(cs(custom, "tags", list, parley.OpContains, "2")), "ann"},
	{"ListContainsNumberAsFloat", one(cs(custom, "tags", list, parley.OpContains, "2.0")), "ann"},
	{"ListItemNotSubstring", one(cs(custom, "tags", list, parley.OpContains, "vi")), ""},
	{"ListEqualsIsHasItem", one(cs(custom, "tags", list, parley.OpEquals, "X")), "ann"},
	{"ListNotEquals", one(cs(custom, "tags", list, parley.OpNotEquals, "b")), "ann bob cy"},
	{"ListDoesNotContain", one(cs(custom, "tags", list, parley.OpDoesNotContain, "VIP")), "bob cy dee"},
	{"ListIsSetEmptyListToo", one(c(custom, "tags", list, parley.OpIsSet, 0)), "ann bob dee"},
	{"ListIsNotSet", one(c(custom, "tags", list, parley.OpIsNotSet, 0)), "cy"},

	// INTEGER: a JSON null is missing.
	{"IntegerEquals", one(ci(custom, "age", integer, parley.OpEquals, 30)), "ann"},
	{"IntegerNotEquals", one(ci(custom, "age", integer, parley.OpNotEquals, 30)), "bob cy dee"},
	{"IntegerGreater", one(ci(custom, "age", integer, parley.OpGreaterThan, 30)), "bob"},
	{"IntegerGreaterOrEqual", one(ci(custom, "age", integer, parley.OpGreaterOrEqual, 30)), "ann bob"},
	{"IntegerLess", one(ci(custom, "age", integer, parley.OpLessThan, 45)), "ann"},
	{"IntegerLessOrEqual", one(ci(custom, "age", integer, parley.OpLessOrEqual, 45)), "ann bob"},
	{"IntegerIsSetNullIsNot", one(c(custom, "age", integer, parley.OpIsSet, 0)), "ann bob"},
	{"IntegerIsNotSet", one(c(custom, "age", integer, parley.OpIsNotSet, 0)), "cy dee"},

	// FLOAT: a value of another type (dee's "9") is missing.
	{"FloatEquals", one(cf(custom, "score", parley.OpEquals, 2.5)), "ann"},
	{"FloatNotEquals", one(cf(custom, "score", parley.OpNotEquals, 2.5)), "bob cy dee"},
	{"FloatGreater", one(cf(custom, "score", parley.OpGreaterThan, 2.5)), "bob"},
	{"FloatGreaterOrEqual", one(cf(custom, "score", parley.OpGreaterOrEqual, 2.5)), "ann bob"},
	{"FloatLess", one(cf(custom, "score", parley.OpLessThan, 10)), "ann"},
	{"FloatLessOrEqual", one(cf(custom, "score", parley.OpLessOrEqual, 10)), "ann bob"},
	{"FloatWrongTypeIsMissing", one(c(custom, "score", parley.CustomFloat, parley.OpIsNotSet, 0)), "cy dee"},

	// BOOLEAN: "true"/"false" in any case, or 1/0; consent null is missing.
	{"BooleanTrue", one(cb(custom, "vip", parley.OpEquals, true)), "ann"},
	{"BooleanFalse", one(cb(custom, "vip", parley.OpEquals, false)), "bob dee"},
	{"BooleanNotTrue", one(cb(custom, "vip", parley.OpNotEquals, true)), "bob cy dee"},
	{"BooleanIsSet", one(c(custom, "vip", boolean, parley.OpIsSet, 0)), "ann bob dee"},
	{"BooleanIsNotSet", one(c(custom, "vip", boolean, parley.OpIsNotSet, 0)), "cy"},
	{"ConsentTrue", one(cb(contact, "messaging_consent", parley.OpEquals, true)), "ann dee"},
	{"ConsentFalse", one(cb(contact, "messaging_consent", parley.OpEquals, false)), "bob"},
	{"ConsentNotTrue", one(cb(contact, "messaging_consent", parley.OpNotEquals, true)), "bob cy"},
	{"ConsentIsNotSet", one(c(contact, "messaging_consent", boolean, parley.OpIsNotSet, 0)), "cy"},

	// DATE custom data, MM/DD/YYYY and YYYY-MM-DD alike; today 2025-12-28.
	{"DateEquals", one(cd(custom, "renewal", parley.OpEquals, "2025-12-01")), "ann"},
	{"DateNotEquals", one(cd(custom, "renewal", parley.OpNotEquals, "2025-12-27")), "ann cy dee"},
	{"DateGreater", one(cd(custom, "renewal", parley.OpGreaterThan, "2025-12-01")), "bob"},
	{"DateGreaterOrEqual", one(cd(custom, "renewal", parley.OpGreaterOrEqual, "2025-12-01")), "ann bob"},
	{"DateLess", one(cd(custom, "renewal", parley.OpLessThan, "2025-12-27")), "ann dee"},
	{"DateLessOrEqual", one(cd(custom, "renewal", parley.OpLessOrEqual, "2025-12-27")), "ann bob dee"},
	{"DateInLastDays1", one(ci(custom, "renewal", date, parley.OpInLastDays, 1)), "bob"},
	{"DateInLastDays27", one(ci(custom, "renewal", date, parley.OpInLastDays, 27)), "ann bob"},
	{"DateMoreThanDaysAgo", one(ci(custom, "renewal", date, parley.OpMoreThanDaysAgo, 27)), "dee"},
	{"DateAnniversaryToday", one(ci(custom, "renewal", date, parley.OpAnniversaryWithinDays, 0)), "dee"},
	{"DateIsSet", one(c(custom, "renewal", date, parley.OpIsSet, 0)), "ann bob dee"},
	{"DateIsNotSet", one(c(custom, "renewal", date, parley.OpIsNotSet, 0)), "cy"},

	// date_of_birth (MM/DD/YYYY): birthdays across the year end.
	{"BirthdayWithin7DaysAcrossYearEnd", one(ci(contact, "date_of_birth", date, parley.OpAnniversaryWithinDays, 7)), "ann bob"},
	{"BirthdayWithin4Days", one(ci(contact, "date_of_birth", date, parley.OpAnniversaryWithinDays, 4)), "bob"},
	{"BirthdayWithin5DaysEndIncluded", one(ci(contact, "date_of_birth", date, parley.OpAnniversaryWithinDays, 5)), "ann bob"},
	{"BirthdayWithinAYear", one(ci(contact, "date_of_birth", date, parley.OpAnniversaryWithinDays, 400)), "ann bob dee"},
	{"BirthEquals", one(cd(contact, "date_of_birth", parley.OpEquals, "1990-01-02")), "ann"},
	{"BirthAfter", one(cd(contact, "date_of_birth", parley.OpGreaterThan, "1989-12-31")), "ann dee"},
	{"BirthBefore", one(cd(contact, "date_of_birth", parley.OpLessThan, "1990-01-01")), "bob"},
	{"BirthMoreThanDaysAgo", one(ci(contact, "date_of_birth", date, parley.OpMoreThanDaysAgo, 10000)), "ann bob"},
	{"BirthIsNotSet", one(c(contact, "date_of_birth", date, parley.OpIsNotSet, 0)), "cy"},

	// date_created: by calendar day in UTC.
	{"CreatedEquals", one(cd(contact, "date_created", parley.OpEquals, "2025-12-28")), "cy"},
	{"CreatedEqualsLastMicrosecondOfDay", one(cd(contact, "date_created", parley.OpEquals, "2024-12-28")), "dee"},
	{"CreatedNotEquals", one(cd(contact, "date_created", parley.OpNotEquals, "2025-12-28")), "ann bob dee"},
	{"CreatedGreater", one(cd(contact, "date_created", parley.OpGreaterThan, "2025-12-01")), "cy"},
	{"CreatedGreaterOrEqual", one(cd(contact, "date_created", parley.OpGreaterOrEqual, "2025-12-01")), "ann cy"},
	{"CreatedLess", one(cd(contact, "date_created", parley.OpLessThan, "2025-12-01")), "bob dee"},
	{"CreatedLessOrEqual", one(cd(contact, "date_created", parley.OpLessOrEqual, "2025-12-01")), "ann bob dee"},
	{"CreatedToday", one(ci(contact, "date_created", date, parley.OpInLastDays, 0)), "cy"},
	{"CreatedInLast27Days", one(ci(contact, "date_created", date, parley.OpInLastDays, 27)), "ann cy"},
	{"CreatedMoreThan27DaysAgo", one(ci(contact, "date_created", date, parley.OpMoreThanDaysAgo, 27)), "bob dee"},
	{"CreatedAnniversaryToday", one(ci(contact, "date_created", date, parley.OpAnniversaryWithinDays, 0)), "cy dee"},
	{"CreatedIsSet", one(c(contact, "date_created", date, parley.OpIsSet, 0)), "ann bob cy dee"},

	// Activity (D14): outbound counts sent, delivered and undelivered only.
	{"InboundCount", one(ci(activity, "inbound_count", integer, parley.OpGreaterThan, 0)), "ann dee"},
	{"InboundCountZeroWithoutMessages", one(ci(activity, "inbound_count", integer, parley.OpEquals, 0)), "bob cy"},
	{"InboundCountAtLeast2", one(ci(activity, "inbound_count", integer, parley.OpGreaterOrEqual, 2)), "dee"},
	{"CountIsNeverMissing", one(c(activity, "inbound_count", integer, parley.OpIsSet, 0)), "ann bob cy dee"},
	{"OutboundCountHandedToProvider", one(ci(activity, "outbound_count", integer, parley.OpEquals, 1)), "ann bob"},
	{"OutboundCountZero", one(ci(activity, "outbound_count", integer, parley.OpLessThan, 1)), "cy dee"},
	{"LastInboundInLastDay", one(ci(activity, "last_inbound_at", date, parley.OpInLastDays, 1)), "ann dee"},
	{"LastInboundToday", one(cd(activity, "last_inbound_at", parley.OpEquals, "2025-12-28")), "dee"},
	{"LastInboundIsNotSet", one(c(activity, "last_inbound_at", date, parley.OpIsNotSet, 0)), "bob cy"},
	{"LastOutboundNotTheFailedOne", one(cd(activity, "last_outbound_at", parley.OpLessThan, "2025-12-01")), "bob"},
	{"LastOutboundNotEquals", one(cd(activity, "last_outbound_at", parley.OpNotEquals, "2025-12-20")), "bob cy dee"},
	{"LastOutboundMoreThanDaysAgo", one(ci(activity, "last_outbound_at", date, parley.OpMoreThanDaysAgo, 30)), "bob"},
	{"LastDelivered", one(cd(activity, "last_delivered_at", parley.OpEquals, "2025-12-20")), "ann"},
	{"LastDeliveredIsSet", one(c(activity, "last_delivered_at", date, parley.OpIsSet, 0)), "ann"},
	{"LastDeliveredAnniversary", one(ci(activity, "last_delivered_at", date, parley.OpAnniversaryWithinDays, 10)), ""},

	// Groups: the same and_group_num joins by AND, groups by OR.
	{"AndInOneGroup", []parley.SegmentCriterion{
		c(contact, "first_name", str, parley.OpIsSet, 0), cb(contact, "messaging_consent", parley.OpEquals, true)}, "ann dee"},
	{"OrAcrossGroups", []parley.SegmentCriterion{
		g(0, cs(contact, "first_name", str, parley.OpEquals, "ann")), g(1, ci(custom, "age", integer, parley.OpGreaterThan, 40))}, "ann bob"},
	{"AndGroupsOred", []parley.SegmentCriterion{
		g(5, cs(custom, "tier", str, parley.OpContains, "gold")), g(2, ci(activity, "inbound_count", integer, parley.OpEquals, 0)),
		g(5, cb(custom, "vip", parley.OpEquals, false))}, "bob cy dee"},
	{"ThreeCriteriaTwoGroups", []parley.SegmentCriterion{
		g(0, cs(contact, "state_code", str, parley.OpEquals, "MA")), g(0, ci(custom, "age", integer, parley.OpLessThan, 40)),
		g(1, ci(activity, "last_inbound_at", date, parley.OpInLastDays, 0))}, "ann dee"},
}

func TestSegmentCriteria(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	for _, tt := range segCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.members(t, store.Audience{Criteria: tt.criteria})
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("members %q, want %q", g, tt.want)
			}
		})
	}
}

// TestSegmentCriteriaSplitCount runs the cases with every SQLite count
// split in parts of ids (countSplit): the parts must add up to the pages.
func TestSegmentCriteriaSplitCount(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	f.db.SplitCounts(1)
	for _, tt := range segCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.members(t, store.Audience{Criteria: tt.criteria})
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("members %q, want %q", g, tt.want)
			}
		})
	}
}

func mustSegment(t *testing.T, f *segFixture, brand int64, typ string, criteria ...parley.SegmentCriterion) int64 {
	t.Helper()
	s := &parley.Segment{BrandID: brand, Name: "s" + time.Now().Format("150405.000000000"), Type: typ, IsActive: true, Criteria: criteria}
	if err := f.db.WithTx(t.Context(), func(tx *store.Tx) error {
		if err := tx.CreateSegment(t.Context(), s); err != nil {
			return err
		}
		if typ == parley.SegmentPointInTime {
			_, err := tx.FreezeSegment(t.Context(), brand, s.ID)
			return err
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func member(id int64, op int64) parley.SegmentCriterion {
	x := c(parley.DimensionSegment, "", integer, op, 0)
	x.IntFieldValue = &id
	return x
}

func TestSegmentMembership(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	gold := mustSegment(t, f, f.brand, parley.SegmentStandard, cs(custom, "tier", str, parley.OpContains, "gold"))
	goldSubscribed := mustSegment(t, f, f.brand, parley.SegmentStandard, member(gold, parley.OpEquals),
		cb(contact, "messaging_consent", parley.OpEquals, true))
	theirs := mustSegment(t, f, f.other, parley.SegmentStandard)
	for _, tt := range []segCase{
		{"Member", one(member(gold, parley.OpEquals)), "ann dee"},
		{"NotMember", one(member(gold, parley.OpNotEquals)), "bob cy"},
		{"Nested", one(member(goldSubscribed, parley.OpEquals)), "ann dee"},
		{"NotMemberOfNested", []parley.SegmentCriterion{member(goldSubscribed, parley.OpNotEquals), g(0, c(contact, "first_name", str, parley.OpIsSet, 0))}, "bob"},
		{"EveryoneSegment", one(member(mustSegment(t, f, f.brand, parley.SegmentStandard), parley.OpEquals)), "ann bob cy dee"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := f.members(t, store.Audience{Criteria: tt.criteria})
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("members %q, want %q", g, tt.want)
			}
		})
	}
	t.Run("StoredSegmentByID", func(t *testing.T) {
		got, err := f.members(t, store.Audience{SegmentID: goldSubscribed})
		if err != nil || strings.Join(got, " ") != "ann dee" {
			t.Errorf("members %v, %v; want ann dee", got, err)
		}
	})
	t.Run("OtherBrandsSegmentIsNotFound", func(t *testing.T) {
		if _, err := f.db.CountAudience(t.Context(), f.brand, store.Audience{SegmentID: theirs}); err != store.ErrNotFound {
			t.Errorf("err = %v, want ErrNotFound", err)
		}
		_, err := f.db.CountAudience(t.Context(), f.brand, store.Audience{Criteria: one(member(theirs, parley.OpEquals))})
		wantCriterionError(t, err, "criteria[0].int_field_value")
	})
	t.Run("StoredCycleRefused", func(t *testing.T) {
		// Saved without the service's check; evaluation must still refuse
		// it as a validation_error naming the criterion, never loop or 500.
		a := mustSegment(t, f, f.brand, parley.SegmentStandard)
		b := mustSegment(t, f, f.brand, parley.SegmentStandard, member(a, parley.OpEquals))
		if err := f.db.Exec(t.Context(), `UPDATE segments SET criteria = ? WHERE id = ?`,
			`[{"attribute":{"dimension_type":4,"field_name":"","field_type":1},"operator_type":1,"and_group_num":0,"int_field_value":`+
				itoa(b)+`}]`, a); err != nil {
			t.Fatal(err)
		}
		_, err := f.db.CountAudience(t.Context(), f.brand, store.Audience{SegmentID: a})
		wantCriterionError(t, err, "criteria[0].int_field_value")
		_, err = f.db.CountAudience(t.Context(), f.brand, store.Audience{Criteria: []parley.SegmentCriterion{
			c(contact, "first_name", str, parley.OpIsSet, 0), member(b, parley.OpEquals)}})
		wantCriterionError(t, err, "criteria[1].int_field_value")
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func wantCriterionError(t *testing.T, err error, field string) {
	t.Helper()
	e, ok := err.(*parley.Error)
	if !ok || e.Code != parley.EValidation || e.Field != field || !strings.HasPrefix(e.Message, field+": ") {
		t.Errorf("err = %#v, want a validation_error on %s", err, field)
	}
}

func TestSegmentPointInTime(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	subscribed := cb(contact, "messaging_consent", parley.OpEquals, true)
	frozen := mustSegment(t, f, f.brand, parley.SegmentPointInTime, subscribed)
	standard := mustSegment(t, f, f.brand, parley.SegmentStandard, subscribed)
	members := func(a store.Audience) string {
		t.Helper()
		got, err := f.members(t, a)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	if got := members(store.Audience{SegmentID: frozen}); got != "ann dee" {
		t.Fatalf("frozen at creation: %q, want ann dee", got)
	}
	// Later changes do not move a frozen segment; a deleted user drops out.
	bob, dee := f.userOf["bob"], f.userOf["dee"]
	bob.MessagingConsent = ptr(true)
	dee.IsDeleted = true
	for _, u := range []*parley.User{bob, dee} {
		if err := f.db.WithTx(ctx, func(tx *store.Tx) error { return tx.UpdateUser(ctx, u) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := members(store.Audience{SegmentID: frozen}); got != "ann" {
		t.Errorf("frozen after changes: %q, want ann (bob's consent came later; dee is deleted)", got)
	}
	if got := members(store.Audience{SegmentID: standard}); got != "ann bob" {
		t.Errorf("standard after changes: %q, want ann bob", got)
	}
	if got := members(store.Audience{Criteria: one(member(frozen, parley.OpEquals))}); got != "ann" {
		t.Errorf("member of the frozen segment: %q, want ann", got)
	}
	if got := members(store.Audience{Criteria: one(member(frozen, parley.OpNotEquals))}); got != "bob cy" {
		t.Errorf("not a member of the frozen segment: %q, want bob cy", got)
	}
}

// The activity columns follow every message path, so the day a message
// arrives is the day a segment sees it.
func TestSegmentActivityFollowsMessages(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	recent := one(ci(activity, "inbound_count", integer, parley.OpGreaterOrEqual, 1))
	before, _ := f.members(t, store.Audience{Criteria: recent})
	m := &parley.Message{BrandID: f.brand, UserID: f.ids["cy"], Direction: "inbound", Status: "delivered", Type: "CONVERSATIONAL",
		DateCreated: parley.Time{Time: segNow}}
	if err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		_, err := tx.InsertInbound(ctx, m, "sim", "SM1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	after, _ := f.members(t, store.Audience{Criteria: recent})
	if !slices.Equal(before, []string{"ann", "dee"}) || !slices.Equal(after, []string{"ann", "cy", "dee"}) {
		t.Errorf("inbound_count ≥ 1: before %v after %v", before, after)
	}
}

// The filter is usable inside a transaction, as campaigns will use it:
// INSERT … SELECT … FROM users u WHERE <filter>.
func TestSegmentAudienceFilterInTx(t *testing.T) {
	t.Parallel()
	f := mustSegFixture(t)
	ctx := t.Context()
	var n int
	err := f.db.WithTx(ctx, func(tx *store.Tx) error {
		where, args, err := tx.AudienceFilter(ctx, f.brand, store.Audience{Criteria: one(cs(custom, "tier", str, parley.OpContains, "gold"))})
		if err != nil {
			return err
		}
		if strings.Contains(where, "gold") {
			t.Errorf("a value in the SQL text: %s", where)
		}
		n = len(args)
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("AudienceFilter: %v, %d args", err, n)
	}
}
