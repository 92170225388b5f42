package rules_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/rules"
)

var now = time.Date(2026, 5, 14, 15, 4, 0, 0, time.UTC)

// fields is a brand's auto-collected fields, as a test brand would set them up.
func fields() []extract.Field {
	return []extract.Field{
		{Key: "vip", Name: "VIP", Type: extract.Boolean, Prompt: "Whether the contact wants to join the VIP club"},
		{Key: "age", Name: "Age", Type: extract.Integer, Prompt: "The contact's age in years"},
		{Key: "number_of_kids", Name: "Number of kids", Type: extract.Integer, Prompt: "How many children the contact has"},
		{Key: "budget", Name: "Budget", Type: extract.Float, Prompt: "Monthly budget in dollars"},
		{Key: "birthday", Name: "Birthday", Type: extract.Date, Prompt: "The contact's date of birth"},
		{Key: "work_email", Name: "Work Email", Type: extract.String, Prompt: "The contact's work e-mail address"},
		{Key: "shirt_size", Name: "Shirt Size", Type: extract.String, Enum: []string{"S", "M", "L", "XL"}},
		{Key: "shoe_size", Name: "Shoe Size", Type: extract.Float},
		{Key: "favorite_colors", Name: "Favorite Colors", Type: extract.List, Subtype: extract.String, Enum: []string{"Red", "Blue", "Green", "Black"}},
		{Key: "loyalty_tier", Name: "Loyalty Tier", Type: extract.String, Enum: []string{"Bronze", "Silver", "Gold"}},
	}
}

// conv builds a conversation: "> " lines are the brand's, "< " lines the contact's.
func conv(lines ...string) []extract.Message {
	var ms []extract.Message
	for i, l := range lines {
		ms = append(ms, extract.Message{
			Inbound: strings.HasPrefix(l, "< "),
			Body:    l[2:],
			At:      now.Add(time.Duration(i-len(lines)) * time.Minute),
		})
	}
	return ms
}

