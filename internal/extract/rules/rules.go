// Package rules is Parley's default extractor (D20, issue #19): offline,
// deterministic, and fast (well over 10,000 messages a second on one core). It
// reads yes/no words, numbers, dates, e-mail addresses and enum values, and it
// writes a value for a field only when the contact is answering that field.
//
// When a reply answers a field. A reply is split into clauses (at . ! ? ; a
// new line, ", " before a word, and "but"). A value is taken for a field when
//
//  1. the reply names the field: a word of the field's name ("my shoe size is 9",
//     "size M", "I have 3 kids") is in the clause, and the value follows it in the
//     clause (or, if none follows, is the nearest one before it: "3 kids");
//  2. else, the latest brand message before the reply asks about the field and
//     about no other one: it holds more words of the field's name and extraction
//     prompt than of any other field's ("What's your shoe size?" asks Shoe Size, not
//     Shirt Size). A question about two fields at once answers neither;
//  3. else, the value is distinctive on its own: an e-mail address, for a STRING
//     field whose name or prompt says e-mail; an enum value (with a letter in it)
//     that belongs to this field only ("I'm gold").
//
// Values another field's name claimed in (1) are not taken again in (2) or (3). A
// reply that is exactly a D12 keyword (STOP, START, YES, HELP…) is never read: the
// server treats it as a command, so a bare "YES" is not an answer ("yes please" is).
//
// Values, by D6 type:
//   - BOOLEAN: the first yes word (yes, yeah, yep, sure, of course…) or no word
//     (no, nope, nah, not, never…) gives "true" or "false"; "not sure", "maybe",
//     "idk" give nothing. So "no thanks" to "Would you like to join our VIP club?"
//     stores "false".
//   - INTEGER, FLOAT: digits ("34", "1,200", "$12.50") or zero to twenty in
//     words. A range ("2 or 3", "2-3"), a time (3:30), a date or a phone number is not
//     a number; a fraction is not an INTEGER (34.5 gives nothing).
//   - DATE: "March 3, 1990", "Mar 3rd 1990", "3/3/1990", "03/03/90", "3-3-1990",
//     "1990-03-03", stored as "MM/DD/YYYY". A two-digit year is the year ending in
//     those digits in (Now-90, Now+10]. A date without a year ("March 3") or an
//     impossible one (02/30) gives nothing: D6 keeps whole dates and a guessed
//     year would mislead segments such as IN_LAST_DAYS.
//   - STRING: with available_enum_values, the one value named (two different
//     values, "M or L", give nothing); without, only an e-mail address for an
//     e-mail field. Free text is left to the openai extractor.
//   - LIST: with available_enum_values, every value named, as a JSON array in the
//     order of the enum list, items typed by subtype; without, nothing.
//
// Enum values match whole words, ASCII case ignored, and are written as the enum
// spells them; a value whose type fits but which is not in the enum is dropped.
//
// The D20 flags: IncludeUserAnswers reads the contact's earlier replies too, each
// with the brand message before it; when they disagree, EmphasizeCurrent takes the
// latest, and without it nothing is written. EmphasizePersonal ignores clauses about
// someone else: with he, she, his, her, him, or a relative ("son", "wife", "friend"…)
// after my/our/his/her/their or with 's ("my son's size is S").
//
// Cost: each message is read up to its first 1,600 characters, each field's enum
// up to its first parley.MaxEnumValues values, and enum values are found through an
// index of their words, so one extraction's cost does not grow with what a brand
// stored (issue #31).
//
// Request.Known is not used: the rules do not need context, and the caller
// compares with the stored value before writing.
package rules

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/extract"
)

// Extractor is the rules extractor. Its zero value is ready to use and safe for
// concurrent use.
type Extractor struct{}

var _ extract.InProcess = Extractor{}

// InProcess implements extract.InProcess: the rules run in microseconds,
// on the node's CPU.
func (Extractor) InProcess() {}

// Keywords of D12: a reply that is exactly one of them is a command, not an answer.
var keywords = []string{"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT",
	"START", "UNSTOP", "YES", "HELP", "INFO"}

func isKeyword(body string) bool {
	body = strings.TrimSpace(body)
	for _, k := range keywords {
		if strings.EqualFold(body, k) {
			return true
		}
	}
	return false
}

// Words that say nothing about which field is meant.
var stopWords = set("a", "an", "the", "of", "in", "on", "at", "to", "for", "and", "or", "is", "are",
	"was", "be", "do", "does", "did", "you", "your", "yours", "we", "our", "us", "i", "me", "my",
	"it", "its", "this", "that", "what", "which", "who", "whom", "whose", "when", "where", "why",
	"how", "many", "much", "whether", "if", "contact", "customer", "user", "person", "their",
	"they", "them", "has", "have", "had", "with", "as", "by", "from", "about", "value", "number",
	"wants", "want", "would", "like", "any", "some", "please", "field", "name", "kind", "type",
	"current", "will", "can", "should", "he", "she", "his", "her")

