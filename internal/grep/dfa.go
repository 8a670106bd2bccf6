package grep

import (
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// dfa is a lazily built deterministic automaton over the compiled program
// that answers one question fast: where does the earliest match in a
// buffer of lines end? (Outside multiline mode a match never spans a
// newline, so the line holding that end is the first matching line.) It
// steps on characters (ASCII through a table, others through a map),
// evaluates ^ $ \b \B from the previous and the next character, and gives
// up (ok false) on a non-ASCII character when \b is Unicode-aware, and
// when its cache keeps overflowing.
type dfa struct {
	prog      *syntax.Prog
	unicodeWB bool
	states    []*dstate
	index     map[string]int32
	wide      map[uint64]int32 // (state, non-ASCII rune) → transition
	resets    int
	// scratch
	stack []uint32
	seen  []uint32 // generation marks per pc
	gen   uint32
	key   []byte
}

const (
	dfaMaxStates = 4096
	dfaMaxResets = 8
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
	next  [128]int32 // transitions on ASCII: 0 unknown, else (state<<1 | matchedBefore) + 1
	end   int8       // 0 unknown, 1 no match at the end, 2 match at the end
}

func newDFA(prog *syntax.Prog, unicodeWB bool) *dfa {
	d := &dfa{prog: prog, unicodeWB: unicodeWB, seen: make([]uint32, len(prog.Inst))}
	d.reset()
	return d
}

func (d *dfa) reset() {
	d.states = d.states[:0]
	d.index = map[string]int32{}
	d.wide = map[uint64]int32{}
	d.startState()
}

// startState is state 0: the threads of the program's start, nothing read.
func (d *dfa) startState() int32 {
	d.gen++
	pcs := d.closure(nil, uint32(d.prog.Start))
	return d.intern(pcs, fBegin|fNL)
}

func (d *dfa) intern(pcs []uint32, flags uint8) int32 {
	slices.Sort(pcs)
	d.key = append(d.key[:0], flags)
	for _, pc := range pcs {
		d.key = append(d.key, byte(pc), byte(pc>>8), byte(pc>>16), byte(pc>>24))
	}
	if i, ok := d.index[string(d.key)]; ok {
		return i
	}
	i := int32(len(d.states))
	d.states = append(d.states, &dstate{pcs: slices.Clone(pcs), flags: flags})
	d.index[string(d.key)] = i
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
// match ends before r, and the next state.
func (d *dfa) step(si int32, r rune) (int32, bool) {
	st := d.states[si]
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
	var live []uint32
	work := append([]uint32(nil), st.pcs...)
	for len(work) > 0 {
		p := work[0]
		work = work[1:]
		inst := &d.prog.Inst[p]
		if inst.Op == syntax.InstEmptyWidth {
			if syntax.EmptyOp(inst.Arg)&^flags == 0 {
				work = d.closure(work, inst.Out)
			}
			continue
		}
		live = append(live, p)
	}
	matched := false
	d.gen++
	var next []uint32
	for _, p := range live {
		inst := &d.prog.Inst[p]
		if inst.Op == syntax.InstMatch {
			matched = true
			continue
		}
		if r >= 0 && matchInst(inst, r) {
			next = d.closure(next, inst.Out)
		}
	}
	if r < 0 {
		return 0, matched
	}
	next = d.closure(next, uint32(d.prog.Start)) // unanchored: a match may start anywhere
	var nf uint8
	if r == '\n' {
		nf |= fNL
	}
	if d.isWord(r) {
		nf |= fWord
	}
	return d.intern(next, nf), matched
}

// firstMatchEnd returns the end of the earliest match in buf[from:] (from
// is a line start), -1 if there is none, or ok false if the DFA cannot
// answer.
func (d *dfa) firstMatchEnd(buf []byte, from int) (int, bool) {
	if len(d.states) > dfaMaxStates {
		if d.resets++; d.resets > dfaMaxResets {
			return 0, false
		}
		d.reset()
	}
	s := int32(0)
	for i := from; i < len(buf); {
		c := buf[i]
		if c < utf8.RuneSelf {
			t := d.states[s].next[c]
			if t == 0 {
				ns, mb := d.step(s, rune(c))
				t = ns<<1 + 1
				if mb {
					t++
				}
				if len(d.states) > dfaMaxStates {
					// Keep going with a fresh cache from where we are.
					if d.resets++; d.resets > dfaMaxResets {
						return 0, false
					}
					pcs, fl := d.states[ns].pcs, d.states[ns].flags
					d.reset()
					s = d.intern(slices.Clone(pcs), fl)
					if mb {
						return i, true
					}
					i++
					continue
				}
				d.states[s].next[c] = t
			}
			if (t-1)&1 != 0 {
				return i, true
			}
			s = (t - 1) >> 1
			i++
			continue
		}
		r, w := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && w == 1 {
			r = rawByteRune(c)
		} else if d.unicodeWB {
			return 0, false
		}
		key := uint64(s)<<32 | uint64(r)
		t, ok := d.wide[key]
		if !ok {
			ns, mb := d.step(s, r)
			t = ns<<1 + 1
			if mb {
				t++
			}
			d.wide[key] = t
		}
		if (t-1)&1 != 0 {
			return i, true
		}
		s = (t - 1) >> 1
		i += w
	}
	st := d.states[s]
	if st.end == 0 {
		_, mb := d.step(s, -1)
		st.end = 1
		if mb {
			st.end = 2
		}
	}
	if st.end == 2 {
		return len(buf), true
	}
	return -1, true
}
