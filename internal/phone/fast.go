package phone

import (
	"regexp"
	"regexp/syntax"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// Fast path.
//
// normalizeCompact (Parse + IsPossibleNumberWithReason + IsValidNumber +
// Format) costs ~25 µs and ~80 allocations. For the common input, "+"
// followed by the digits of a number that is already in E.164 form, the
// answer can be computed from the same metadata without building a
// PhoneNumber: fastAccept re-implements, for that input shape only, the
// steps the slow path runs, and answers true only when the slow path is
// certain to return compact itself with ok=true. Every other outcome ("not
// valid", "don't know") falls through to the slow path, so a fast-path gap
// costs time, never a different answer.
//
// What the slow path does with "+<digits>", and how fastAccept mirrors it
// (phonenumbers v1.8.1, phonenumberutil.go):
//
//   - Parse/extractCountryCode: the calling code is the first 1-, 2- or
//     3-digit prefix (not starting with 0) that is a supported calling code.
//     The rest is the national significant number (NSN).
//   - Parse/maybeStripNationalPrefixAndCarrierCode: the main region's
//     national_prefix_for_parsing may strip a prefix from the NSN. When its
//     regexp does not match, the NSN is kept; when it does match,
//     parseKeepsNSN replays the library's decision and any change falls back.
//   - Parse/setItalianLeadingZeros + GetNationalSignificantNumber: the NSN is
//     stored as an integer plus a leading-zero count, which reproduces the
//     digit string exactly (including all-zero NSNs), so Format(E164) is
//     "+" + calling code + NSN, i.e. compact itself.
//   - IsPossibleNumberWithReason == IS_POSSIBLE: testNumberLength on the main
//     region's general desc, a function of the NSN length only (precomputed).
//   - IsValidNumber: GetRegionCodeForNumber picks the region (the only one;
//     otherwise the first whose leading_digits prefix-match, or, for regions
//     without leading_digits, whose getNumberTypeHelper is not UNKNOWN), then
//     IsValidNumberForRegion requires getNumberTypeHelper != UNKNOWN for that
//     region: the NSN matches the general desc (possible lengths and
//     pattern) and at least one type desc (premium rate, toll free, shared
//     cost, VoIP, personal number, pager, UAN, voicemail, fixed line, and
//     mobile unless same_mobile_and_fixed_line_pattern), where a type's
//     possible lengths are checked only if it has any. Each region's
//     getNumberTypeHelper != UNKNOWN predicate is compiled into one digitDFA.
//
// Calling codes whose metadata has a shape this code does not model
// (missing metadata, empty general pattern or possible lengths, patterns
// using empty-width assertions, automata over dfaMaxStates) are never fast
// pathed. With the v1.8.1 metadata no calling code is excluded; see
// TestFastPathCoverage.

// Fast path input bounds, in digits after the "+". Shorter inputs are rare
// and left to the slow path; longer ones are rejected by Normalize.
const (
	fastMinDigits = 7
	fastMaxDigits = 15
)

// callingCodes reports, by value, the calling codes phonenumbers supports
// (the keys of its country-code-to-region map, which extractCountryCode
// consults).
var callingCodes = sync.OnceValue(func() *[1000]bool {
	var t [1000]bool
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		if cc > 0 && cc < len(t) {
			t[cc] = true
		}
	}
	return &t
})

// metadataIndex mirrors how phonenumbers indexes its metadata collection
// (newMetadataContainer): geographic metadata by region id, and
// non-geographic ("001") metadata by calling code, later entries winning.
type metadataIndex struct {
	byRegion    map[string]*phonenumbers.PhoneMetadata
	nonGeo      map[int]*phonenumbers.PhoneMetadata
	supportedRg map[string]bool
}