func run(t *testing.T, fs []extract.Field, ms []extract.Message) map[string]string {
	t.Helper()
	vs, err := rules.Extractor{}.Extract(context.Background(), extract.Request{Fields: fs, Conversation: ms, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range vs {
		if !json.Valid(v.Value) {
			t.Fatalf("%s: invalid JSON %s", v.Key, v.Value)
		}
		got[v.Key] = string(v.Value)
	}
	return got
}

func same(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

type want = map[string]string

func TestExtract(t *testing.T) {
	const askVIP = "> Thanks for shopping with us! Would you like to join our VIP club?"
	const askAge = "> Great! What's your age?"
	const askKids = "> How many kids do you have?"
	const askBudget = "> What's your monthly budget?"
	const askBirthday = "> When is your birthday? We'd love to send you a gift."
	const askEmail = "> What's your work email?"
	const askColors = "> Which colors do you like best?"
	const askShoe = "> What's your shoe size?"
	tests := []struct {
		name  string
		lines []string
		want  want
	}{
		// BOOLEAN: only when the question asked about the field.
		{"YesPlease", []string{askVIP, "< Yes please!"}, want{"vip": `"true"`}},
		{"Yeah", []string{askVIP, "< yeah sounds good"}, want{"vip": `"true"`}},
		{"OfCourse", []string{askVIP, "< Of course!"}, want{"vip": `"true"`}},
		{"NoThanks", []string{askVIP, "< no thanks"}, want{"vip": `"false"`}},
		{"NotInterested", []string{askVIP, "< Not interested, sorry"}, want{"vip": `"false"`}},
		{"NotSure", []string{askVIP, "< not sure yet, maybe later"}, want{}},
		{"Stop", []string{askVIP, "< STOP"}, want{}},
		{"BareYesIsStartKeyword", []string{askVIP, "< YES"}, want{}},
		{"Chatter", []string{askVIP, "< lol see you then"}, want{}},
		{"YesWithoutQuestion", []string{"> Your order has shipped.", "< yes thank you"}, want{}},
		{"BooleanNamed", []string{"> Hi!", "< yes I want the VIP club"}, want{"vip": `"true"`}},

		// INTEGER and FLOAT.
		{"ImThirtyFour", []string{askAge, "< I'm 34"}, want{"age": `34`}},
		{"BareNumberNoQuestion", []string{"> Thanks for visiting!", "< 3"}, want{}},
		{"AboutThreeKids", []string{askKids, "< about 3 kids"}, want{"number_of_kids": `3`}},
		{"ThreeKidsInWords", []string{"> Hi there!", "< I have three kids"}, want{"number_of_kids": `3`}},
		{"NotWhole", []string{askAge, "< 34.5"}, want{}},
		{"NoOneIsNotOne", []string{askKids, "< no one asked lol"}, want{}},
		{"JustOne", []string{askKids, "< just one"}, want{"number_of_kids": `1`}},
		{"Range", []string{askKids, "< 2 or 3"}, want{}},
		{"TimeIsNotANumber", []string{askKids, "< call me at 3:30"}, want{}},
		{"PhoneIsNotANumber", []string{askKids, "< call 555-123-4567"}, want{}},
		{"Dollars", []string{askBudget, "< $12.50"}, want{"budget": `12.5`}},
		{"Thousands", []string{askBudget, "< around 1,200 dollars"}, want{"budget": `1200`}},
		{"TwoFieldsNamed", []string{"> Tell us about you", "< my age is 34 and I have 2 kids"}, want{"age": `34`, "number_of_kids": `2`}},
		{"AskedAndNamed", []string{askShoe, "< 10, and I have 3 kids"}, want{"shoe_size": `10`, "number_of_kids": `3`}},
		{"QuestionAboutTwoFields", []string{"> What's your age and how many kids do you have?", "< 34 and 2"}, want{}},

		// DATE.
		{"MonthDayYear", []string{askBirthday, "< March 3, 1990"}, want{"birthday": `"03/03/1990"`}},
		{"NamedAbbrevOrdinal", []string{"> Hi!", "< my birthday is Mar 3rd 1990"}, want{"birthday": `"03/03/1990"`}},
		{"Slashes", []string{askBirthday, "< 3/3/1990"}, want{"birthday": `"03/03/1990"`}},
		{"TwoDigitYear", []string{askBirthday, "< 03/03/90"}, want{"birthday": `"03/03/1990"`}},
		{"TwoDigitYear99", []string{askBirthday, "< it's 12/25/99"}, want{"birthday": `"12/25/1999"`}},
		{"Dashes", []string{askBirthday, "< 3-3-1990"}, want{"birthday": `"03/03/1990"`}},
		{"AbbrevDot", []string{askBirthday, "< Mar. 3, 1990"}, want{"birthday": `"03/03/1990"`}},
		{"ISO", []string{askBirthday, "< 1990-03-03"}, want{"birthday": `"03/03/1990"`}},
		{"LeapDay", []string{askBirthday, "< 2000-02-29"}, want{"birthday": `"02/29/2000"`}},
		{"NoYear", []string{"> Hi!", "< my birthday is March 3"}, want{}},
		{"NoYearSlash", []string{askBirthday, "< 3/3"}, want{}},
		{"ImpossibleDay", []string{askBirthday, "< 02/30/1990"}, want{}},
		{"ImpossibleMonth", []string{askBirthday, "< 13/01/1990"}, want{}},
		{"NotLeap", []string{askBirthday, "< 1990-02-29"}, want{}},

		// E-mail: distinctive on its own, but only for an e-mail field.
		{"Email", []string{"> Thanks!", "< you can reach me at Bob.Smith@Example.com"}, want{"work_email": `"Bob.Smith@Example.com"`}},
		{"EmailNotYet", []string{askEmail, "< it's not set up yet"}, want{}},
		{"YesAndEmail", []string{askVIP, "< Yes! my email is amy@x.io"}, want{"vip": `"true"`, "work_email": `"amy@x.io"`}},

		// Enum values: whole words, any ASCII case, output as the enum spells them.
		{"SizeM", []string{"> Hi!", "< size m please"}, want{"shirt_size": `"M"`}},
		{"SizeCurlyApostrophe", []string{"> Hi!", "< I’m good thanks"}, want{}},
		{"ItsIsNotS", []string{"> Hi!", "< it's great, thanks"}, want{}},
		{"TwoSizes", []string{"> What shirt size?", "< M or L"}, want{}},
		{"Gold", []string{"> Hi!", "< I'm GOLD"}, want{"loyalty_tier": `"Gold"`}},
		{"GoldfishIsNotGold", []string{"> Hi!", "< goldfish are cute"}, want{}},
		{"ListInEnumOrder", []string{askColors, "< blue and red, also some black"}, want{"favorite_colors": `["Red","Blue","Black"]`}},
		{"ListNothing", []string{askColors, "< I like purple"}, want{}},
		{"SomeoneElsesSize", []string{"> Hi!", "< my son's shirt size is S"}, want{"shirt_size": `"S"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, fields(), conv(tt.lines...)); !same(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// The flags of D20 change which statements count.
func TestFlags(t *testing.T) {
	shoe := func(answers, current, personal bool) []extract.Field {
		return []extract.Field{{Key: "shoe_size", Name: "Shoe Size", Type: extract.Float,
			IncludeUserAnswers: answers, EmphasizeCurrent: current, EmphasizePersonal: personal}}
	}
	shirt := func(personal bool) []extract.Field {
		return []extract.Field{{Key: "shirt_size", Name: "Shirt Size", Type: extract.String,
			Enum: []string{"S", "M", "L"}, EmphasizePersonal: personal}}
	}
	earlier := []string{"> What's your shoe size?", "< my shoe size is 9", "> Anything else?", "< nope that's all"}
	changed := []string{"< my shoe size is 9", "> Noted!", "< actually my shoe size is 9.5"}
	tests := []struct {
		name   string
		fields []extract.Field
		lines  []string
		want   want
	}{
		{"OnlyLastWithoutUserAnswers", shoe(false, false, false), earlier, want{}},
		{"EarlierWithUserAnswers", shoe(true, false, false), earlier, want{"shoe_size": `9`}},
		{"DisagreeWithoutCurrent", shoe(true, false, false), changed, want{}},
		{"DisagreeCurrentWins", shoe(true, true, false), changed, want{"shoe_size": `9.5`}},
		{"StopIsNeverAStatement", shoe(true, false, false), []string{"< my shoe size is 9", "< STOP", "< ok"}, want{"shoe_size": `9`}},
		{"TriggerStopGivesNothing", shoe(true, false, false), []string{"< my shoe size is 9", "< STOP"}, want{}},
		{"OthersCountWithoutPersonal", shirt(false), []string{"< my son's shirt size is S"}, want{"shirt_size": `"S"`}},
		{"OthersDroppedWithPersonal", shirt(true), []string{"< my son's shirt size is S"}, want{}},
		{"PersonalKeepsOwn", shirt(true), []string{"< I'm an M, my son's a S"}, want{"shirt_size": `"M"`}},
		{"PersonalPronoun", shirt(true), []string{"> What shirt size?", "< she wears L"}, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(t, tt.fields, conv(tt.lines...)); !same(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// From names the message a value came from, so the history can cite it.
func TestFrom(t *testing.T) {
	fs := []extract.Field{{Key: "shoe_size", Name: "Shoe Size", Type: extract.Float, IncludeUserAnswers: true}}
	ms := conv("> What's your shoe size?", "< my shoe size is 9", "> Anything else?", "< nope")
	vs, err := rules.Extractor{}.Extract(context.Background(), extract.Request{Fields: fs, Conversation: ms, Now: now})
	if err != nil || len(vs) != 1 {
		t.Fatalf("got %v, %v", vs, err)
	}
	if got, want := vs[0].From, 1; got != want {
		t.Errorf("From = %d, want %d", got, want)
	}
}

// A LIST of integers gives numbers, a LIST of strings strings; a field whose enum
// does not hold the number found gives nothing.
func TestTypedEnums(t *testing.T) {
	fs := []extract.Field{
		{Key: "days", Name: "Days", Type: extract.List, Subtype: extract.Integer, Enum: []string{"1", "7", "30"}},
		{Key: "seats", Name: "Seats", Type: extract.Integer, Enum: []string{"2", "4"}},
	}
	if got, want := run(t, fs, conv("> Which days and how many seats?", "< days 30 and 7, seats 3")), (want{"days": `[7,30]`}); !same(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestTwoDigitYearNeedsNow(t *testing.T) {
	fs := []extract.Field{{Key: "birthday", Name: "Birthday", Type: extract.Date}}
	vs, err := rules.Extractor{}.Extract(context.Background(), extract.Request{Fields: fs, Conversation: conv("< my birthday is 03/03/90")})
	if err != nil || len(vs) != 0 {
		t.Errorf("got %v, %v; want nothing without Now", vs, err)
	}
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (rules.Extractor{}).Extract(ctx, extract.Request{Fields: fields(), Conversation: conv("< I'm 34")}); err == nil {
		t.Error("want the context's error")
	}
}

func BenchmarkExtract(b *testing.B) {
	r := extract.Request{Fields: fields(), Now: now, Conversation: conv(
		"> Thanks for shopping with us! Would you like to join our VIP club?",
		"< Yes please! my email is amy@example.com",
		"> Great! When is your birthday? We'd love to send you a gift.",
		"< March 3, 1990. I'm a size M, my son's a S",
		"> And how many kids do you have?",
		"< about 3 kids, and my budget is around $1,200 a month",
	)}
	for i := range r.Fields {
		r.Fields[i].IncludeUserAnswers = true
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (rules.Extractor{}).Extract(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}
