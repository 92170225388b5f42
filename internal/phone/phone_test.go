package phone_test

import (
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/phone"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		strict   string // expected E.164 under Strict, "" = invalid
		possible string // expected E.164 under Possible, "" = invalid
	}{
		{"e164 US", "+14155552671", "+14155552671", "+14155552671"},
		{"parens spaces dashes", "+1 (415) 555-2671", "+14155552671", "+14155552671"},
		{"dots", "+1.415.555.2671", "+14155552671", "+14155552671"},
		{"no plus", "14155552671", "", ""},
		{"too short", "+1415555267", "", ""},
		{"UK mobile", "+447911123456", "+447911123456", "+447911123456"},
		{"UK mobile formatted", "+44 7911 123456", "+447911123456", "+447911123456"},
		{"UK trunk zero stripped", "+44 (0)20 7946 0000", "+442079460000", "+442079460000"},
		{"Italy keeps leading zero", "+39 06 123456", "+3906123456", "+3906123456"},
		{"global 800", "+800 1234 5678", "+80012345678", "+80012345678"},

		// Twilio magic test numbers: +1 500 is a real NANP non-geographic
		// area code, so libphonenumber considers these valid.
		{"twilio magic 0001", "+15005550001", "+15005550001", "+15005550001"},
		{"twilio magic 0002", "+15005550002", "+15005550002", "+15005550002"},
		// NANP fictional 555-01xx: valid with a real area code...
		{"fictional 555-0100", "+1 415 555 0100", "+14155550100", "+14155550100"},
		{"fictional 555-0199", "+1 202 555 0199", "+12025550199", "+12025550199"},
		// ...but area code 555 itself is unassigned: only Possible accepts it.
		{"area code 555", "+1 555 555 0100", "", "+15555550100"},
		{"area code 555 0101", "+1 555 010 1234", "", "+15550101234"},
		{"local only length", "+1 555 0100", "", ""},
		// Canada's 7-digit 310-xxxx numbers: IsValidNumber says yes, but they
		// are not reachable in E.164 form.
		{"CA 310 short number", "+1 310 0000", "", ""},

		{"extension words", "+1 415 555 2671 ext 5", "", ""},
		{"extension x", "+14155552671x5", "", ""},
		{"extension semicolon", "+14155552671;ext=5", "", ""},
		{"letters", "+1 415 555 CALL", "", ""},
		{"empty", "", "", ""},
		{"plus only", "+", "", ""},
		{"plus and separators", "+ ( ) - .", "", ""},
		{"double plus", "++14155552671", "", ""},
		{"plus in middle", "+1415+5552671", "", ""},
		{"leading space", " +14155552671", "", ""},
		{"tab separator", "+1\t4155552671", "", ""},
		{"slash separator", "+1/4155552671", "", ""},
		{"fullwidth digits", "+１４１５５５５２６７１", "", ""},
		{"arabic-indic digits", "+١٤١٥٥٥٥٢٦٧١", "", ""},
		{"fullwidth plus", "＋14155552671", "", ""},
		{"invalid country code", "+999 1234 5678", "", ""},
		{"20 runes ok", "+1 (415) 555 - 2671 ", "+14155552671", "+14155552671"},
		{"21 runes", "+1  (415)  555-2671  ", "", ""},
		{"21 runes digits", "+1415555267100000000", "", ""},
		{"too many digits", "+123456789012345678", "", ""},
		// Korea: the trunk prefix 0 is stripped once, but a number that would
		// lose another zero on re-normalisation is rejected (idempotency).
		{"KR trunk zero", "+82 0 10 1234 5678", "+821012345678", "+821012345678"},
		{"KR unstable zeros", "+82000000 0000", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []struct {
				mode phone.Mode
				want string
			}{{phone.Strict, tt.strict}, {phone.Possible, tt.possible}} {
				got, ok := phone.Normalize(tt.in, c.mode)
				if ok != (c.want != "") || got != c.want {
					t.Errorf("Normalize(%q, %v) = %q, %v; want %q, %v", tt.in, c.mode, got, ok, c.want, c.want != "")
				}
			}
		})
	}
}