var (
	pronouns  = set("he", "she", "his", "her", "him", "hers")
	owners    = set("my", "our", "his", "her", "their")
	relatives = set("son", "daughter", "kid", "child", "children", "wife", "husband", "partner",
		"boyfriend", "girlfriend", "mom", "mother", "dad", "father", "brother", "sister", "friend",
		"baby", "grandson", "granddaughter", "grandma", "grandpa", "grandmother", "grandfather",
		"aunt", "uncle", "cousin", "niece", "nephew", "boss", "roommate", "spouse", "fiance",
		"fiancee", "parent", "sibling")
)

// field is a Field with what the rules need precomputed.
type field struct {
	extract.Field
	name     []string // keywords of the name: naming the field in a reply
	ask      []string // keywords of the name and prompt: asking about it
	email    bool
	enum     [][]string
	distinct map[string]bool // enum values no other field has
	// byPhrase indexes enum by its words joined by spaces, and longest is
	// the most words of a value: a text is matched with at most longest
	// lookups per word, however many values the field has.
	byPhrase map[string][]int
	longest  int
	// byFold is each enum value by its ASCII-lowercased form (the last
	// spelling of a value listed twice).
	byFold map[string]string
}

// Bounds on what one extraction reads (issue #31 item 7): the first
// maxText characters of each message (the longest body D8 sends), and the
// first parley.MaxEnumValues values of a field (a list stored before the
// bound held may be longer).
const maxText = 1600

// clip returns the first maxText characters of s.
func clip(s string) string {
	n := 0
	for i := range s {
		if n == maxText {
			return s[:i]
		}
		n++
	}
	return s
}

func keywordsOf(s string) []string {
	var kws []string
	for _, w := range tokens(s) {
		w = strings.TrimSuffix(w, "'s")
		if len(w) < 2 || stopWords[w] || yesWords[w] || noWords[w] || isDigit(w[0]) || hasKW(w, kws) {
			continue
		}
		kws = append(kws, w)
	}
	return kws
}

// kwMatch reports whether word w is keyword kw, plurals included.
func kwMatch(w, kw string) bool {
	return w == kw || len(w) == len(kw)+1 && w[len(kw)] == 's' && w[:len(kw)] == kw ||
		len(kw) == len(w)+1 && kw[len(w)] == 's' && kw[:len(w)] == w
}

func hasKW(w string, kws []string) bool {
	for _, kw := range kws {
		if kwMatch(w, kw) {
			return true
		}
	}
	return false
}

func prepare(in []extract.Field) []field {
	fs := make([]field, len(in))
	count := map[string]int{}
	for i, f := range in {
		if len(f.Enum) > parley.MaxEnumValues {
			f.Enum = f.Enum[:parley.MaxEnumValues]
		}
		x := field{Field: f, name: keywordsOf(f.Name), byPhrase: map[string][]int{}, byFold: map[string]string{}}
		x.ask = x.name
		for _, kw := range keywordsOf(f.Prompt) {
			if !hasKW(kw, x.ask) {
				x.ask = append(x.ask[:len(x.ask):len(x.ask)], kw)
			}
		}
		for _, kw := range x.ask {
			if kw == "email" || kw == "mail" {
				x.email = true
			}
		}
		seen := map[string]bool{}
		for k, v := range f.Enum {
			ws := tokens(v)
			x.enum = append(x.enum, ws)
			if len(ws) > 0 {
				key := strings.Join(ws, " ")
				x.byPhrase[key] = append(x.byPhrase[key], k)
				x.longest = max(x.longest, len(ws))
			}
			x.byFold[lowerASCII(v)] = v
			if l := lowerASCII(v); !seen[l] {
				seen[l] = true
				count[l]++
			}
		}
		fs[i] = x
	}
	for i := range fs {
		fs[i].distinct = map[string]bool{}
		for _, v := range fs[i].Enum {
			if count[lowerASCII(v)] == 1 && strings.IndexFunc(v, func(r rune) bool { return 'a' <= r|0x20 && r|0x20 <= 'z' }) >= 0 {
				fs[i].distinct[v] = true
			}
		}
	}
	return fs
}

