package grep

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// rgSizeLimit is ripgrep's limit on a compiled regex.
const rgSizeLimit = 100 << 20

// maxVMInsts bounds the program of our own matcher (a pattern ripgrep
// accepts but that would need more is refused).
const maxVMInsts = 1 << 20

const newlineHint = "\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched."

// matcher is a compiled pattern.
type matcher struct {
	// multiline: the pattern can match a newline (-U): matches are found in
	// the whole file, with spans.
	multiline bool

	re     *regexp.Regexp // exact on valid UTF-8 lines (ASCII lines when unicodeWB); nil if Go cannot express it
	filter *regexp.Regexp // a superset of re for scanning buffers (re itself unless unicodeWB)
	vm     *vm
	dfa    *dfa // finds the first matching line of a buffer (line mode)
	pre    prefilter

	exactLiteral bool // a candidate from pre is a match
	unicodeWB    bool // Unicode \b or \B: lines with non-ASCII bytes go to the VM
	rawBytes     bool // raw-byte classes: every line goes to the VM
}

// compilePattern compiles an rg pattern with the tool's flags.
func compilePattern(pat string, caseInsensitive, multiline bool) (*matcher, error) {
	ast, err := parsePattern(pat)
	if err != nil {
		return nil, err
	}
	t := &translator{pat: pat, flags: rxFlags{i: caseInsensitive, m: true, s: multiline, u: true}}
	tree := t.translate(ast)
	if t.err != nil {
		return nil, t.err
	}
	if !multiline {
		if tree, err = stripNewline(tree); err != nil {
			return nil, err
		}
	}
	if est := estimateSize(tree); est > rgSizeLimit {
		return nil, &PatternError{Pattern: pat, msg: "Compiled regex exceeds size limit of 104857600 bytes."}
	}
	m := &matcher{unicodeWB: t.unicodeWordBoundary, rawBytes: t.rawBytes}
	m.multiline = multiline && canMatchNewline(tree)
	if !m.multiline {
		tree = lineAnchors(tree)
	}
	if n := estimateGoInsts(tree); n > maxVMInsts {
		return nil, &PatternError{Pattern: pat, msg: "Compiled regex exceeds size limit of 104857600 bytes."}
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, &PatternError{Pattern: pat, msg: err.Error()}
	}
	m.vm = newVM(prog, m.unicodeWB)
	if !m.multiline {
		m.dfa = newDFA(prog, m.unicodeWB)
	}
	if !m.multiline && !m.rawBytes {
		if re, err := regexp.Compile(splitRepeats(tree).String()); err == nil {
			m.re = re
			m.filter = re
			if m.unicodeWB {
				m.filter, _ = regexp.Compile(splitRepeats(dropWordBoundaries(tree)).String())
			}
		}
		m.pre, m.exactLiteral = buildPrefilter(tree)
		if m.unicodeWB || m.re == nil {
			m.exactLiteral = false
		}
	}
	return m, nil
}

// clone returns a matcher for another goroutine (the VM holds state).
func (m *matcher) clone() *matcher {
	c := *m
	c.vm = newVM(m.vm.prog, m.vm.unicodeWB)
	if m.dfa != nil {
		c.dfa = newDFA(m.dfa.prog, m.dfa.unicodeWB)
	}
	return &c
}

func walkTree(re *syntax.Regexp, f func(*syntax.Regexp)) {
	f(re)
	for _, s := range re.Sub {
		walkTree(s, f)
	}
}

func mapTree(re *syntax.Regexp, f func(*syntax.Regexp) *syntax.Regexp) *syntax.Regexp {
	c := *re
	if len(re.Sub) > 0 {
		c.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			c.Sub[i] = mapTree(s, f)
		}
	}
	return f(&c)
}

// stripNewline removes '\n' from every class and refuses a literal one,
// as ripgrep does outside multiline mode.
func stripNewline(re *syntax.Regexp) (*syntax.Regexp, error) {
	var bad error
	out := mapTree(re, func(r *syntax.Regexp) *syntax.Regexp {
		switch r.Op {
		case syntax.OpLiteral:
			for _, c := range r.Rune {
				if c == '\n' && bad == nil {
					bad = &PatternError{msg: "the literal '" + debugRune('\n') + "' is not allowed in a regex", hint: newlineHint}
				}
			}
		case syntax.OpCharClass:
			s := runeSet(r.Rune)
			if s.contains('\n') {
				s = s.remove('\n')
				if len(s) == 0 && bad == nil {
					bad = &PatternError{msg: "the literal '" + debugRune('\n') + "' is not allowed in a regex", hint: newlineHint}
				}
				r.Rune = s
			}
		}
		return r
	})
	return out, bad
}

