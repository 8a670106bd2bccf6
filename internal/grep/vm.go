package grep

import (
	"regexp/syntax"
	"unicode/utf8"
)

// vm is a Pike VM over a compiled regexp/syntax program that reads bytes the
// way ripgrep's regex engine does where Go's regexp package cannot: an
// invalid UTF-8 byte is its own "character" (matched only by raw-byte
// classes, see rawByteRune), and \b / \B use Unicode word characters when
// the pattern was written in Unicode mode. It finds leftmost-first matches
// with the same priorities as Go's regexp, in time linear in the input.
type vm struct {
	prog      *syntax.Prog
	unicodeWB bool
	// reused queues
	q0, q1 queue
	stack  []int
}

type thread struct {
	pc    uint32
	start int
}

type queue struct {
	sparse []uint32
	dense  []thread
}

func newQueue(n int) queue { return queue{sparse: make([]uint32, n), dense: make([]thread, 0, n)} }

func (q *queue) contains(pc uint32) bool {
	j := q.sparse[pc]
	return int(j) < len(q.dense) && q.dense[j].pc == pc
}

func (q *queue) add(pc uint32, start int) {
	q.sparse[pc] = uint32(len(q.dense))
	q.dense = append(q.dense, thread{pc, start})
}

func newVM(prog *syntax.Prog, unicodeWB bool) *vm {
	n := len(prog.Inst)
	return &vm{prog: prog, unicodeWB: unicodeWB, q0: newQueue(n), q1: newQueue(n)}
}

// decodeAt returns the character at i (an escape rune for an invalid byte)
// and its width; -1, 0 at the end.
func decodeAt(b []byte, i int) (rune, int) {
	if i >= len(b) {
		return -1, 0
	}
	c := b[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	r, w := utf8.DecodeRune(b[i:])
	if r == utf8.RuneError && w == 1 {
		return rawByteRune(c), 1
	}
	return r, w
}

func decodeBefore(b []byte, i int) rune {
	if i <= 0 {
		return -1
	}
	c := b[i-1]
	if c < utf8.RuneSelf {
		return rune(c)
	}
	r, w := utf8.DecodeLastRune(b[:i])
	if r == utf8.RuneError && w == 1 {
		return rawByteRune(c)
	}
	return r
}

func (m *vm) isWord(r rune) bool {
	if r < 0 {
		return false
	}
	if m.unicodeWB {
		return isWordRune(r)
	}
	return r < 0x80 && isWordRune(r)
}

func (m *vm) emptyFlags(b []byte, i int, prev, next rune) syntax.EmptyOp {
	var f syntax.EmptyOp
	if i == 0 {
		f |= syntax.EmptyBeginText | syntax.EmptyBeginLine
	} else if b[i-1] == '\n' {
		f |= syntax.EmptyBeginLine
	}
	if i == len(b) {
		f |= syntax.EmptyEndText | syntax.EmptyEndLine
	} else if b[i] == '\n' {
		f |= syntax.EmptyEndLine
	}
	if m.isWord(prev) != m.isWord(next) {
		f |= syntax.EmptyWordBoundary
	} else {
		f |= syntax.EmptyNoWordBoundary
	}
	return f
}

// addThread follows the empty transitions from pc at position i in
// priority order.
func (m *vm) addThread(q *queue, pc uint32, start int, flags syntax.EmptyOp) {
	stack := append(m.stack[:0], int(pc))
	for len(stack) > 0 {
		p := uint32(stack[len(stack)-1])
		stack = stack[:len(stack)-1]
		for {
			if q.contains(p) {
				break
			}
			q.add(p, start)
			inst := &m.prog.Inst[p]
			switch inst.Op {
			case syntax.InstAlt, syntax.InstAltMatch:
				stack = append(stack, int(inst.Arg))
				p = inst.Out
				continue
			case syntax.InstCapture, syntax.InstNop:
				p = inst.Out
				continue
			case syntax.InstEmptyWidth:
				if syntax.EmptyOp(inst.Arg)&^flags == 0 {
					p = inst.Out
					continue
				}
			}
			break
		}
	}
	m.stack = stack
}

func matchInst(inst *syntax.Inst, r rune) bool {
	switch inst.Op {
	case syntax.InstRune, syntax.InstRune1:
		return inst.MatchRune(r)
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return false
}

// find returns the leftmost-first match starting at or after from; b is
// the whole text (context for anchors and word boundaries).
func (m *vm) find(b []byte, from int) (int, int, bool) {
	clist, nlist := &m.q0, &m.q1
	clist.dense, nlist.dense = clist.dense[:0], nlist.dense[:0]
	matched := false
	ms, me := -1, -1
	pos := from
	prev := decodeBefore(b, pos)
	r, w := decodeAt(b, pos)
	for {
		if !matched {
			m.addThread(clist, uint32(m.prog.Start), pos, m.emptyFlags(b, pos, prev, r))
		}
		if len(clist.dense) == 0 {
			break
		}
		npos := pos + w
		var nr rune
		var nw int
		if w > 0 {
			nr, nw = decodeAt(b, npos)
		}
		var nflags syntax.EmptyOp
		nflagsSet := false
		for i := 0; i < len(clist.dense); i++ {
			t := clist.dense[i]
			inst := &m.prog.Inst[t.pc]
			if inst.Op == syntax.InstMatch {
				matched = true
				ms, me = t.start, pos
				break // lower-priority threads cannot do better
			}
			if w > 0 && matchInst(inst, r) {
				if !nflagsSet {
					nflags = m.emptyFlags(b, npos, r, nr)
					nflagsSet = true
				}
				m.addThread(nlist, inst.Out, t.start, nflags)
			}
		}
		if w == 0 {
			break
		}
		clist, nlist = nlist, clist
		nlist.dense = nlist.dense[:0]
		prev, pos, r, w = r, npos, nr, nw
		if matched && len(clist.dense) == 0 {
			break
		}
	}
	return ms, me, matched
}