// Extract implements extract.Extractor. Its only error is ctx's.
func (Extractor) Extract(ctx context.Context, r extract.Request) ([]extract.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conv := r.Conversation
	trigger := -1
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Inbound {
			trigger = i
			break
		}
	}
	if trigger < 0 || isKeyword(conv[trigger].Body) {
		return nil, nil
	}
	fs := prepare(r.Fields)
	earlier := false
	for _, f := range fs {
		earlier = earlier || f.IncludeUserAnswers
	}

	type found struct {
		val  string
		from int
	}
	got := make([][]found, len(fs))
	for i := 0; i <= trigger; i++ {
		if !conv[i].Inbound || i != trigger && !earlier || isKeyword(conv[i].Body) {
			continue
		}
		asked := -1
		for j := i - 1; j >= 0; j-- {
			if !conv[j].Inbound {
				asked = askedField(fs, analyse(clip(conv[j].Body)))
				break
			}
		}
		vals := statement(fs, analyse(clip(conv[i].Body)), asked, r.Now)
		for k, v := range vals {
			if v != "" && (i == trigger || fs[k].IncludeUserAnswers) {
				got[k] = append(got[k], found{v, i})
			}
		}
	}

	var out []extract.Value
	for k, fd := range got {
		if len(fd) == 0 {
			continue
		}
		last := fd[len(fd)-1]
		if !fs[k].EmphasizeCurrent {
			for _, x := range fd {
				if x.val != last.val {
					last.val = ""
				}
			}
		}
		if last.val != "" {
			out = append(out, extract.Value{Key: fs[k].Key, Value: json.RawMessage(last.val), From: last.from})
		}
	}
	return out, nil
}

// askedField returns the one field question q asks about, or -1.
func askedField(fs []field, q *doc) int {
	best, bestN, tie := -1, 0, false
	for k, f := range fs {
		n := 0
		for _, kw := range f.ask {
			for _, w := range q.words {
				if kwMatch(w.w, kw) {
					n++
					break
				}
			}
		}
		switch {
		case n > bestN:
			best, bestN, tie = k, n, false
		case n == bestN && n > 0:
			tie = true
		}
	}
	if tie {
		return -1
	}
	return best
}

// mention is a run of words naming a field; owner is -1 when it names two
// fields equally ("size" of Shoe Size and Shirt Size).
type mention struct {
	start, end, clause, owner int
}

func mentions(fs []field, d *doc) []mention {
	var ms []mention
	hits := make([]int, len(fs))
	for i := 0; i < len(d.words); {
		j := i
		clear(hits)
		for j < len(d.words) && d.clauses[j] == d.clauses[i] {
			any := false
			for k, f := range fs {
				if hasKW(d.words[j].w, f.name) {
					hits[k]++
					any = true
				}
			}
			if !any {
				break
			}
			j++
		}
		if j == i {
			i++
			continue
		}
		m := mention{start: d.words[i].start, end: d.words[j-1].end, clause: d.clauses[i], owner: -1}
		best := 0
		for k, n := range hits {
			switch {
			case n > best:
				best, m.owner = n, k
			case n == best && n > 0:
				m.owner = -1
			}
		}
		ms = append(ms, m)
		i = j
	}
	return ms
}

// aboutOthers reports whether clause c of d speaks of someone else than the
// contact; a relative that is a word of the field itself ("kids") does not count.
func aboutOthers(d *doc, c int, f *field) bool {
	for i, w := range d.words {
		if d.clauses[i] != c {
			continue
		}
		if pronouns[w.w] && !w.poss {
			return true
		}
		base := strings.TrimSuffix(w.w, "s")
		if (relatives[w.w] || relatives[base]) && !hasKW(w.w, f.ask) &&
			(w.poss || i > 0 && owners[d.words[i-1].w]) {
			return true
		}
	}
	return false
}

type span struct{ start, end, owner int }

// texts holds the candidates of one reply, each kind found once.
type texts struct {
	d                     *doc
	now                   time.Time
	bools, nums, dts, ems []cand
	done                  [4]bool
	enums                 map[*field][]cand // each enum field's values named, found once
}

func (t *texts) cands(f *field) []cand {
	switch {
	case f.Type == extract.Boolean:
		if !t.done[0] {
			t.bools, t.done[0] = booleans(t.d), true
		}
		return enumOnly(f, t.bools)
	case f.Type == extract.Integer || f.Type == extract.Float:
		if !t.done[1] {
			t.nums, t.done[1] = numbers(t.d), true
		}
		cs := make([]cand, len(t.nums))
		for i, c := range t.nums {
			c.val = number(c.val, f.Type == extract.Integer)
			cs[i] = c
		}
		return enumOnly(f, cs)
	case f.Type == extract.Date:
		if !t.done[2] {
			t.dts, t.done[2] = dates(t.d, t.now), true
		}
		return enumOnly(f, t.dts)
	case len(f.Enum) > 0 && (f.Type == extract.String || f.Type == extract.List):
		cs, ok := t.enums[f]
		if !ok {
			if t.enums == nil {
				t.enums = map[*field][]cand{}
			}
			cs = enumHits(t.d, f)
			t.enums[f] = cs
		}
		return cs
	case f.Type == extract.String && f.email:
		if !t.done[3] {
			t.ems, t.done[3] = emails(t.d), true
		}
		return t.ems
	}
	return nil
}

