package bench

// US numbers that pass strict validation: these area codes with any
// exchange from 200 to 999 (the test checks a sample of every area code).
// None is one of the sim provider's magic numbers (+1 500 555 …), so sends
// to them are delivered.
var areaCodes = [...]string{
	"201", "202", "212", "213", "305", "312", "404", "415",
	"510", "617", "646", "702", "718", "773", "818", "917",
}

const (
	perAreaCode  = 800 * 10000 // exchanges 200–999, lines 0000–9999
	numberSpace  = uint64(len(areaCodes)) * perAreaCode
	numberMaxLen = len("+12015550100")
)

// numbers enumerates distinct valid phone numbers from a starting point.
// A run starts at a random point of the 128 million numbers, so runs
// against the same server (--url) rarely meet each other's users.
type numbers struct{ start uint64 }

// appendNumber appends number i of the run, in E.164, to dst; different i
// below numberSpace give different numbers.
func (n numbers) appendNumber(dst []byte, i uint64) []byte {
	k := (n.start + i) % numberSpace
	area, rest := k/perAreaCode, k%perAreaCode
	dst = append(dst, "+1"...)
	dst = append(dst, areaCodes[area]...)
	dst = appendDigits(dst, 200+rest/10000, 3)
	return appendDigits(dst, rest%10000, 4)
}

// appendDigits appends v as exactly width decimal digits.
func appendDigits(dst []byte, v uint64, width int) []byte {
	var b [20]byte
	for i := width - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, b[:width]...)
}
