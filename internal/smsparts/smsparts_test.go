package smsparts_test

import (
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/parleyhq/parley/internal/smsparts"
)

// basic is the GSM 03.38 default alphabet in code order (0x00–0x7F), with
// the escape position 0x1B left out: it is not a character. 0x09 is Ç, as in
// the Unicode consortium's mapping (GSM0338.TXT).
var basic = []rune{
	'@', '£', '$', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', '\n', 'Ø', 'ø', '\r', 'Å', 'å',
	'Δ', '_', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ' /* 0x1B ESC */, 'Æ', 'æ', 'ß', 'É',
	' ', '!', '"', '#', '¤', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/',
	'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=', '>', '?',
	'¡', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O',
	'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', 'Ä', 'Ö', 'Ñ', 'Ü', '§',
	'¿', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
	'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 'ä', 'ö', 'ñ', 'ü', 'à',
}

// extension is the GSM 03.38 extension table: each is sent as ESC + char.
var extension = []rune{'\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'}

func TestBasicTable(t *testing.T) {
	if got, want := len(basic), 127; got != want {
		t.Fatalf("basic table has %d characters, want %d", got, want)
	}
	for _, r := range basic {
		got := smsparts.Count(string(r), 0)
		if want := (smsparts.Parts{Encoding: smsparts.GSM7, Segments: 1, Units: 1}); got != want {
			t.Errorf("Count(%q) = %+v, want %+v", r, got, want)
		}
	}
	// All of them at once: 127 septets, one segment.
	got := smsparts.Count(string(basic), 0)
	if want := (smsparts.Parts{Encoding: smsparts.GSM7, Segments: 1, Units: 127}); got != want {
		t.Errorf("Count(all basic) = %+v, want %+v", got, want)
	}
}

func TestExtensionTable(t *testing.T) {
	for _, r := range extension {
		got := smsparts.Count(string(r), 0)
		if want := (smsparts.Parts{Encoding: smsparts.GSM7, Segments: 1, Units: 2}); got != want {
			t.Errorf("Count(%q) = %+v, want %+v", r, got, want)
		}
	}
}

// notGSM holds characters that are not in either table, several of them
// look-alikes of GSM characters.
var notGSM = []rune{
	'ç', // only the capital Ç is at 0x09
	'`', // grave accent: not in GSM 03.38
	'á', 'í', 'ó', 'ú', 'â', 'ê', 'ô', 'õ', 'ã', 'ë', 'ï',
	'À', 'È', 'Ì', 'Ò', 'Ù', 'Á', 'Ó', 'Ú', 'Ê', // accented capitals other than Ç, É, Ä, Ö, Ñ, Ü, Å, Æ, Ø
	'œ', 'Œ', 'ÿ',
	'α', 'β', 'π', // Greek small letters (only some capitals are GSM)
	'Α', 'Β', // Greek capital Alpha and Beta look like A and B but are not GSM
	'\u2126',                     // OHM SIGN, not GREEK CAPITAL LETTER OMEGA
	'\u00a0',                     // no-break space
	'\u2019', '\u201c', '\u201d', // curly quotes
	'\u2013', '\u2014', // en and em dash
	'\u2026', // ellipsis
	'\t',     // tab: not in the table
	'\x1b',   // ESC itself is not a character
	'\x00',
	'¢', '©', '®', '°', '€' + 1,
	'\uFFFD',
}

func TestNotGSM(t *testing.T) {
	for _, r := range notGSM {
		got := smsparts.Count("ok "+string(r), 0)
		if want := (smsparts.Parts{Encoding: smsparts.UCS2, Segments: 1, Units: 4}); got != want {
			t.Errorf("Count(%q) = %+v, want %+v", "ok "+string(r), got, want)
		}
	}
}