func canMatchNewline(re *syntax.Regexp) bool {
	found := false
	walkTree(re, func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			for _, c := range r.Rune {
				if c == '\n' {
					found = true
				}
			}
		case syntax.OpCharClass:
			if runeSet(r.Rune).contains('\n') {
				found = true
			}
		}
	})
	return found
}

// lineAnchors: each line is matched on its own outside multiline mode, so
// text anchors are line anchors when a buffer of lines is scanned.
func lineAnchors(re *syntax.Regexp) *syntax.Regexp {
	return mapTree(re, func(r *syntax.Regexp) *syntax.Regexp {
		switch r.Op {
		case syntax.OpBeginText:
			r.Op = syntax.OpBeginLine
		case syntax.OpEndText:
			r.Op = syntax.OpEndLine
			r.Flags = 0
		}
		return r
	})
}

func dropWordBoundaries(re *syntax.Regexp) *syntax.Regexp {
	return mapTree(re, func(r *syntax.Regexp) *syntax.Regexp {
		if r.Op == syntax.OpWordBoundary || r.Op == syntax.OpNoWordBoundary {
			r.Op = syntax.OpEmptyMatch
		}
		return r
	})
}

// splitRepeats rewrites counted repetitions over 1000 (Go's limit) into
// runs of at most 1000.
func splitRepeats(re *syntax.Regexp) *syntax.Regexp {
	return mapTree(re, func(r *syntax.Regexp) *syntax.Regexp {
		if r.Op != syntax.OpRepeat || (r.Min <= 1000 && r.Max <= 1000) {
			return r
		}
		var parts []*syntax.Regexp
		rep := func(lo, hi int) {
			parts = append(parts, &syntax.Regexp{Op: syntax.OpRepeat, Flags: r.Flags, Min: lo, Max: hi, Sub: r.Sub})
		}
		n := r.Min
		for n > 1000 {
			rep(1000, 1000)
			n -= 1000
		}
		if r.Max < 0 {
			rep(n, -1)
		} else {
			rep(n, n)
			extra := r.Max - r.Min
			for extra > 1000 {
				rep(0, 1000)
				extra -= 1000
			}
			if extra > 0 {
				rep(0, extra)
			}
		}
		return &syntax.Regexp{Op: syntax.OpConcat, Sub: parts}
	})
}

// estimateSize approximates the size ripgrep's regex compiler gives the
// larger of its programs (a Unicode one and a reversed UTF-8 byte one), in
// bytes: 32 per instruction, 8 per range of a Unicode class.
func estimateSize(re *syntax.Regexp) float64 {
	u, b := progSize(re)
	return max(u, b)
}

func progSize(re *syntax.Regexp) (uni, byt float64) {
	const inst = 32
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && hasFold(c) {
				s := runeSet{c, c}.fold()
				uni += inst + 8*float64(len(s)/2)
				byt += inst * float64(utf8SeqCost(s))
				continue
			}
			uni += inst
			byt += inst * float64(max(1, utf8.RuneLen(c)))
		}
	case syntax.OpCharClass:
		uni = inst + 8*float64(len(re.Rune)/2)
		byt = inst * float64(utf8SeqCost(re.Rune))
	case syntax.OpConcat, syntax.OpAlternate:
		for _, s := range re.Sub {
			u, b := progSize(s)
			uni, byt = uni+u, byt+b
		}
		if re.Op == syntax.OpAlternate {
			uni += inst * float64(len(re.Sub)-1)
			byt += inst * float64(len(re.Sub)-1)
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		u, b := progSize(re.Sub[0])
		uni, byt = u+inst, b+inst
	case syntax.OpRepeat:
		u, b := progSize(re.Sub[0])
		n := float64(re.Min)
		if re.Max < 0 {
			n++
		} else {
			n = float64(re.Max)
		}
		uni, byt = u*n+inst*float64(max(0, re.Max-re.Min)), b*n+inst*float64(max(0, re.Max-re.Min))
	case syntax.OpCapture:
		return progSize(re.Sub[0])
	default:
		uni, byt = inst, inst
	}
	return
}

// utf8SeqCost counts the byte-range instructions of a class compiled to
// UTF-8 sequences without suffix sharing: one per byte range of each
// sequence, plus a split between sequences.
func utf8SeqCost(s []rune) int {
	n, seqs := 0, 0
	for i := 0; i+1 < len(s); i += 2 {
		lo, hi := s[i], s[i+1]
		if lo >= byteEscapeBase && hi <= byteEscapeBase+0xFF {
			n++
			seqs++
			continue
		}
		l, q := utf8Sequences(lo, hi)
		n += l
		seqs += q
	}
	return n + max(0, seqs-1)
}

