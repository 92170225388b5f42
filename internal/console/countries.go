package console

import "github.com/parleyhq/parley/internal/phone"

// country is an option of a default-country menu (D22).
type country struct {
	Code, Name string
}

// countries are the menus' choices: the countries whose numbers a brand's
// lists most often hold. The admin API takes any ISO 3166-1 alpha-2 code;
// a brand's own country is always offered (countryOptions).
var countries = []country{
	{"US", "United States"}, {"CA", "Canada"}, {"GB", "United Kingdom"}, {"IE", "Ireland"},
	{"AU", "Australia"}, {"NZ", "New Zealand"}, {"MX", "Mexico"}, {"BR", "Brazil"},
	{"AR", "Argentina"}, {"CO", "Colombia"}, {"CL", "Chile"}, {"DE", "Germany"},
	{"FR", "France"}, {"ES", "Spain"}, {"IT", "Italy"}, {"NL", "Netherlands"},
	{"BE", "Belgium"}, {"CH", "Switzerland"}, {"AT", "Austria"}, {"PT", "Portugal"},
	{"SE", "Sweden"}, {"NO", "Norway"}, {"DK", "Denmark"}, {"FI", "Finland"},
	{"PL", "Poland"}, {"IL", "Israel"}, {"AE", "United Arab Emirates"}, {"ZA", "South Africa"},
	{"IN", "India"}, {"SG", "Singapore"}, {"PH", "Philippines"}, {"JP", "Japan"},
	{"KR", "South Korea"},
}

// countryOptions are the menu's choices with current among them.
func countryOptions(current string) []country {
	for _, c := range countries {
		if c.Code == current {
			return countries
		}
	}
	if !phone.Region(current) {
		return countries
	}
	return append([]country{{current, current}}, countries...)
}
