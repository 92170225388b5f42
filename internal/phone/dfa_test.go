package phone

import (
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// regexpCache compiles reference regexps the way phonenumbers builds them.
type regexpCache map[string]*regexp.Regexp

func (c regexpCache) get(t *testing.T, expr string) *regexp.Regexp {
	re, ok := c[expr]
	if !ok {
		var err error
		if re, err = regexp.Compile(expr); err != nil {
			t.Fatalf("compile %q: %v", expr, err)
		}
		c[expr] = re
	}
	return re
}

// refKnown is a direct transcription of phonenumbers' getNumberTypeHelper(nsn,
// md) != UNKNOWN, using isNumberMatchingDesc with regexps.
func refKnown(t *testing.T, c regexpCache, nsn string, md *phonenumbers.PhoneMetadata) bool {
	matching := func(d *phonenumbers.PhoneNumberDesc) bool {
		if lens := d.GetPossibleLength(); len(lens) > 0 {
			found := false
			for _, l := range lens {
				found = found || int(l) == len(nsn)
			}
			if !found {
				return false
			}
		}
		return c.get(t, "^(?:"+d.GetNationalNumberPattern()+")$").MatchString(nsn)
	}
	if !matching(md.GetGeneralDesc()) {
		return false
	}
	for _, d := range []*phonenumbers.PhoneNumberDesc{
		md.GetPremiumRate(), md.GetTollFree(), md.GetSharedCost(), md.GetVoip(),
		md.GetPersonalNumber(), md.GetPager(), md.GetUan(), md.GetVoicemail(),
		md.GetFixedLine(),
	} {
		if matching(d) {
			return true
		}
	}
	return !md.GetSameMobileAndFixedLinePattern() && matching(md.GetMobile())
}

// dfaInputs returns digit strings to compare an automaton with its regexp on:
// the given seeds, their prefixes, extensions and one-digit mutations, random
// walks through the automaton (which probe its accepting paths), and random
// strings.
func dfaInputs(r *rand.Rand, d *digitDFA, seeds []string, n int) []string {
	var out []string
	randDigits := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for _, s := range seeds {
		if len(s) > dfaMaxDepth {
			continue
		}
		out = append(out, s)
		for range 3 {
			if len(s) > 0 {
				i := r.IntN(len(s))
				out = append(out, s[:i]+string(rune('0'+r.IntN(10)))+s[i+1:], s[:i])
			}
			if len(s) < dfaMaxDepth {
				out = append(out, s+randDigits(1+r.IntN(dfaMaxDepth-len(s))))
			}
		}
	}
	for range n {
		// Random walk along live transitions.
		var b []byte
		st := int32(0)
		for len(b) < dfaMaxDepth {
			var live []int
			for c, nx := range d.next[st] {
				if nx >= 0 {
					live = append(live, c)
				}
			}
			if len(live) == 0 || (d.accept[st] && r.IntN(3) == 0) {
				break
			}
			c := live[r.IntN(len(live))]
			b = append(b, byte('0'+c))
			st = d.next[st][c]
		}
		out = append(out, string(b))
		out = append(out, randDigits(r.IntN(dfaMaxDepth+1)))
	}
	return out
}

// onlySecond returns digit strings accepted by the full-match automaton b
// but not by a, at most perLen of each length, found by a breadth-first
// search of their product.
func onlySecond(a, b *digitDFA, perLen int) []string {
	type node struct {
		a, b int32
		s    string
	}
	seen := map[[2]int32]bool{{0, 0}: true}
	queue := []node{{0, 0, ""}}
	var out []string
	var count [dfaMaxDepth + 1]int
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if n.b >= 0 && b.accept[n.b] && (n.a < 0 || !a.accept[n.a]) && count[len(n.s)] < perLen {
			count[len(n.s)]++
			out = append(out, n.s)
		}
		if n.b < 0 {
			continue
		}
		for c := range 10 {
			na, nb := int32(-1), b.next[n.b][c]
			if n.a >= 0 {
				na = a.next[n.a][c]
			}
			if k := [2]int32{na, nb}; nb >= 0 && !seen[k] {
				seen[k] = true
				queue = append(queue, node{na, nb, n.s + string(rune('0'+c))})
			}
		}
	}
	return out
}

func descExamples(md *phonenumbers.PhoneMetadata) []string {
	var ex []string
	for _, d := range []*phonenumbers.PhoneNumberDesc{
		md.GetGeneralDesc(), md.GetFixedLine(), md.GetMobile(), md.GetTollFree(),
		md.GetPremiumRate(), md.GetSharedCost(), md.GetPersonalNumber(), md.GetVoip(),
		md.GetPager(), md.GetUan(), md.GetVoicemail(),
	} {
		if e := d.GetExampleNumber(); e != "" {
			ex = append(ex, e)
		}
	}
	return ex
}

