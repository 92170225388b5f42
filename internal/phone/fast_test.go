package phone_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nyaruka/phonenumbers"
	"github.com/parleyhq/parley/internal/phone"
)

var allTypes = []phonenumbers.PhoneNumberType{
	phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
	phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST, phonenumbers.VOIP,
	phonenumbers.PERSONAL_NUMBER, phonenumbers.PAGER, phonenumbers.UAN,
	phonenumbers.VOICEMAIL,
}

// exampleNumbers returns phonenumbers' example number for every region and
// type, and for every non-geographic calling code, in E.164 and
// international format.
func exampleNumbers() (e164, international []string) {
	regions := make([]string, 0, len(phonenumbers.GetSupportedRegions()))
	for r := range phonenumbers.GetSupportedRegions() {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	add := func(num *phonenumbers.PhoneNumber) {
		if num == nil {
			return
		}
		e164 = append(e164, phonenumbers.Format(num, phonenumbers.E164))
		international = append(international, phonenumbers.Format(num, phonenumbers.INTERNATIONAL))
	}
	for _, r := range regions {
		for _, typ := range allTypes {
			add(phonenumbers.GetExampleNumberForType(r, typ))
		}
	}
	var nonGeo []int
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		nonGeo = append(nonGeo, cc)
	}
	slices.Sort(nonGeo)
	for _, cc := range nonGeo {
		add(phonenumbers.GetExampleNumberForNonGeoEntity(cc))
	}
	return e164, international
}

func sortedCallingCodes() []int {
	var ccs []int
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		ccs = append(ccs, cc)
	}
	slices.Sort(ccs)
	return ccs
}

func randDigits(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(byte('0' + r.IntN(10)))
	}
	return b.String()
}

// typeButNotGeneral are numbers whose national number matches one of the
// region's type patterns but not its general pattern, so phonenumbers calls
// them invalid (getNumberTypeHelper checks the general desc first).
var typeButNotGeneral = []string{
	"+494930000", "+4949300000", "+4949700000", "+49 4930 000000",
	"+434351000", "+4343510000", "+43 4351 00000",
}

// differentialInputs builds the corpus for TestFastPathMatchesSlowPath:
// example numbers, their formatted forms, near misses of them (changed,
// missing and extra digits, national prefixes inserted after the calling
// code), and random digit strings after random (mostly supported) calling
// codes.
func differentialInputs(randomPerCode int) []string {
	r := rand.New(rand.NewPCG(42, 7))
	e164, intl := exampleNumbers()
	in := slices.Concat(e164, intl, typeButNotGeneral)
	ccs := sortedCallingCodes()
	prefixes := []string{"0", "00", "1", "8", "9", "90", "15", "011", "06"}
	for _, ex := range e164 {
		digits := ex[1:]
		// Split after the calling code, which is what Parse will find.
		ccLen := 1
		for ; ccLen <= 3; ccLen++ {
			if _, ok := phonenumbers.GetSupportedCallingCodes()[atoi(digits[:ccLen])]; ok {
				break
			}
		}
		cc, nsn := digits[:ccLen], digits[ccLen:]
		for _, p := range prefixes {
			in = append(in, "+"+cc+p+nsn, "+"+cc+" ("+p+") "+nsn)
		}
		for range 4 {
			i := r.IntN(len(nsn))
			in = append(in,
				"+"+cc+nsn[:i]+randDigits(r, 1)+nsn[i+1:],                  // changed digit
				"+"+cc+nsn[:i]+nsn[i+1:],                                   // missing digit
				"+"+cc+nsn[:i]+randDigits(r, 1)+nsn[i:],                    // extra digit
				"+"+cc+nsn[:len(nsn)-len(nsn)/3]+randDigits(r, len(nsn)/3), // random tail
			)
		}
	}
	for _, cc := range ccs {
		c := fmt.Sprint(cc)
		for range randomPerCode {
			n := 1 + r.IntN(15-len(c))
			nsn := randDigits(r, n)
			if r.IntN(4) == 0 {
				nsn = prefixes[r.IntN(len(prefixes))] + nsn
			}
			in = append(in, "+"+c+nsn)
		}
	}
	for range randomPerCode * 20 {
		in = append(in, "+"+randDigits(r, 1+r.IntN(15)))
	}
	return in
}