var loadMetadataIndex = sync.OnceValue(func() *metadataIndex {
	idx := &metadataIndex{
		byRegion:    make(map[string]*phonenumbers.PhoneMetadata),
		nonGeo:      make(map[int]*phonenumbers.PhoneMetadata),
		supportedRg: phonenumbers.GetSupportedRegions(),
	}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return idx // empty: every calling code falls back
	}
	for _, m := range coll.GetMetadata() {
		if m.GetId() == nonGeoRegion {
			idx.nonGeo[int(m.GetCountryCode())] = m
		} else {
			idx.byRegion[m.GetId()] = m
		}
	}
	return idx
})

const nonGeoRegion = "001" // phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY

// metadataFor mirrors getMetadataForRegionOrCallingCode.
func (idx *metadataIndex) metadataFor(cc int, region string) *phonenumbers.PhoneMetadata {
	if region == nonGeoRegion {
		return idx.nonGeo[cc]
	}
	if region == "" || !idx.supportedRg[region] {
		return nil
	}
	return idx.byRegion[region]
}

// ccInfo is the precomputed fast-path data for one calling code.
type ccInfo struct {
	// possible[n]: IsPossibleNumberWithReason is IS_POSSIBLE for an NSN of
	// n digits.
	possible [dfaMaxDepth + 1]bool

	// The main region's national prefix for parsing, compiled exactly as
	// maybeStripNationalPrefixAndCarrierCode does; nil when it has none.
	npfp          *regexp.Regexp
	npfpDFA       *digitDFA // same language, when expressible; else nil
	npfpTransform string
	mainGeneral   *regexp.Regexp // "^(?:general)$" of the main region
	mainLengths   []int32
	mainLocalOnly []int32

	// regions in GetRegionCodesForCountryCode order.
	regions []regionInfo
}

type regionInfo struct {
	// leading prefix-matches the region's leading_digits; nil when the
	// region has none (or is the only region, where it is not consulted).
	leading *digitDFA
	// known accepts an NSN iff getNumberTypeHelper(NSN) != UNKNOWN.
	known *digitDFA
	// sameCode: IsValidNumberForRegion's calling-code check passes.
	sameCode bool
}

var ccTable [1000]struct {
	once sync.Once
	info *ccInfo // nil: calling code not fast pathed
}

// lookupCC returns the fast-path data for calling code cc (which must be
// below 1000), building it on first use, or nil if cc is not fast pathed.
func lookupCC(cc int) *ccInfo {
	e := &ccTable[cc]
	e.once.Do(func() {
		// The fast path is an optimisation: if building its tables fails,
		// even by panicking, the calling code just stays on the slow path.
		defer func() { _ = recover() }()
		info, err := buildCCInfo(cc)
		if err == nil {
			e.info = info
		}
	})
	return e.info
}