// TestDFAMatchesRegexp checks every automaton the fast path can build against
// the regexp phonenumbers would use for the same pattern, for every region's
// metadata: single patterns (full match), leading digits and national prefix
// for parsing (prefix match), and the combined getNumberTypeHelper predicate.
func TestDFAMatchesRegexp(t *testing.T) {
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		t.Fatal(err)
	}
	walks := 60
	if testing.Short() {
		walks = 10
	}
	r := rand.New(rand.NewPCG(1, 2))
	cache := regexpCache{}
	check := func(what string, d *digitDFA, re *regexp.Regexp, inputs []string) {
		t.Helper()
		for _, in := range inputs {
			if got, want := d.match(in), re.MatchString(in); got != want {
				t.Errorf("%s: automaton(%q) = %v, regexp %v", what, in, got, want)
			}
		}
	}
	for _, md := range coll.GetMetadata() {
		id := md.GetId()
		seeds := descExamples(md)
		// Inputs probing each single pattern are reused for the combined
		// type automaton: strings matching a type pattern but not the
		// general one (e.g. DE "4930000") must be rejected there.
		var regionInputs []string
		var general *digitDFA

		for _, desc := range []*phonenumbers.PhoneNumberDesc{
			md.GetGeneralDesc(), md.GetFixedLine(), md.GetMobile(), md.GetTollFree(),
			md.GetPremiumRate(), md.GetSharedCost(), md.GetPersonalNumber(), md.GetVoip(),
			md.GetPager(), md.GetUan(), md.GetVoicemail(),
		} {
			p := desc.GetNationalNumberPattern()
			prog, err := compileProg(p)
			if err != nil {
				t.Fatalf("%s: %q: %v", id, p, err)
			}
			d, err := buildDFA(&dfaSpec{
				progs:  []*syntax.Prog{prog},
				accept: func(_ int, matched uint64) bool { return matched != 0 },
				live:   func(running uint64) bool { return running != 0 },
			})
			if err != nil {
				t.Fatalf("%s: %q: %v", id, p, err)
			}
			inputs := dfaInputs(r, d, seeds, walks)
			if general == nil {
				general = d // the first desc
			} else {
				inputs = append(inputs, onlySecond(general, d, 3)...)
			}
			check(id+" pattern "+p, d, cache.get(t, "^(?:"+p+")$"), inputs)
			regionInputs = append(regionInputs, inputs...)
		}

		for _, p := range []string{md.GetLeadingDigits(), md.GetNationalPrefixForParsing()} {
			if p == "" {
				continue
			}
			prog, err := compileProg(p)
			if err != nil {
				t.Fatalf("%s: %q: %v", id, p, err)
			}
			d, err := buildDFA(&dfaSpec{progs: []*syntax.Prog{prog}, prefix: true})
			if err != nil {
				continue // anchored national prefixes stay regexps
			}
			var prefixed []string
			for _, s := range seeds {
				prefixed = append(prefixed, s, "0"+s, "8"+s, "1"+s, "90"+s)
			}
			check(id+" prefix "+p, d, cache.get(t, "^(?:"+p+")"), dfaInputs(r, d, prefixed, walks))
		}

		d, err := buildTypeDFA(md)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		for _, in := range slices.Concat(regionInputs, dfaInputs(r, d, seeds, 4*walks)) {
			if got, want := d.match(in), refKnown(t, cache, in, md); got != want {
				t.Errorf("%s: type automaton(%q) = %v, getNumberTypeHelper != UNKNOWN is %v", id, in, got, want)
			}
		}
	}
}

func TestTestNumberLength(t *testing.T) {
	possible := []int32{7, 9, 10}
	local := []int32{4, 5, 6, 8}
	want := map[int]lengthResult{
		3: lengthTooShort, 4: lengthPossibleLocalOnly, 6: lengthPossibleLocalOnly,
		7: lengthPossible, 8: lengthPossibleLocalOnly, 9: lengthPossible,
		10: lengthPossible, 11: lengthTooLong,
	}
	for n, w := range want {
		if got := testNumberLength(n, possible, local); got != w {
			t.Errorf("testNumberLength(%d) = %v, want %v", n, got, w)
		}
	}
	if got := testNumberLength(8, []int32{7, 9}, nil); got != lengthInvalid {
		t.Errorf("gap length: got %v", got)
	}
	if got := testNumberLength(8, []int32{-1}, nil); got != lengthInvalid {
		t.Errorf("-1 lengths: got %v", got)
	}
}
