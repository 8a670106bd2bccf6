package grep

import (
	"bytes"
	"regexp/syntax"
	"unicode/utf8"
)

// accel skips, from the DFA's start state, the bytes on which that state
// leads back to itself with no match: for a pattern like [A-Z][a-z]+\d{3}
// most of a text is read in the start state, and finding the next
// upper-case letter is much cheaper than stepping through the table byte
// by byte (each step waits for the load of the one before). It turns
// itself off when the bytes it stops at turn out to be common.
type accel struct {
	on   bool
	stop [256]uint8 // 1: a byte that leaves the start state (or is not known to stay)
	// how well it does: bytes skipped over calls, counted per round
	skipped, calls int
}

const (
	accelMinLoops   = 64 // ASCII bytes that must loop on the start state
	accelRound      = 1024
	accelMinAverage = 8 // bytes skipped per call, on average over a round
)

// buildAccel computes the start state's ASCII transitions and turns the
// accelerator on if enough bytes loop.
func (d *dfa) buildAccel() {
	loops := 0
	for k := 0; k < d.stride-1; k++ {
		if d.full() {
			return
		}
		t := d.trans[k]
		if t == tUnknown {
			t = d.transition(0, rune(d.rep[k]))
			d.trans[k] = t
		}
	}
	if d.alike && !d.full() && d.other[0] == tUnknown {
		d.other[0] = d.transition(0, utf8.RuneError)
	}
	for c := 0; c < 256; c++ {
		// A non-ASCII byte can be skipped when every non-ASCII character
		// loops: the scan stops only on ASCII bytes, which are character
		// boundaries.
		if (c < utf8.RuneSelf && d.trans[d.classes[c]] == 0) || (c >= utf8.RuneSelf && d.alike && d.other[0] == 0) {
			loops++
		} else {
			d.acc.stop[c] = 1
		}
	}
	d.acc.on = loops >= accelMinLoops
}

// skip returns the first position at or after i of a byte in the stop
// set, or len(buf).
func (a *accel) skip(buf []byte, i int) int {
	start := i
	stop := &a.stop
	for i+8 <= len(buf) {
		b := buf[i : i+8 : i+8]
		if stop[b[0]]|stop[b[1]]|stop[b[2]]|stop[b[3]]|stop[b[4]]|stop[b[5]]|stop[b[6]]|stop[b[7]] != 0 {
			break
		}
		i += 8
	}
	for i < len(buf) && stop[buf[i]] == 0 {
		i++
	}
	a.skipped += i - start
	if a.calls++; a.calls == accelRound {
		if a.skipped < accelRound*accelMinAverage {
			a.on = false
		}
		a.skipped, a.calls = 0, 0
	}
	return i
}

// buildLineSkip makes state 1 the start's threads in the middle of a line
// and turns lineSkip on if that state leads back to itself on every
// character but a newline, with no match (every match starts at a line
// start).
func (d *dfa) buildLineSkip() {
	d.lineSkip = false
	if d.flagMask&fNL == 0 || d.flagMask&fBegin != 0 || len(d.states) != 1 || d.full() {
		return
	}
	d.next = append(d.next[:0], d.states[0].pcs...)
	if si := d.intern(d.next, 0); si != 1 {
		return
	}
	self := int32(d.stride)
	for k := 0; k < d.stride-1; k++ {
		if d.full() {
			return
		}
		c := d.rep[k]
		t := d.trans[d.stride+k]
		if t == tUnknown {
			t = d.transition(1, rune(c))
			d.trans[d.stride+k] = t
		}
		if c != '\n' && t != self {
			return
		}
	}
	if !d.alike {
		// Non-ASCII characters are told apart: the state must be nothing
		// but threads waiting for a line start (and the state must not
		// depend on the character being a word one).
		if d.flagMask&fWord != 0 {
			return
		}
		for _, pc := range d.states[1].pcs {
			inst := &d.prog.Inst[pc]
			if inst.Op != syntax.InstEmptyWidth || syntax.EmptyOp(inst.Arg)&(syntax.EmptyBeginLine|syntax.EmptyBeginText) == 0 {
				return
			}
		}
		d.lineSkip = true
		return
	}
	if d.other[1] == tUnknown {
		d.other[1] = d.transition(1, utf8.RuneError)
	}
	d.lineSkip = d.other[1] == self
}

// nextNewline returns the position of the next newline at or after i, or
// len(buf).
func nextNewline(buf []byte, i int) int {
	if j := bytes.IndexByte(buf[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(buf)
}
