package grep

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// dfa is a lazily built deterministic automaton over the compiled program
// that answers one question fast: where does the earliest match in a
// buffer of lines end? (Outside multiline mode a match never spans a
// newline, so the line holding that end is the first matching line.)
//
// It runs over the whole buffer, not line by line. ASCII bytes step through
// one flat table of transitions, a row per state and a column per byte
// class (bytes no instruction tells apart share a column), holding the
// next state's row offset, so the inner loop is one load per byte. Other
// characters step through a map. ^ $ \b \B are evaluated from the previous
// and the next character (a state remembers only what the program can ask
// of the previous one). When the program tells no non-ASCII characters
// apart, they share one transition per state. The start state, when most bytes lead back to it,
// is left by scanning for the few bytes that do not (see accel).
//
// Its memory is bounded (dfaCacheBytes): when full, the cache is cleared
// and the scan goes on from where it is; when that happens with too few
// bytes scanned per state built (a pattern whose automaton is exponential
// in size, like (a|b)*a(a|b){20} on random text), it gives up (ok false)
// for good and the caller matches with the other engines, as RE2 does.
// Word characters are Unicode's when the pattern's \b is, as in the VM.
type dfa struct {
	prog      *syntax.Prog
	unicodeWB bool
	flagMask  uint8 // the state flags the program can observe

	classes [256]uint8 // byte → column; every byte >= 0x80 has the last column, never filled
	// alike: every non-ASCII character (and raw byte) steps alike, through
	// other (one per state); else through wide.
	alike  bool
	rep    []byte // a byte of each ASCII column
	stride int    // columns

	trans  []int32 // stride entries per state: the next state's row offset, tUnknown or tMatch
	states []dstate
	index  map[string]int32
	other  []int32          // per state: the transition on any non-ASCII character, when alike
	wide   map[uint64]int32 // (state, non-ASCII rune) → a transition as in trans
	mem    int              // bytes held by the cache, roughly
	budget int              // the bound on mem (dfaCacheBytes; tests lower it)
	// scanned counts the bytes scanned since the cache was last cleared.
	scanned int
	clears  int // times the cache was cleared and the scan went on
	failed  bool

	acc accel
	// lineSkip: state 1 (row offset stride) is the middle of a line where
	// no match can start before the next one (a pattern anchored with ^):
	// the scan jumps to the next newline.
	lineSkip bool

	// scratch
	stack, work, live, next []uint32
	seen                    []uint32 // generation marks per pc
	gen                     uint32
	key                     []byte
}

const (
	// dfaCacheBytes bounds the states and transitions kept (per search
	// worker).
	dfaCacheBytes = 2 << 20
	// dfaMinBytesPerState: a cache cleared with fewer bytes scanned per
	// state built than this is not worth it; the DFA gives up.
	dfaMinBytesPerState = 10
)

// transitions: a row offset (>= 0), or
const (
	tUnknown = -1 // not computed yet
	tMatch   = -2 // a match ends before this character
)

// state flags: what the previous character was.
const (
	fBegin = 1 << iota // nothing before (start of a line, as a buffer of lines starts)
	fNL                // a newline before
	fWord              // a word character before
)

type dstate struct {
	pcs   []uint32 // unexpanded threads: Rune*, Match and EmptyWidth instructions
	flags uint8
	end   int8 // 0 unknown, 1 no match at the end, 2 match at the end
}

func newDFA(prog *syntax.Prog, unicodeWB bool) *dfa {
	d := &dfa{prog: prog, unicodeWB: unicodeWB, budget: dfaCacheBytes, seen: make([]uint32, len(prog.Inst))}
	d.byteClasses()
	d.reset()
	return d
}