func buildCCInfo(cc int) (*ccInfo, error) {
	idx := loadMetadataIndex()
	regionCodes := phonenumbers.GetRegionCodesForCountryCode(cc)
	if len(regionCodes) == 0 {
		return nil, errDFAUnsupported
	}
	main := idx.metadataFor(cc, regionCodes[0])
	if main == nil {
		return nil, errDFAUnsupported
	}
	general := main.GetGeneralDesc()
	// An empty general pattern selects a different possible-length rule in
	// IsPossibleNumberWithReason; empty possible lengths make
	// testNumberLength index out of range. Neither occurs; don't model them.
	if general == nil || general.GetNationalNumberPattern() == "" || len(general.GetPossibleLength()) == 0 {
		return nil, errDFAUnsupported
	}

	info := &ccInfo{
		mainLengths:   general.GetPossibleLength(),
		mainLocalOnly: general.GetPossibleLengthLocalOnly(),
	}
	for n := range info.possible {
		info.possible[n] = testNumberLength(n, info.mainLengths, info.mainLocalOnly) == lengthPossible
	}

	var err error
	if info.mainGeneral, err = regexp.Compile("^(?:" + general.GetNationalNumberPattern() + ")$"); err != nil {
		return nil, err
	}
	if p := main.GetNationalPrefixForParsing(); p != "" {
		if info.npfp, err = regexp.Compile("^(?:" + p + ")"); err != nil {
			return nil, err
		}
		info.npfpTransform = main.GetNationalPrefixTransformRule()
		if prog, err := compileProg(p); err == nil {
			// Patterns with anchors (e.g. JP's "…$|0") are not expressible;
			// those keep using the regexp.
			info.npfpDFA, _ = buildDFA(&dfaSpec{progs: []*syntax.Prog{prog}, prefix: true})
		}
	}

	for _, rc := range regionCodes {
		var md *phonenumbers.PhoneMetadata
		// With several regions, getRegionCodeForNumberFromRegionList uses
		// getMetadataForRegion, which has no metadata for "001".
		if len(regionCodes) == 1 || rc != nonGeoRegion {
			md = idx.metadataFor(cc, rc)
		}
		if md == nil {
			return nil, errDFAUnsupported
		}
		ri := regionInfo{
			sameCode: rc == nonGeoRegion || int(md.GetCountryCode()) == cc,
		}
		if ld := md.GetLeadingDigits(); ld != "" && len(regionCodes) > 1 {
			prog, err := compileProg(ld)
			if err != nil {
				return nil, err
			}
			if ri.leading, err = buildDFA(&dfaSpec{progs: []*syntax.Prog{prog}, prefix: true}); err != nil {
				return nil, err
			}
		}
		if ri.known, err = buildTypeDFA(md); err != nil {
			return nil, err
		}
		info.regions = append(info.regions, ri)
	}
	return info, nil
}

// buildTypeDFA compiles getNumberTypeHelper(nsn, md) != UNKNOWN.
func buildTypeDFA(md *phonenumbers.PhoneMetadata) (*digitDFA, error) {
	descs := []*phonenumbers.PhoneNumberDesc{
		md.GetGeneralDesc(), // program 0
		md.GetPremiumRate(),
		md.GetTollFree(),
		md.GetSharedCost(),
		md.GetVoip(),
		md.GetPersonalNumber(),
		md.GetPager(),
		md.GetUan(),
		md.GetVoicemail(),
		md.GetFixedLine(),
	}
	if !md.GetSameMobileAndFixedLinePattern() {
		descs = append(descs, md.GetMobile())
	}
	progs := make([]*syntax.Prog, len(descs))
	// lengthOK[i] has bit n set when isNumberPossibleForDesc's length check
	// passes for n digits: the desc lists n, or lists no lengths at all.
	lengthOK := make([]uint64, len(descs))
	for i, d := range descs {
		if d == nil {
			// isNumberPossibleForDesc would dereference nil.
			return nil, errDFAUnsupported
		}
		var err error
		if progs[i], err = compileProg(d.GetNationalNumberPattern()); err != nil {
			return nil, err
		}
		if len(d.GetPossibleLength()) == 0 {
			lengthOK[i] = ^uint64(0)
		}
		for _, l := range d.GetPossibleLength() {
			if l >= 0 && l < 64 {
				lengthOK[i] |= 1 << l
			}
		}
	}
	const generalBit = 1
	typeBits := uint64(1)<<len(descs) - 1 - generalBit
	return buildDFA(&dfaSpec{
		progs: progs,
		accept: func(depth int, matched uint64) bool {
			ok := uint64(0)
			for i := range descs {
				if matched&(1<<i) != 0 && lengthOK[i]&(1<<depth) != 0 {
					ok |= 1 << i
				}
			}
			return ok&generalBit != 0 && ok&typeBits != 0
		},
		live: func(running uint64) bool {
			return running&generalBit != 0 && running&typeBits != 0
		},
	})
}