func TestNormalizeRuneLimit(t *testing.T) {
	// Exactly 20 runes is accepted; 21 is not, regardless of content.
	in20 := "+14155552671" + strings.Repeat(" ", 8)
	if n := len([]rune(in20)); n != 20 {
		t.Fatalf("test setup: %d runes", n)
	}
	if got, ok := phone.Normalize(in20, phone.Strict); !ok || got != "+14155552671" {
		t.Errorf("20 runes: got %q, %v", got, ok)
	}
	if got, ok := phone.Normalize(in20+" ", phone.Strict); ok {
		t.Errorf("21 runes: got %q, want invalid", got)
	}
}

func TestNormalizeUnknownMode(t *testing.T) {
	if got, ok := phone.Normalize("+14155552671", phone.Mode(7)); ok {
		t.Errorf("unknown mode accepted: %q", got)
	}
}

func TestParseMode(t *testing.T) {
	tests := []struct {
		in      string
		want    phone.Mode
		wantErr bool
	}{
		{"strict", phone.Strict, false},
		{"possible", phone.Possible, false},
		{"", 0, true},
		{"Strict", 0, true},
		{"lenient", 0, true},
	}
	for _, tt := range tests {
		got, err := phone.ParseMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("ParseMode(%q).String() = %q", tt.in, got.String())
		}
	}
	if s := phone.Mode(9).String(); s != "Mode(9)" {
		t.Errorf("Mode(9).String() = %q", s)
	}
	if phone.Mode(0) != phone.Strict {
		t.Error("zero Mode is not Strict")
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"+14155552671", "+1 (415) 555-2671", "+1.415.555.2671", "14155552671",
		"+1415555267", "+15005550001", "+447911123456", "+44 (0)20 7946 0000",
		"+3906123456", "+1 415 555 2671 ext 5", "", "+", "++1", "+１４１５",
		"+1 555 555 0100", "+800 1234 5678", "+999999999999999999", "+0000000",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, possible bool) {
		m := phone.Strict
		if possible {
			m = phone.Possible
		}
		out, ok := phone.Normalize(s, m)
		if !ok {
			if out != "" {
				t.Fatalf("Normalize(%q) = %q with ok=false", s, out)
			}
			return
		}
		if len(out) < 2 || len(out) > 16 || out[0] != '+' {
			t.Fatalf("Normalize(%q) = %q: not E.164 shaped", s, out)
		}
		for i := 1; i < len(out); i++ {
			if out[i] < '0' || out[i] > '9' {
				t.Fatalf("Normalize(%q) = %q: non-digit at %d", s, out, i)
			}
		}
		again, ok := phone.Normalize(out, m)
		if !ok || again != out {
			t.Fatalf("not idempotent: Normalize(%q) = %q, Normalize(%q) = %q, %v", s, out, out, again, ok)
		}
		// A number valid in Strict mode must also be possible.
		if m == phone.Strict {
			if p, ok := phone.Normalize(s, phone.Possible); !ok || p != out {
				t.Fatalf("Strict accepted %q as %q but Possible gave %q, %v", s, out, p, ok)
			}
		}
	})
}

var sink string

// BenchmarkNormalizeSingleInput is the original benchmark: one input per
// case, repeated. See BenchmarkNormalize for distinct numbers.
func BenchmarkNormalizeSingleInput(b *testing.B) {
	benches := []struct{ name, in string }{
		{"compact", "+14155552671"},
		{"formatted", "+1 (415) 555-2671"},
		{"UK", "+447911123456"},
		{"reject_syntax", "+1 415 555 2671 ext 5"},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink, _ = phone.Normalize(bb.in, phone.Strict)
			}
		})
	}
}