// byteClasses gives the ASCII bytes that every instruction treats alike
// (and that are alike as newlines and word characters, where the program
// asks) one column of the table.
func (d *dfa) byteClasses() {
	var needText, needLine, needWord, nonASCII bool
	type mask [2]uint64
	masks := map[mask]bool{}
	set := func(m *mask, c int) { m[c>>6] |= 1 << (c & 63) }
	var nl mask
	set(&nl, '\n')
	masks[nl] = true
	identity := len(d.prog.Inst) > 1<<14 // too big to look at closely: a column per byte
	for i := range d.prog.Inst {
		inst := &d.prog.Inst[i]
		switch inst.Op {
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(inst.Arg)
			if op&syntax.EmptyBeginLine != 0 {
				needLine = true
			}
			if op&syntax.EmptyBeginText != 0 {
				needText = true
			}
			if op&(syntax.EmptyWordBoundary|syntax.EmptyNoWordBoundary) != 0 {
				needWord = true
			}
		case syntax.InstRune, syntax.InstRune1:
			if matchesNonASCII(inst) {
				nonASCII = true
			}
			if identity {
				continue
			}
			var m mask
			if inst.Op == syntax.InstRune && syntax.Flags(inst.Arg)&syntax.FoldCase != 0 {
				for c := 0; c < utf8.RuneSelf; c++ {
					if inst.MatchRune(rune(c)) {
						set(&m, c)
					}
				}
			} else {
				rs := inst.Rune
				if inst.Op == syntax.InstRune1 || len(rs) == 1 {
					rs = []rune{rs[0], rs[0]}
				}
				for j := 0; j+1 < len(rs); j += 2 {
					for c := rs[j]; c <= min(rs[j+1], utf8.RuneSelf-1); c++ {
						set(&m, int(c))
					}
				}
			}
			masks[m] = true
		}
	}
	if needLine || needText {
		d.flagMask |= fNL
	}
	if needText {
		d.flagMask |= fBegin
	}
	d.alike = !nonASCII && !(needWord && d.unicodeWB)
	if needWord {
		d.flagMask |= fWord
		var w mask
		for c := 0; c < utf8.RuneSelf; c++ {
			if isWordRune(rune(c)) {
				set(&w, c)
			}
		}
		masks[w] = true
	}
	var cls [128]int
	n := 1
	if identity {
		for c := range cls {
			cls[c] = c
		}
		n = 128
	} else {
		// Refine the partition by each mask.
		for m := range masks {
			ids := map[[2]int]int{}
			next := 0
			for c := range cls {
				in := 0
				if m[c>>6]&(1<<(c&63)) != 0 {
					in = 1
				}
				k := [2]int{cls[c], in}
				id, ok := ids[k]
				if !ok {
					id = next
					next++
					ids[k] = id
				}
				cls[c] = id
			}
			n = next
		}
	}
	d.rep = make([]byte, n)
	for c := utf8.RuneSelf - 1; c >= 0; c-- {
		d.classes[c] = uint8(cls[c])
		d.rep[cls[c]] = byte(c)
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		d.classes[c] = uint8(n)
	}
	d.stride = n + 1
}

// matchesNonASCII reports whether a Rune instruction matches a character
// outside ASCII (or a raw byte).
func matchesNonASCII(inst *syntax.Inst) bool {
	rs := inst.Rune
	fold := inst.Op == syntax.InstRune && syntax.Flags(inst.Arg)&syntax.FoldCase != 0
	for j := 0; j < len(rs); j += 2 {
		hi := rs[j]
		if j+1 < len(rs) {
			hi = rs[j+1]
		}
		if hi >= utf8.RuneSelf {
			return true
		}
		for c := rs[j]; fold && c <= hi; c++ {
			for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
				if f >= utf8.RuneSelf {
					return true // k and s fold with K (Kelvin) and ſ
				}
			}
		}
	}
	return false
}

func (d *dfa) reset() {
	d.trans = d.trans[:0]
	d.other = d.other[:0]
	clear(d.states) // drop the old threads
	d.states = d.states[:0]
	d.index = map[string]int32{}
	d.wide = map[uint64]int32{}
	d.mem = 0
	d.scanned = 0
	d.startState()
	d.buildLineSkip()
	d.acc = accel{}
	d.buildAccel()
}