// enumOnly blanks the values of cs that the field's enum does not hold.
func enumOnly(f *field, cs []cand) []cand {
	if len(f.Enum) == 0 {
		return cs
	}
	out := make([]cand, len(cs))
	for i, c := range cs {
		c.val = ""
		if v, ok := f.byFold[lowerASCII(strings.Trim(cs[i].val, `"`))]; ok {
			c.val = jsonValue(f.Type, v)
		}
		out[i] = c
	}
	return out
}

// jsonValue encodes enum value v for D6 type typ.
func jsonValue(typ int, v string) string {
	switch typ {
	case extract.Integer, extract.Float:
		if n := number(v, typ == extract.Integer); n != "" {
			return n
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// pick chooses the answer among the candidates of cs inside [lo, hi) that ok
// allows: the first (or the last), for enum fields the one value named, for
// lists all. decided is false when there was no candidate at all.
func pick(f *field, cs []cand, lo, hi int, last bool, ok func(cand) bool) (val string, at span, decided bool) {
	enum := len(f.Enum) > 0 && (f.Type == extract.String || f.Type == extract.List)
	var named map[string]bool
	for i := range cs {
		c := cs[i]
		if last {
			c = cs[len(cs)-1-i]
		}
		if c.start < lo || c.end > hi || !ok(c) {
			continue
		}
		if !enum {
			return c.val, span{c.start, c.end, -1}, true
		}
		if named == nil {
			named = map[string]bool{}
			at = span{c.start, c.end, -1}
		}
		named[c.key] = true
		at.start, at.end = min(at.start, c.start), max(at.end, c.end)
	}
	if named == nil {
		return "", at, false
	}
	if f.Type == extract.String {
		if len(named) != 1 {
			return "", at, true
		}
		for v := range named {
			return jsonValue(extract.String, v), at, true
		}
	}
	items := make([]json.RawMessage, 0, len(named))
	for _, v := range f.Enum {
		if named[v] {
			items = append(items, json.RawMessage(jsonValue(f.Subtype, v)))
			delete(named, v) // an enum listing a value twice
		}
	}
	b, _ := json.Marshal(items)
	return string(b), at, true
}

// statement returns the value of each field in reply d ("" for none), given the
// field the brand's question asked about (or -1).
func statement(fs []field, d *doc, asked int, now time.Time) []string {
	vals := make([]string, len(fs))
	decided := make([]bool, len(fs))
	t := &texts{d: d, now: now}
	ms := mentions(fs, d)
	var taken []span
	others := map[[2]int]bool{}
	personal := func(f *field, k, c int) bool {
		if !f.EmphasizePersonal {
			return false
		}
		key := [2]int{k, c}
		v, seen := others[key]
		if !seen {
			v = aboutOthers(d, c, f)
			others[key] = v
		}
		return v
	}
	okFor := func(k int) func(cand) bool {
		return func(c cand) bool {
			for _, s := range taken {
				if s.owner != k && c.start < s.end && s.start < c.end {
					return false
				}
			}
			return !personal(&fs[k], k, d.clause(c.start))
		}
	}

	// 1. The reply names the field.
	for k := range fs {
		f := &fs[k]
		for i, m := range ms {
			if m.owner != k || personal(f, k, m.clause) {
				continue
			}
			cs := t.cands(f)
			lo, hi := d.clauseSpan(m.clause)
			after, before := hi, lo
			if i+1 < len(ms) && ms[i+1].clause == m.clause {
				after = ms[i+1].start
			}
			if i > 0 && ms[i-1].clause == m.clause {
				before = ms[i-1].end
			}
			v, at, ok := pick(f, cs, m.end, after, false, okFor(k))
			if !ok {
				v, at, ok = pick(f, cs, before, m.start, true, okFor(k))
			}
			if ok {
				vals[k], decided[k] = v, true
				at.owner = k
				taken = append(taken, at)
				break
			}
		}
	}
	// 2. The brand asked about the field.
	if asked >= 0 && !decided[asked] {
		vals[asked], _, decided[asked] = pick(&fs[asked], t.cands(&fs[asked]), 0, len(d.s), false, okFor(asked))
	}
	// 3. The value says which field it is.
	for k := range fs {
		f := &fs[k]
		if decided[k] {
			continue
		}
		switch {
		case f.Type == extract.String && len(f.Enum) == 0 && f.email:
			vals[k], _, _ = pick(f, t.cands(f), 0, len(d.s), false, okFor(k))
		case len(f.distinct) > 0 && (f.Type == extract.String || f.Type == extract.List):
			ok := okFor(k)
			vals[k], _, _ = pick(f, t.cands(f), 0, len(d.s), false, func(c cand) bool { return f.distinct[c.key] && ok(c) })
		}
	}
	return vals
}