// fastAccept reports whether the slow path (normalizeSlow) is certain to
// return (compact, true) for compact, which is "+" followed by ASCII digits.
// false means "not known": the caller must ask the slow path.
func fastAccept(compact string, m Mode) bool {
	digits := compact[1:]
	if len(digits) < fastMinDigits || len(digits) > fastMaxDigits || digits[0] == '0' {
		return false
	}
	cc, ccLen := 0, 0
	codes := callingCodes()
	for i := 1; i <= 3; i++ {
		v := 0
		for j := range i {
			v = v*10 + int(digits[j]-'0')
		}
		if codes[v] {
			cc, ccLen = v, i
			break
		}
	}
	if ccLen == 0 {
		return false
	}
	info := lookupCC(cc)
	if info == nil {
		return false
	}
	nsn := digits[ccLen:]
	// Automata decide inputs up to dfaMaxDepth digits; a longer one must not
	// read as "leading digits don't match". (Unreachable: 15 - 1 digits.)
	if len(nsn) > dfaMaxDepth {
		return false
	}
	if !info.possible[len(nsn)] || !info.parseKeepsNSN(nsn) {
		return false
	}
	return m == Possible || info.valid(nsn)
}

// valid mirrors IsValidNumber for a parsed number with this calling code and
// national significant number nsn.
func (c *ccInfo) valid(nsn string) bool {
	if len(c.regions) == 1 {
		r := &c.regions[0]
		return r.sameCode && r.known.match(nsn)
	}
	for i := range c.regions {
		r := &c.regions[i]
		if r.leading != nil {
			if r.leading.match(nsn) {
				return r.sameCode && r.known.match(nsn)
			}
		} else if r.known.match(nsn) {
			return r.sameCode
		}
	}
	return false // GetRegionCodeForNumber returned "": no metadata, invalid
}

// parseKeepsNSN reports whether Parse keeps nsn as the national significant
// number, i.e. strips no national prefix. It mirrors the part of parseHelper
// that calls maybeStripNationalPrefixAndCarrierCode with the main region's
// metadata.
func (c *ccInfo) parseKeepsNSN(nsn string) bool {
	if c.npfp == nil || len(nsn) == 0 {
		return true
	}
	if c.npfpDFA != nil {
		if !c.npfpDFA.match(nsn) {
			return true
		}
	} else if !c.npfp.MatchString(nsn) {
		return true
	}

	// The prefix matches (rare except for AR, whose prefix is optional).
	// Replay the library's decision step by step.
	viable := c.mainGeneral.MatchString(nsn)
	groups := c.npfp.FindStringSubmatchIndex(nsn)
	if groups == nil {
		return false // cannot happen: MatchString said yes
	}
	numGroups := len(groups)/2 - 1
	var stripped string
	if c.npfpTransform == "" || groups[numGroups*2] < 0 {
		if viable && !c.mainGeneral.MatchString(nsn[groups[1]:]) {
			return true
		}
		stripped = nsn[groups[1]:]
	} else {
		stripped = c.npfp.ReplaceAllString(nsn, c.npfpTransform)
		if viable && !c.mainGeneral.MatchString(stripped) {
			return true
		}
	}
	switch testNumberLength(len(stripped), c.mainLengths, c.mainLocalOnly) {
	case lengthTooShort, lengthPossibleLocalOnly, lengthInvalid:
		return true // parseHelper keeps the original
	}
	return stripped == nsn
}

type lengthResult int

const (
	lengthPossible lengthResult = iota
	lengthPossibleLocalOnly
	lengthTooShort
	lengthTooLong
	lengthInvalid
)

// testNumberLength mirrors phonenumbers' testNumberLength for numberType
// UNKNOWN (the general desc), given its possible and local-only lengths.
// possible must not be empty.
func testNumberLength(n int, possible, localOnly []int32) lengthResult {
	if possible[0] == -1 {
		return lengthInvalid
	}
	l := int32(n)
	for _, x := range localOnly {
		if x == l {
			return lengthPossibleLocalOnly
		}
	}
	switch {
	case possible[0] == l:
		return lengthPossible
	case possible[0] > l:
		return lengthTooShort
	case possible[len(possible)-1] < l:
		return lengthTooLong
	}
	for _, x := range possible[1:] {
		if x == l {
			return lengthPossible
		}
	}
	return lengthInvalid
}
