package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// cdEnv configures one field of every type for brand A (D6).
func cdEnv(t *testing.T) *apitest.Env {
	t.Helper()
	e := apitest.New(t)
	a := e.BrandA.ID
	for _, f := range []*parley.CustomField{
		{BrandID: a, FieldName: "Loyalty Tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"gold", "silver"}},
		{BrandID: a, FieldName: "Order Count", CustomDataType: parley.CustomInteger},
		{BrandID: a, FieldName: "Lifetime Value ($)", CustomDataType: parley.CustomFloat},
		{BrandID: a, FieldName: "Tags", CustomDataType: parley.CustomList, Subtype: parley.CustomString, IsAppend: true},
		{BrandID: a, FieldName: "Sizes", CustomDataType: parley.CustomList, Subtype: parley.CustomInteger, AvailableEnumValues: []string{"1", "2", "3"}},
		{BrandID: a, FieldName: "Anything", CustomDataType: parley.CustomList},
		{BrandID: a, FieldName: "VIP", CustomDataType: parley.CustomBoolean},
		{BrandID: a, FieldName: "Signup Date", CustomDataType: parley.CustomDate},
		{BrandID: a, FieldName: "Nickname", CustomDataType: parley.CustomString},
	} {
		e.MustCreateField(t, f)
	}
	// Brand B has a field brand A lacks.
	e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandB.ID, FieldName: "Only B", CustomDataType: parley.CustomString})
	return e
}

func cdCreate(t *testing.T, e *apitest.Env, customData string) (*parley.User, error) {
	t.Helper()
	in := parley.UserCreate{PhoneNumber: parley.Some("+14155552671"),
		UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(customData))}}
	return e.A.CreateUser(e.Ctx, in)
}

func cdJSON(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("custom_data %s: %v", raw, err)
	}
	return m
}

func TestCustomDataAccepted(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in string }{
		{"SnakeCaseKeys", `{"loyalty_tier":"gold","lifetime_value":12.5,"signup_date":"2024-02-29"}`},
		{"IntegerWhole", `{"order_count":3}`},
		{"IntegerWholeFloatForm", `{"order_count":3.0}`},
		{"FloatInteger", `{"lifetime_value":7}`},
		{"ListOfStrings", `{"tags":["a","b"]}`},
		{"ListEnumItems", `{"sizes":[1,3]}`},
		{"ListNoSubtypeAnyItems", `{"anything":[1,"x",[2],{"k":true},null]}`},
		{"BooleanStringAnyCase", `{"vip":"TRUE"}`},
		{"BooleanNumber", `{"vip":0}`},
		{"DateUS", `{"signup_date":"12/31/2020"}`},
		{"EmptyObject", `{}`},
		{"NullValueDropped", `{"nickname":null,"order_count":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := cdEnv(t)
			u, err := cdCreate(t, e, tt.in)
			if err != nil {
				t.Fatalf("custom_data %s rejected: %v (D6)", tt.in, err)
			}
			got := cdJSON(t, u.CustomData)
			if _, ok := got["nickname"]; ok {
				t.Errorf("a null value was stored: %s", u.CustomData)
			}
		})
	}
}

func TestCustomDataRejected(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	tests := []struct{ name, in, field string }{
		{"UnknownKey", `{"favorite_color":"red"}`, "custom_data.favorite_color"},
		{"NameNotKey", `{"Loyalty Tier":"gold"}`, "custom_data.Loyalty Tier"},
		{"OtherBrandsField", `{"only_b":"x"}`, "custom_data.only_b"},
		{"NotAnObject", `["x"]`, "custom_data"},
		{"StringNotObject", `"x"`, "custom_data"},
		{"ObjectValue", `{"nickname":{"a":1}}`, "custom_data.nickname"},
		{"JSONBoolean", `{"vip":true}`, "custom_data.vip"},
		{"JSONBooleanOnString", `{"nickname":false}`, "custom_data.nickname"},
		{"IntegerFraction", `{"order_count":1.5}`, "custom_data.order_count"},
		{"IntegerString", `{"order_count":"3"}`, "custom_data.order_count"},
		{"FloatString", `{"lifetime_value":"1.5"}`, "custom_data.lifetime_value"},
		{"StringNumber", `{"nickname":5}`, "custom_data.nickname"},
		{"EnumMiss", `{"loyalty_tier":"bronze"}`, "custom_data.loyalty_tier"},
		{"EnumCase", `{"loyalty_tier":"Gold"}`, "custom_data.loyalty_tier"},
		{"ListNotArray", `{"tags":"a"}`, "custom_data.tags"},
		{"ListItemType", `{"tags":["a",1]}`, "custom_data.tags"},
		{"ListItemEnum", `{"sizes":[1,4]}`, "custom_data.sizes"},
		{"BooleanWord", `{"vip":"yes"}`, "custom_data.vip"},
		{"BooleanNumber2", `{"vip":2}`, "custom_data.vip"},
		{"DateBad", `{"signup_date":"2024-02-30"}`, "custom_data.signup_date"},
		{"DateFormat", `{"signup_date":"31.12.2020"}`, "custom_data.signup_date"},
		{"TooManyKeys", manyKeys(101), "custom_data"},
	}
	before := e.State(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cdCreate(t, e, tt.in)
			ae := wantAPIError(t, err, 422, parley.EInvalidCustomData)
			if ae.Field != tt.field {
				t.Errorf("field = %q, want %q (msg %q)", ae.Field, tt.field, ae.Msg)
			}
			if !strings.HasPrefix(ae.Msg, tt.field+":") {
				t.Errorf("msg = %q, want it to name %s", ae.Msg, tt.field)
			}
		})
	}
	if e.State(t) != before {
		t.Error("rejected custom_data changed the database")
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k` + itoa(int64(i)) + `":1`)
	}
	return b.String() + "}"
}