func TestCount(t *testing.T) {
	gsm := func(segs, units int) smsparts.Parts {
		return smsparts.Parts{Encoding: smsparts.GSM7, Segments: segs, Units: units}
	}
	ucs := func(segs, units int) smsparts.Parts {
		return smsparts.Parts{Encoding: smsparts.UCS2, Segments: segs, Units: units}
	}
	a := func(n int) string { return strings.Repeat("a", n) }
	const emoji = "😀" // U+1F600: a surrogate pair in UTF-16
	tests := []struct {
		name  string
		body  string
		media int
		want  smsparts.Parts
	}{
		{"Empty", "", 0, gsm(1, 0)},
		{"Hello", "Hello", 0, gsm(1, 5)},
		{"CRLF counts two", "a\r\nb", 0, gsm(1, 4)},
		{"GSM 160 fits one", a(160), 0, gsm(1, 160)},
		{"GSM 161 needs two", a(161), 0, gsm(2, 161)},
		{"GSM 306 fits two", a(306), 0, gsm(2, 306)},
		{"GSM 307 needs three", a(307), 0, gsm(3, 307)},
		{"GSM 459 fits three", a(459), 0, gsm(3, 459)},
		{"GSM 460 needs four", a(460), 0, gsm(4, 460)},
		{"Euro counts two", "€5", 0, gsm(1, 3)},
		{"Extension at 160", a(158) + "€", 0, gsm(1, 160)},
		{"Extension past 160", a(159) + "€", 0, gsm(2, 161)},
		// 152 septets then ESC+€: the pair would straddle the boundary, so
		// it moves to segment two, and the first segment holds 152.
		{"Extension not split at 153", a(152) + "€" + a(10), 0, gsm(2, 164)},
		// Segment one holds 152 septets and segment two 2 + 151 = 153.
		{"Moved extension costs a segment", a(152) + "€" + a(151), 0, gsm(2, 305)},
		{"Moved extension spills", a(152) + "€" + a(152), 0, gsm(3, 306)},
		{"Without the move it would fit", a(153) + "€" + a(151), 0, gsm(2, 306)},
		{"UCS-2 70 fits one", strings.Repeat("ç", 70), 0, ucs(1, 70)},
		{"UCS-2 71 needs two", strings.Repeat("ç", 71), 0, ucs(2, 71)},
		{"UCS-2 134 fits two", strings.Repeat("ç", 134), 0, ucs(2, 134)},
		{"UCS-2 135 needs three", strings.Repeat("ç", 135), 0, ucs(3, 135)},
		{"Mixed: one ç makes all UCS-2", "ç" + a(69), 0, ucs(1, 70)},
		{"Mixed 71", "ç" + a(70), 0, ucs(2, 71)},
		{"Extension in UCS-2 counts one", "ç€", 0, ucs(1, 2)},
		{"Emoji counts two units", emoji, 0, ucs(1, 2)},
		{"35 emoji fit one", strings.Repeat(emoji, 35), 0, ucs(1, 70)},
		{"36 emoji need two", strings.Repeat(emoji, 36), 0, ucs(2, 72)},
		// 66 units then a surrogate pair: the pair moves to segment two.
		{"Surrogate pair not split at 67", strings.Repeat("ç", 66) + emoji + strings.Repeat("ç", 66), 0, ucs(3, 134)},
		{"Without the move it would fit", strings.Repeat("ç", 67) + emoji + strings.Repeat("ç", 65), 0, ucs(2, 134)},
		{"BMP CJK counts one", "你好", 0, ucs(1, 2)},
		{"Media makes one", a(500), 1, gsm(1, 500)},
		{"Media with UCS-2 body", strings.Repeat("ç", 200), 2, ucs(1, 200)},
		{"Media only", "", 1, gsm(1, 0)},
		{"Invalid UTF-8 is one replacement unit", "a\xffb", 0, ucs(1, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := smsparts.Count(tt.body, tt.media); got != tt.want {
				t.Errorf("Count(len %d, %d) = %+v, want %+v", len(tt.body), tt.media, got, tt.want)
			}
			if tt.media == 0 {
				if got := reference(tt.body); got != tt.want {
					t.Errorf("reference = %+v, want %+v (the test's reference disagrees)", got, tt.want)
				}
			}
		})
	}
}

func TestEncodingNames(t *testing.T) {
	if smsparts.GSM7 != "GSM-7" || smsparts.UCS2 != "UCS-2" {
		t.Errorf("encoding names %q %q, want GSM-7 and UCS-2 (D16)", smsparts.GSM7, smsparts.UCS2)
	}
}

// reference is a deliberately simple implementation: it builds the list of
// per-character costs, then cuts it into segments one character at a time.
func reference(body string) smsparts.Parts {
	inBasic := map[rune]bool{}
	for _, r := range basic {
		inBasic[r] = true
	}
	inExt := map[rune]bool{}
	for _, r := range extension {
		inExt[r] = true
	}
	enc := smsparts.GSM7
	var costs []int
	for _, r := range body {
		switch {
		case inBasic[r]:
			costs = append(costs, 1)
		case inExt[r]:
			costs = append(costs, 2)
		default:
			enc = smsparts.UCS2
		}
	}
	single, multi := 160, 153
	if enc == smsparts.UCS2 {
		single, multi = 70, 67
		costs = costs[:0]
		for _, r := range body {
			costs = append(costs, len(utf16.Encode([]rune{r})))
		}
	}
	total := 0
	for _, c := range costs {
		total += c
	}
	if total <= single {
		return smsparts.Parts{Encoding: enc, Segments: 1, Units: total}
	}
	var segs [][]int
	var cur []int
	fill := 0
	for _, c := range costs {
		if fill+c > multi {
			segs = append(segs, cur)
			cur, fill = nil, 0
		}
		cur = append(cur, c)
		fill += c
	}
	segs = append(segs, cur)
	return smsparts.Parts{Encoding: enc, Segments: len(segs), Units: total}
}

func FuzzCount(f *testing.F) {
	f.Add("Hello", 0)
	f.Add(strings.Repeat("a", 152)+"€"+strings.Repeat("a", 152), 0)
	f.Add(strings.Repeat("ç", 66)+"😀", 0)
	f.Add("ç€{}[]", 1)
	f.Add("\xff\xfe", 0)
	f.Fuzz(func(t *testing.T, body string, media int) {
		got := smsparts.Count(body, media)
		want := reference(body)
		if media > 0 {
			want.Segments = 1
		}
		if got != want {
			t.Errorf("Count(%q, %d) = %+v, reference %+v", body, media, got, want)
		}
	})
}

var sink smsparts.Parts

func BenchmarkCount(b *testing.B) {
	bodies := map[string]string{
		"GSM7_short": "Hi Anna, your order #1234 has shipped! Track it: https://ex.co/t/abc",
		"GSM7_long":  strings.Repeat("Flash sale today only: 20% off everything {code: SAVE20}. ", 6),
		"UCS2_emoji": "Hi Anna 😀 your order has shipped! Track it: https://ex.co/t/abc ✨",
		"UCS2_long":  strings.Repeat("Soldes d'été : -20 % sur tout, ça vaut le coup ! 🎉 ", 6),
	}
	for name, body := range bodies {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				sink = smsparts.Count(body, 0)
			}
		})
	}
}