// utf8Sequences returns the total length and the number of the UTF-8
// byte-range sequences that cover [lo, hi].
func utf8Sequences(lo, hi rune) (int, int) {
	bounds := []rune{0x7F, 0x7FF, 0xFFFF, 0x10FFFF}
	for i, b := range bounds {
		var start rune
		if i > 0 {
			start = bounds[i-1] + 1
		}
		if lo <= b && hi > b && lo >= start {
			l1, q1 := utf8Sequences(lo, b)
			l2, q2 := utf8Sequences(b+1, hi)
			return l1 + l2, q1 + q2
		}
	}
	if hi >= 0xD800 && lo <= 0xDFFF && !(lo >= 0xD800 && hi <= 0xDFFF) {
		total, seqs := 0, 0
		if lo < 0xD800 {
			l, q := utf8Sequences(lo, 0xD7FF)
			total, seqs = total+l, seqs+q
		}
		if hi > 0xDFFF {
			l, q := utf8Sequences(0xE000, hi)
			total, seqs = total+l, seqs+q
		}
		return total, seqs
	}
	n := utf8.RuneLen(lo)
	if n < 0 {
		n = 3
	}
	if n == 1 {
		return 1, 1
	}
	// Split where the trailing bytes do not cover their full range.
	for i := 1; i < n; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				l1, q1 := utf8Sequences(lo, lo|m)
				l2, q2 := utf8Sequences((lo|m)+1, hi)
				return l1 + l2, q1 + q2
			}
			if hi&m != m {
				l1, q1 := utf8Sequences(lo, (hi&^m)-1)
				l2, q2 := utf8Sequences(hi&^m, hi)
				return l1 + l2, q1 + q2
			}
		}
	}
	return n, 1
}

// estimateGoInsts bounds the size of the simplified program.
func estimateGoInsts(re *syntax.Regexp) float64 {
	switch re.Op {
	case syntax.OpLiteral:
		return float64(len(re.Rune))
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0.0
		for _, s := range re.Sub {
			n += estimateGoInsts(s) + 1
		}
		return n
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpCapture:
		return estimateGoInsts(re.Sub[0]) + 2
	case syntax.OpRepeat:
		n := float64(re.Max)
		if re.Max < 0 {
			n = float64(re.Min) + 1
		}
		return (estimateGoInsts(re.Sub[0]) + 2) * max(n, 1)
	}
	return 1
}

// ── line matching ──────────────────────────────────────────────────────

// matchLine reports whether the line (without its terminator) matches.
func (m *matcher) matchLine(line []byte) bool {
	if m.dfa != nil {
		if e, ok := m.dfa.firstMatchEnd(line, 0); ok {
			return e >= 0
		}
	}
	if m.re == nil || m.rawBytes {
		_, _, ok := m.vm.find(line, 0)
		return ok
	}
	if m.unicodeWB && !isASCII(line) {
		_, _, ok := m.vm.find(line, 0)
		return ok
	}
	if !m.re.Match(line) {
		return false
	}
	if !utf8.Valid(line) {
		// Go's engine reads an invalid byte as U+FFFD, which classes like
		// . and [^a] match and ripgrep's do not: confirm.
		_, _, ok := m.vm.find(line, 0)
		return ok
	}
	return true
}

func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if (uint64(b[0])|uint64(b[1])|uint64(b[2])|uint64(b[3])|uint64(b[4])|uint64(b[5])|uint64(b[6])|uint64(b[7]))&0x80 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// nextLine finds the first matching line of buf (whole lines) that starts
// at or after from, a line start. It returns the line's bounds without the
// terminator, or ok false.
func (m *matcher) nextLine(buf []byte, from int) (start, end int, ok bool) {
	pos := from
	for pos < len(buf) {
		cand := pos
		fromPre, exact := false, false
		if m.pre == nil && m.dfa != nil {
			if e, ok := m.dfa.firstMatchEnd(buf, pos); ok {
				if e < 0 {
					return 0, 0, false
				}
				cand, exact = e, true
			}
		}
		switch {
		case exact:
		case m.pre != nil:
			i := m.pre.find(buf, pos)
			if i < 0 {
				return 0, 0, false
			}
			cand, fromPre = i, true
		case m.filter != nil:
			loc := m.filter.FindIndex(buf[pos:])
			if loc == nil {
				return 0, 0, false
			}
			cand = pos + loc[0]
		}
		if cand > len(buf) || (cand == len(buf) && (len(buf) == 0 || buf[len(buf)-1] == '\n')) {
			return 0, 0, false
		}
		ls := pos
		if cand > pos {
			if i := bytes.LastIndexByte(buf[pos:cand], '\n'); i >= 0 {
				ls = pos + i + 1
			}
		}
		le := len(buf)
		if i := bytes.IndexByte(buf[cand:], '\n'); i >= 0 {
			le = cand + i
		}
		if exact || (fromPre && m.exactLiteral) {
			return ls, le, true
		}
		if m.matchLine(buf[ls:le]) {
			return ls, le, true
		}
		pos = le + 1
	}
	return 0, 0, false
}
