package signing

import "time"

// parseIMFFixdate parses an IMF-fixdate (RFC 9110 §5.6.7), for example
// "Sun, 06 Nov 1994 08:49:37 GMT". It is strict: exact length and
// separators, case-sensitive day and month names, a real calendar date,
// a day name that matches the date, and seconds 00-59. It does not
// allocate.
func parseIMFFixdate(s string) (time.Time, bool) {
	// Positions:  0123456789012345678901234567 8
	//             Sun, 06 Nov 1994 08:49:37 GMT
	if len(s) != len("Sun, 06 Nov 1994 08:49:37 GMT") ||
		s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
		s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25:] != " GMT" {
		return time.Time{}, false
	}
	wday := indexName(s[0:3], "SunMonTueWedThuFriSat")
	month := indexName(s[8:11], "JanFebMarAprMayJunJulAugSepOctNovDec") + 1
	day, ok1 := digits(s[5:7])
	year, ok2 := digits(s[12:16])
	hour, ok3 := digits(s[17:19])
	minute, ok4 := digits(s[20:22])
	sec, ok5 := digits(s[23:25])
	if wday < 0 || month < 1 || !ok1 || !ok2 || !ok3 || !ok4 || !ok5 ||
		day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day || t.Weekday() != time.Weekday(wday) {
		return time.Time{}, false // e.g. 31 Feb, or the wrong day name
	}
	return t, true
}

// indexName returns i such that name == names[3*i:3*i+3], or -1.
func indexName(name, names string) int {
	for i := 0; i+3 <= len(names); i += 3 {
		if names[i:i+3] == name {
			return i / 3
		}
	}
	return -1
}

// digits parses s, which must be all ASCII digits, as a decimal number.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// ParseDate parses an x-date value (an IMF-fixdate), as the verifier does.
func ParseDate(s string) (time.Time, bool) { return parseIMFFixdate(s) }
