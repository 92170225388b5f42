package phone

import (
	"cmp"
	"errors"
	"regexp/syntax"
	"slices"
)

// This file turns libphonenumber's number patterns into deterministic
// automata over the ASCII digits. Go's regexp runs the big metadata
// alternations (India's type patterns together compile to ~1000
// instructions) through its NFA simulator at 1–4 µs per region; a DFA walk
// over a 10–14 digit national number costs a few nanoseconds per digit.
//
// Exactness: each pattern is parsed and compiled with exactly the calls
// regexp.Compile makes (syntax.Parse with syntax.Perl, Simplify, Compile),
// and the subset construction steps the resulting instructions the way
// regexp's NFA does. The automaton therefore accepts the same digit strings
// as the regexp. Anything the construction does not model (empty-width
// assertions such as ^, $ or \b inside a pattern) makes the build fail, and
// the caller then leaves that calling code to the slow path.

// dfaMaxDepth is the longest input an automaton decides. States at this depth
// have no transitions, which keeps automata finite for patterns such as \d*.
// It must be at least the longest national number the fast path feeds in
// (15 digits minus a 1-digit calling code).
const dfaMaxDepth = 15

// dfaMaxStates bounds the size of one automaton. No region needs more than a
// few thousand states; the bound only guards against pathological metadata.
const dfaMaxStates = 1 << 16

var (
	errDFAUnsupported = errors.New("phone: pattern uses an unsupported regexp feature")
	errDFATooLarge    = errors.New("phone: automaton too large")
)

// digitDFA is a deterministic automaton over '0'–'9'. State 0 is the start.
type digitDFA struct {
	next   [][10]int32 // next[state][digit]; -1 rejects
	accept []bool
	// prefix selects prefix matching (as regexp's MatchString does for
	// "^(?:p)"): accept[s] means some prefix read so far matches. Otherwise
	// accept[s] is evaluated once the whole input has been read.
	prefix bool
}

// match reports whether s is accepted. s must consist of ASCII digits and be
// at most dfaMaxDepth long; anything else is rejected.
func (d *digitDFA) match(s string) bool {
	if len(s) > dfaMaxDepth {
		return false
	}
	st := int32(0)
	if d.prefix && d.accept[0] {
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return false
		}
		st = d.next[st][c]
		if st < 0 {
			return false
		}
		if d.prefix && d.accept[st] {
			return true
		}
	}
	return !d.prefix && d.accept[st]
}

// compileProg compiles pattern exactly as regexp.Compile does.
func compileProg(pattern string) (*syntax.Prog, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return syntax.Compile(re.Simplify())
}

// dfaSpec describes an automaton that runs several programs side by side.
type dfaSpec struct {
	progs []*syntax.Prog
	// prefix: accept as soon as any program reaches a match.
	prefix bool
	// accept (full-match mode) decides acceptance after the whole input,
	// from its length and the set of programs that matched all of it.
	accept func(depth int, matched uint64) bool
	// live (full-match mode) reports whether acceptance is still reachable
	// when exactly the programs in running can consume more input. It may
	// be generous; returning false prunes the state.
	live func(running uint64) bool
}

type nfaThread struct {
	prog int
	pc   uint32
}

type dfaBuilder struct {
	spec    *dfaSpec
	seen    [][]uint32 // generation stamps per program and pc
	gen     uint32
	stack   []uint32
	ids     map[string]int32
	threads [][]nfaThread // per state
	depth   []int
	out     digitDFA
	key     []byte
}