// startState is state 0: the threads of the program's start, nothing read.
func (d *dfa) startState() int32 {
	d.gen++
	pcs := d.closure(d.next[:0], uint32(d.prog.Start))
	d.next = pcs
	return d.intern(pcs, fBegin|fNL)
}

// intern returns the index of the state (pcs is not kept).
func (d *dfa) intern(pcs []uint32, flags uint8) int32 {
	flags &= d.flagMask
	slices.Sort(pcs)
	d.key = append(d.key[:0], flags)
	for _, pc := range pcs {
		d.key = append(d.key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	if i, ok := d.index[string(d.key)]; ok {
		return i
	}
	i := int32(len(d.states))
	d.states = append(d.states, dstate{pcs: slices.Clone(pcs), flags: flags})
	d.index[string(d.key)] = i
	for range d.stride {
		d.trans = append(d.trans, tUnknown)
	}
	d.other = append(d.other, tUnknown)
	d.mem += 4*d.stride + 4 + 2*len(d.key) + 96
	return i
}

// closure adds pc and what it reaches through Alt, Nop and Capture
// (stopping at instructions that consume or test), marking d.gen.
func (d *dfa) closure(out []uint32, pc uint32) []uint32 {
	stack := append(d.stack[:0], pc)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.seen[p] == d.gen {
			continue
		}
		d.seen[p] = d.gen
		inst := &d.prog.Inst[p]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, inst.Arg, inst.Out)
		case syntax.InstNop, syntax.InstCapture:
			stack = append(stack, inst.Out)
		case syntax.InstFail:
		default:
			out = append(out, p)
		}
	}
	d.stack = stack
	return out
}

func (d *dfa) isWord(r rune) bool {
	if r < 0 {
		return false
	}
	if d.unicodeWB {
		return isWordRune(r)
	}
	return r < 0x80 && isWordRune(r)
}

// step computes the transition of state si on r (-1: the end): whether a
// match ends before r, and the next state (none at the end).
func (d *dfa) step(si int32, r rune) (int32, bool) {
	st := &d.states[si]
	var flags syntax.EmptyOp
	if st.flags&fBegin != 0 {
		flags |= syntax.EmptyBeginText
	}
	if st.flags&(fBegin|fNL) != 0 {
		flags |= syntax.EmptyBeginLine
	}
	if r < 0 {
		flags |= syntax.EmptyEndText | syntax.EmptyEndLine
	} else if r == '\n' {
		flags |= syntax.EmptyEndLine
	}
	if (st.flags&fWord != 0) != d.isWord(r) {
		flags |= syntax.EmptyWordBoundary
	} else {
		flags |= syntax.EmptyNoWordBoundary
	}
	// Expand the empty-width tests that hold before r.
	d.gen++
	live := d.live[:0]
	work := append(d.work[:0], st.pcs...)
	for k := 0; k < len(work); k++ {
		p := work[k]
		inst := &d.prog.Inst[p]
		if inst.Op == syntax.InstEmptyWidth {
			if syntax.EmptyOp(inst.Arg)&^flags == 0 {
				work = d.closure(work, inst.Out)
			}
			continue
		}
		live = append(live, p)
	}
	d.work, d.live = work, live
	matched := false
	for _, p := range live {
		if d.prog.Inst[p].Op == syntax.InstMatch {
			matched = true
			break
		}
	}
	if r < 0 || matched {
		return 0, matched
	}
	d.gen++
	next := d.next[:0]
	for _, p := range live {
		inst := &d.prog.Inst[p]
		if matchInst(inst, r) {
			next = d.closure(next, inst.Out)
		}
	}
	next = d.closure(next, uint32(d.prog.Start)) // unanchored: a match may start anywhere
	d.next = next
	var nf uint8
	if r == '\n' {
		nf |= fNL
	}
	if d.isWord(r) {
		nf |= fWord
	}
	return d.intern(next, nf), false
}

// transition returns the entry of state si on r, for the table.
func (d *dfa) transition(si int32, r rune) int32 {
	ns, matched := d.step(si, r)
	if matched {
		return tMatch
	}
	return ns * int32(d.stride)
}