func TestCustomDataSizeLimit(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	// 16 KiB of JSON per user at most (D6).
	_, err := cdCreate(t, e, `{"nickname":"`+strings.Repeat("x", 16<<10)+`"}`)
	wantAPIError(t, err, 422, parley.EInvalidCustomData)
	if _, err := cdCreate(t, e, `{"nickname":"`+strings.Repeat("x", 15<<10)+`"}`); err != nil {
		t.Errorf("15 KiB rejected: %v", err)
	}
}

func TestCustomDataMerge(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	u, err := cdCreate(t, e, `{"loyalty_tier":"gold","tags":["a","b"],"sizes":[1],"order_count":2}`)
	if err != nil {
		t.Fatal(err)
	}
	update := func(cd string) map[string]any {
		t.Helper()
		resp, err := e.A.Do(e.Ctx, "POST", "/users/"+itoa(u.ID), []byte(`{"custom_data":`+cd+`}`), "application/json")
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Err(); err != nil {
			t.Fatalf("update %s: %v", cd, err)
		}
		var got parley.User
		json.Unmarshal(resp.Body, &got)
		if string(got.CustomData) == "null" {
			return nil
		}
		return cdJSON(t, got.CustomData)
	}

	got := update(`{"order_count":5}`)
	if got["loyalty_tier"] != "gold" || got["order_count"] != 5.0 {
		t.Errorf("merge per key: %v; want loyalty_tier kept, order_count 5 (D6)", got)
	}
	got = update(`{"tags":["b","c"],"sizes":[2]}`)
	if tags := got["tags"].([]any); len(tags) != 3 || tags[0] != "a" || tags[1] != "b" || tags[2] != "c" {
		t.Errorf("is_append list = %v, want [a b c] (appended, duplicates skipped, D6)", tags)
	}
	if sizes := got["sizes"].([]any); len(sizes) != 1 || sizes[0] != 2.0 {
		t.Errorf("non-append list = %v, want replaced by [2] (D6)", sizes)
	}
	got = update(`{"loyalty_tier":null}`)
	if _, ok := got["loyalty_tier"]; ok || got["order_count"] != 5.0 {
		t.Errorf("null key: %v; want loyalty_tier removed and the rest kept (D6)", got)
	}
	if got := update(`null`); got != nil {
		t.Errorf("custom_data null: %v; want null (D6)", got)
	}
	got = update(`{"tags":["z"]}`)
	if tags := got["tags"].([]any); len(tags) != 1 || tags[0] != "z" {
		t.Errorf("append onto nothing = %v, want [z]", tags)
	}
}

func TestCustomDataKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Loyalty Tier":       "loyalty_tier",
		"Lifetime Value ($)": "lifetime_value",
		"  --Already_snake":  "already_snake",
		"VIP":                "vip",
		"Über Größe":         "über_größe",
		"a--b  c":            "a_b_c",
	} {
		if got := parley.CustomDataKey(in); got != want {
			t.Errorf("CustomDataKey(%q) = %q, want %q (D6)", in, got, want)
		}
	}
}