// buildDFA runs the subset construction for spec.
func buildDFA(spec *dfaSpec) (*digitDFA, error) {
	if len(spec.progs) == 0 || len(spec.progs) > 64 {
		return nil, errDFAUnsupported
	}
	b := &dfaBuilder{spec: spec, ids: make(map[string]int32)}
	b.out.prefix = spec.prefix
	for _, p := range spec.progs {
		b.seen = append(b.seen, make([]uint32, len(p.Inst)))
	}

	b.gen++
	var start []nfaThread
	for i, p := range spec.progs {
		var err error
		if start, err = b.closure(start, i, uint32(p.Start)); err != nil {
			return nil, err
		}
	}
	if _, err := b.state(start, 0); err != nil {
		return nil, err
	}

	// States are appended as they are discovered; process them in order.
	for s := 0; s < len(b.threads); s++ {
		if b.out.accept[s] && spec.prefix {
			continue // terminal: the prefix has matched
		}
		if b.depth[s] >= dfaMaxDepth {
			continue
		}
		for d := range 10 {
			r := rune('0' + d)
			b.gen++
			var next []nfaThread
			for _, t := range b.threads[s] {
				inst := &spec.progs[t.prog].Inst[t.pc]
				var ok bool
				switch inst.Op {
				case syntax.InstRune:
					ok = inst.MatchRune(r)
				case syntax.InstRune1:
					ok = r == inst.Rune[0]
				case syntax.InstRuneAny:
					ok = true
				case syntax.InstRuneAnyNotNL:
					ok = r != '\n'
				}
				if ok {
					var err error
					if next, err = b.closure(next, t.prog, inst.Out); err != nil {
						return nil, err
					}
				}
			}
			id, err := b.state(next, b.depth[s]+1)
			if err != nil {
				return nil, err
			}
			b.out.next[s][d] = id
		}
	}
	return &b.out, nil
}

// closure appends to dst the consuming and matching instructions reachable
// from pc in program p without consuming input.
func (b *dfaBuilder) closure(dst []nfaThread, p int, pc uint32) ([]nfaThread, error) {
	prog := b.spec.progs[p]
	seen := b.seen[p]
	b.stack = append(b.stack[:0], pc)
	for len(b.stack) > 0 {
		pc := b.stack[len(b.stack)-1]
		b.stack = b.stack[:len(b.stack)-1]
		if seen[pc] == b.gen {
			continue
		}
		seen[pc] = b.gen
		inst := &prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			b.stack = append(b.stack, inst.Arg, inst.Out)
		case syntax.InstCapture, syntax.InstNop:
			b.stack = append(b.stack, inst.Out)
		case syntax.InstFail:
		case syntax.InstMatch, syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			dst = append(dst, nfaThread{p, pc})
		default: // InstEmptyWidth: ^, $, \b, \B
			return nil, errDFAUnsupported
		}
	}
	return dst, nil
}

// state returns the id of the state for threads at depth, creating it if
// needed, or -1 if it can never lead to acceptance.
func (b *dfaBuilder) state(threads []nfaThread, depth int) (int32, error) {
	var matched, running uint64
	for _, t := range threads {
		if b.spec.progs[t.prog].Inst[t.pc].Op == syntax.InstMatch {
			matched |= 1 << t.prog
		} else {
			running |= 1 << t.prog
		}
	}
	var accept bool
	if b.spec.prefix {
		accept = matched != 0
		if !accept && running == 0 {
			return -1, nil
		}
	} else {
		accept = b.spec.accept(depth, matched)
		if !accept && (depth >= dfaMaxDepth || !b.spec.live(running)) {
			return -1, nil
		}
	}

	slices.SortFunc(threads, func(x, y nfaThread) int {
		if c := cmp.Compare(x.prog, y.prog); c != 0 {
			return c
		}
		return cmp.Compare(x.pc, y.pc)
	})
	threads = slices.Compact(threads)
	k := append(b.key[:0], byte(depth))
	for _, t := range threads {
		k = append(k, byte(t.prog), byte(t.pc>>24), byte(t.pc>>16), byte(t.pc>>8), byte(t.pc))
	}
	b.key = k
	if id, ok := b.ids[string(k)]; ok {
		return id, nil
	}
	if len(b.threads) >= dfaMaxStates {
		return 0, errDFATooLarge
	}
	id := int32(len(b.threads))
	b.ids[string(k)] = id
	b.threads = append(b.threads, slices.Clone(threads))
	b.depth = append(b.depth, depth)
	b.out.accept = append(b.out.accept, accept)
	b.out.next = append(b.out.next, [10]int32{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1})
	return id, nil
}