// full reports whether the cache is over its budget.
func (d *dfa) full() bool { return d.mem > d.budget }

// clear empties the cache but for state si, which it returns renumbered;
// false when not worth it (the DFA has given up).
func (d *dfa) clear(si int32) (int32, bool) {
	if d.scanned < dfaMinBytesPerState*len(d.states) {
		d.failed = true
		return 0, false
	}
	st := d.states[si]
	d.reset()
	d.next = append(d.next[:0], st.pcs...)
	ns := d.intern(d.next, st.flags)
	if d.full() {
		d.failed = true
		return 0, false
	}
	d.clears++
	return ns, true
}

// firstMatchEnd returns the end of the earliest match in buf[from:] (from
// is a line start), -1 if there is none, or ok false if the DFA cannot
// answer.
func (d *dfa) firstMatchEnd(buf []byte, from int) (int, bool) {
	if d.failed {
		return 0, false
	}
	s := 0 // row offset of the current state
	i := from
	seg := from // where the bytes not yet added to d.scanned start
	for {
		// The hot loop: ASCII bytes with known transitions. With the
		// accelerator on, it also stops on a return to the start state.
		lo := int32(0)
		if d.acc.on {
			lo = 1
			if s == 0 {
				i = d.acc.skip(buf, i)
			}
		}
		if d.lineSkip {
			lo = int32(d.stride) + 1
			if s == d.stride {
				i = nextNewline(buf, i)
			}
		}
		i, s = scan(d.trans, &d.classes, buf, i, s, lo)
		if i >= len(buf) {
			break
		}
		si := int32(s / d.stride)
		c := buf[i]
		if c < utf8.RuneSelf || d.alike {
			tab, col := d.trans, s+int(d.classes[c])
			w := 1
			r := rune(c)
			if c >= utf8.RuneSelf {
				_, w = utf8.DecodeRune(buf[i:])
				r = utf8.RuneError // stands for them all
				tab, col = d.other, int(si)
			}
			t := tab[col]
			if t == tUnknown {
				t = d.transition(si, r)
				if t != tMatch && d.full() {
					d.scanned, seg = d.scanned+i-seg, i
					ns, ok := d.clear(t / int32(d.stride))
					if !ok {
						return 0, false
					}
					s = int(ns) * d.stride
					i += w
					continue
				}
				tab[col] = t
			}
			if t == tMatch {
				d.scanned += i - seg
				return i, true
			}
			s = int(t)
			i += w
			continue
		}
		r, w := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && w == 1 {
			r = rawByteRune(c)
		}
		key := uint64(si)<<32 | uint64(r)
		t, known := d.wide[key]
		if !known {
			t = d.transition(si, r)
			if t != tMatch && d.full() {
				d.scanned, seg = d.scanned+i-seg, i
				ns, ok := d.clear(t / int32(d.stride))
				if !ok {
					return 0, false
				}
				s = int(ns) * d.stride
				i += w
				continue
			}
			d.wide[key] = t
			d.mem += 48
		}
		if t == tMatch {
			d.scanned += i - seg
			return i, true
		}
		s = int(t)
		i += w
	}
	d.scanned += len(buf) - seg
	si := int32(s / d.stride)
	if d.states[si].end == 0 {
		_, mb := d.step(si, -1)
		d.states[si].end = 1
		if mb {
			d.states[si].end = 2
		}
	}
	if d.states[si].end == 2 {
		return len(buf), true
	}
	return -1, true
}

// scan steps from state (row offset) s at buf[i] while the bytes are
// ASCII with a known transition to a state at or past row offset lo (the
// ones before are those the caller skips from), and returns where it
// stopped.
func scan(tab []int32, cls *[256]uint8, buf []byte, i, s int, lo int32) (int, int) {
	for i < len(buf) {
		t := tab[s+int(cls[buf[i]])]
		if t < lo {
			if t >= 0 {
				return i + 1, int(t)
			}
			return i, s
		}
		s = int(t)
		i++
	}
	return i, s
}