func atoi(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		v = v*10 + int(s[i]-'0')
	}
	return v
}

// compactOf strips the separators Normalize allows; ok is false if s is not
// "+" followed by digits and separators.
func compactOf(s string) (string, bool) {
	if !strings.HasPrefix(s, "+") {
		return "", false
	}
	var b strings.Builder
	b.WriteByte('+')
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case strings.IndexByte(" -.()", c) >= 0:
		default:
			return "", false
		}
	}
	return b.String(), b.Len() > 1 && b.Len() <= 16
}

// TestFastPathMatchesSlowPath is the differential test: on every input,
// Normalize (fast path + fallback) must equal the slow path, and whenever the
// fast path vouches for a compact number the slow path must accept it
// unchanged.
func TestFastPathMatchesSlowPath(t *testing.T) {
	perCode := 60
	if testing.Short() {
		perCode = 10
	}
	inputs := differentialInputs(perCode)
	examples, _ := exampleNumbers()
	isExample := make(map[string]bool)
	for _, e := range examples {
		isExample[e] = true
	}
	if raceEnabled {
		// Keep every 4th input, and every example number.
		var sample []string
		for i, s := range inputs {
			if i%4 == 0 || isExample[s] {
				sample = append(sample, s)
			}
		}
		inputs = sample
	}
	var fastHits, slowAccepts, exampleAccepts, exampleFast int
	for _, in := range inputs {
		for _, m := range []phone.Mode{phone.Strict, phone.Possible} {
			got, gotOK := phone.Normalize(in, m)
			want, wantOK := phone.NormalizeSlow(in, m)
			if got != want || gotOK != wantOK {
				t.Errorf("Normalize(%q, %v) = %q, %v; slow path %q, %v", in, m, got, gotOK, want, wantOK)
			}
			compact, ok := compactOf(in)
			if !ok || len(in) > phone.MaxInputLen {
				continue
			}
			fast := phone.FastAccept(compact, m)
			if fast {
				fastHits++
				if !wantOK || want != compact {
					t.Errorf("fast path accepted %q (%v) but slow path gives %q, %v", compact, m, want, wantOK)
				}
			}
			if wantOK {
				slowAccepts++
			}
			if isExample[in] && wantOK && want == compact && len(compact) > 7 {
				exampleAccepts++
				if fast {
					exampleFast++
				} else {
					t.Logf("example %s (%v) accepted by the slow path only", in, m)
				}
			}
		}
	}
	t.Logf("%d inputs × 2 modes: slow path accepted %d, fast path answered %d; examples %d/%d fast",
		len(inputs), slowAccepts, fastHits, exampleFast, exampleAccepts)
	// The fast path must actually be in use, or this test proves nothing.
	if exampleFast < exampleAccepts*95/100 {
		t.Errorf("fast path answered only %d of %d accepted example numbers", exampleFast, exampleAccepts)
	}
}

// TestFastPathCoverage pins the calling codes the fast path never handles.
func TestFastPathCoverage(t *testing.T) {
	supported, excluded := phone.FastPathCallingCodes()
	if supported < 200 {
		t.Fatalf("only %d supported calling codes", supported)
	}
	if len(excluded) != 0 {
		t.Errorf("calling codes excluded from the fast path: %v", excluded)
	}
	// The benchmark corpus (common countries) must be answered entirely by
	// the fast path.
	for _, s := range benchNumbers() {
		for _, m := range []phone.Mode{phone.Strict, phone.Possible} {
			if !phone.FastAccept(s, m) {
				t.Errorf("FastAccept(%q, %v) = false", s, m)
			}
		}
	}
}

func TestFastPathConcurrent(t *testing.T) {
	// First use of each calling code builds its tables; exercise that
	// concurrently (meaningful under -race).
	e164, _ := exampleNumbers()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range e164 {
				s := e164[(i+g*37)%len(e164)]
				if got, ok := phone.Normalize(s, phone.Strict); ok && got != s {
					t.Errorf("Normalize(%q) = %q", s, got)
				}
			}
		}()
	}
	wg.Wait()
}

func FuzzFastPathAgrees(f *testing.F) {
	e164, intl := exampleNumbers()
	for i, s := range e164 {
		// A spread of regions and types keeps the seed corpus quick.
		if i%5 == 0 {
			f.Add(s, false)
			f.Add(intl[i], true)
		}
	}
	for _, s := range typeButNotGeneral {
		f.Add(s, false)
	}
	for _, s := range []string{
		"+14155552671", "+1 (415) 555-2671", "+447911123456", "+44 (0)20 7946 0000",
		"+3906123456", "+390000000000", "+5491123456789", "+54 9 11 2345-6789",
		"+54 011 15 2345 6789", "+78121234567", "+79123456789", "+81 03 1234 5678",
		"+82 0 10 1234 5678", "+82000000 0000", "+261 20 22 123 45", "+378 0549 886377",
		"+49 0 30 123456", "+55 90 11 98765 4321", "+800 1234 5678", "+979123456789",
		"+1 555 555 0100", "+1 310 0000", "+999 1234 5678", "+0000000",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, possible bool) {
		m := phone.Strict
		if possible {
			m = phone.Possible
		}
		got, gotOK := phone.Normalize(s, m)
		want, wantOK := phone.NormalizeSlow(s, m)
		if got != want || gotOK != wantOK {
			t.Fatalf("Normalize(%q, %v) = %q, %v; slow path %q, %v", s, m, got, gotOK, want, wantOK)
		}
	})
}

// benchNumbers returns 10,000 distinct numbers that are valid (Strict) and
// already in E.164 form: fixed-line and mobile numbers for US, GB, DE, FR, IN
// and BR in equal shares, made by randomising the last six digits of
// phonenumbers' example numbers and keeping those the slow path accepts
// unchanged. Generated once, deterministically.
var benchNumbers = sync.OnceValue(func() []string {
	const want = 10000
	r := rand.New(rand.NewPCG(2026, 1))
	regions := []string{"US", "GB", "DE", "FR", "IN", "BR"}
	var bases []string
	for _, reg := range regions {
		for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE} {
			if num := phonenumbers.GetExampleNumberForType(reg, typ); num != nil {
				bases = append(bases, phonenumbers.Format(num, phonenumbers.E164))
			}
		}
	}
	seen := make(map[string]bool, want)
	out := make([]string, 0, want)
	for len(out) < want {
		base := bases[len(out)%len(bases)]
		// Keep the calling code and area/mobile prefix, randomise the rest.
		cand := base[:len(base)-6] + randDigits(r, 6)
		if seen[cand] {
			continue
		}
		if got, ok := phone.NormalizeSlow(cand, phone.Strict); !ok || got != cand {
			continue
		}
		seen[cand] = true
		out = append(out, cand)
	}
	return out
})

// formatted returns the numbers in phonenumbers' international format,
// e.g. "+44 7400 123456", keeping only those within MaxInputLen.
func formatted(nums []string) []string {
	var out []string
	for _, s := range nums {
		num, err := phonenumbers.Parse(s, "")
		if err != nil {
			continue
		}
		if f := phonenumbers.Format(num, phonenumbers.INTERNATIONAL); len(f) <= phone.MaxInputLen {
			out = append(out, f)
		}
	}
	return out
}

// BenchmarkNormalize measures Normalize (fast path with fallback) over
// 10,000 distinct valid numbers, so no per-number caching can help.
func BenchmarkNormalize(b *testing.B) {
	benchCorpus(b, phone.Normalize)
}

// BenchmarkNormalizeSlow runs the same corpus through the phonenumbers-only
// path Normalize used before the fast path, for comparison.
func BenchmarkNormalizeSlow(b *testing.B) {
	benchCorpus(b, phone.NormalizeSlow)
}

func benchCorpus(b *testing.B, normalize func(string, phone.Mode) (string, bool)) {
	nums := benchNumbers()
	cases := []struct {
		name string
		in   []string
		mode phone.Mode
	}{
		{"strict/compact", nums, phone.Strict},
		{"strict/formatted", formatted(nums), phone.Strict},
		{"possible/compact", nums, phone.Possible},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for _, s := range c.in { // warm the per-calling-code tables
				normalize(s, c.mode)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var ok bool
				sink, ok = normalize(c.in[i], c.mode)
				if !ok {
					b.Fatalf("rejected %q", c.in[i])
				}
				if i++; i == len(c.in) {
					i = 0
				}
			}
		})
	}
}
