package grep

import (
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// rxFlags are the flags in force while translating, as ripgrep sets them:
// multi-line anchors and Unicode on; -i sets case-insensitive, -U
// --multiline-dotall sets dot-matches-newline.
type rxFlags struct {
	i, m, s, U, u bool
}

func (f rxFlags) apply(items []flagItem) rxFlags {
	enable := true
	for _, it := range items {
		switch it.c {
		case '-':
			enable = false
		case 'i':
			f.i = enable
		case 'm':
			f.m = enable
		case 's':
			f.s = enable
		case 'U':
			f.U = enable
		case 'u':
			f.u = enable
		}
	}
	return f
}

type translator struct {
	pat   string
	flags rxFlags
	err   error
	// what the tree needs from the matcher
	unicodeWordBoundary bool
	rawBytes            bool
}

func (t *translator) fail(sp span, msg string) {
	if t.err == nil {
		t.err = &PatternError{Pattern: t.pat, msg: msg, spans: []span{sp}}
	}
}

func (t *translator) translate(n *node) *syntax.Regexp {
	if t.err != nil {
		return empty()
	}
	switch n.kind {
	case nEmpty, nFlags:
		if n.kind == nFlags {
			t.flags = t.flags.apply(n.flags)
		}
		return empty()
	case nLiteral:
		return t.literal(n)
	case nDot:
		var cls runeSet
		switch {
		case t.flags.u && t.flags.s:
			cls = runeSet{0, 0xD7FF, 0xE000, unicode.MaxRune}
		case t.flags.u:
			cls = runeSet{0, '\n' - 1, '\n' + 1, 0xD7FF, 0xE000, unicode.MaxRune}
		case t.flags.s:
			cls = bytesToRunes(byteRange(0, 255))
		default:
			cls = bytesToRunes(byteRange(0, 255).remove('\n'))
		}
		if !t.flags.u {
			t.rawBytes = true
		}
		return class(cls)
	case nAssert:
		switch n.assert {
		case aStartLine:
			if t.flags.m {
				return op(syntax.OpBeginLine)
			}
			return op(syntax.OpBeginText)
		case aEndLine:
			if t.flags.m {
				return op(syntax.OpEndLine)
			}
			return op(syntax.OpEndText)
		case aStartText:
			return op(syntax.OpBeginText)
		case aEndText:
			return op(syntax.OpEndText)
		case aWord, aNotWord:
			if t.flags.u {
				t.unicodeWordBoundary = true
			}
			if n.assert == aWord {
				return op(syntax.OpWordBoundary)
			}
			return op(syntax.OpNoWordBoundary)
		}
	case nPerl:
		if t.flags.u {
			cls := t.perlUnicode(n)
			return class(cls)
		}
		return class(bytesToRunes(t.perlBytes(n)))
	case nUnicode:
		cls := t.unicodeClass(n)
		if t.err != nil {
			return empty()
		}
		return class(cls)
	case nBracket:
		if t.flags.u {
			cls := t.setUnicode(n.set)
			cls = t.foldNegate(cls, n.negated)
			if t.err == nil && len(cls) == 0 {
				t.fail(n.sp, "empty character classes are not allowed")
			}
			return class(cls)
		}
		cls := t.setBytes(n.set)
		cls = foldNegateBytes(cls, n.negated, t.flags.i)
		if t.err == nil && len(cls) == 0 {
			t.fail(n.sp, "empty character classes are not allowed")
		}
		return class(bytesToRunes(cls))
	case nRepeat:
		sub := t.translate(n.subs[0])
		re := &syntax.Regexp{Sub: []*syntax.Regexp{sub}}
		switch {
		case n.min == 0 && n.max < 0:
			re.Op = syntax.OpStar
		case n.min == 1 && n.max < 0:
			re.Op = syntax.OpPlus
		case n.min == 0 && n.max == 1:
			re.Op = syntax.OpQuest
		default:
			re.Op, re.Min, re.Max = syntax.OpRepeat, n.min, n.max
		}
		greedy := n.greedy
		if t.flags.U {
			greedy = !greedy
		}
		if !greedy {
			re.Flags |= syntax.NonGreedy
		}
		return re
	case nGroup:
		old := t.flags
		if n.isFlagsGroup {
			t.flags = t.flags.apply(n.flags)
		}
		sub := t.translate(n.subs[0])
		t.flags = old
		return sub
	case nConcat:
		var subs []*syntax.Regexp
		for _, s := range n.subs {
			r := t.translate(s)
			if r.Op != syntax.OpEmptyMatch {
				subs = append(subs, r)
			}
		}
		return concat(subs)
	case nAlt:
		var subs []*syntax.Regexp
		for _, s := range n.subs {
			subs = append(subs, t.translate(s))
		}
		if len(subs) == 1 {
			return subs[0]
		}
		return &syntax.Regexp{Op: syntax.OpAlternate, Sub: subs}
	}
	return empty()
}

func empty() *syntax.Regexp          { return &syntax.Regexp{Op: syntax.OpEmptyMatch} }
func op(o syntax.Op) *syntax.Regexp  { return &syntax.Regexp{Op: o} }
func class(s runeSet) *syntax.Regexp { return &syntax.Regexp{Op: syntax.OpCharClass, Rune: s} }

func concat(subs []*syntax.Regexp) *syntax.Regexp {
	switch len(subs) {
	case 0:
		return empty()
	case 1:
		return subs[0]
	}
	// Merge runs of literals with the same flags.
	var out []*syntax.Regexp
	for _, s := range subs {
		if n := len(out); n > 0 && s.Op == syntax.OpLiteral && out[n-1].Op == syntax.OpLiteral && s.Flags == out[n-1].Flags {
			out[n-1].Rune = append(out[n-1].Rune, s.Rune...)
			continue
		}
		if s.Op == syntax.OpLiteral {
			s = &syntax.Regexp{Op: syntax.OpLiteral, Flags: s.Flags, Rune: append([]rune(nil), s.Rune...)}
		}
		out = append(out, s)
	}
	if len(out) == 1 {
		return out[0]
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: out}
}

func (t *translator) literal(n *node) *syntax.Regexp {
	c := n.c
	if !t.flags.u && n.hexByte && c >= 0x80 && c <= 0xFF {
		t.rawBytes = true
		return &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune{rawByteRune(byte(c))}}
	}
	if !t.flags.u && utf8.RuneLen(c) > 1 {
		t.fail(n.sp, "Unicode not allowed here")
		return empty()
	}
	if t.flags.i {
		if t.flags.u && hasFold(c) {
			return &syntax.Regexp{Op: syntax.OpLiteral, Flags: syntax.FoldCase, Rune: []rune{c}}
		}
		if !t.flags.u && (c|0x20) >= 'a' && (c|0x20) <= 'z' {
			return class(runeSet{c &^ 0x20, c &^ 0x20, c | 0x20, c | 0x20})
		}
	}
	return &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune{c}}
}

func (t *translator) perlUnicode(n *node) runeSet {
	var cls runeSet
	switch n.perl {
	case 'd':
		cls = perlDigit()
	case 's':
		cls = perlSpace()
	default:
		cls = perlWord()
	}
	if n.negated {
		cls = cls.negateUnicode()
	}
	return cls
}

func (t *translator) perlBytes(n *node) byteSet {
	var name string
	switch n.perl {
	case 'd':
		name = "digit"
	case 's':
		name = "space"
	default:
		name = "word"
	}
	cls := byteSetOf(asciiClass(name))
	if n.negated {
		cls = cls.negate()
	}
	return cls
}

func (t *translator) unicodeClass(n *node) runeSet {
	if !t.flags.u {
		t.fail(n.sp, "Unicode not allowed here")
		return nil
	}
	cls, msg := unicodeClass(n)
	if msg != "" {
		t.fail(n.sp, msg)
		return nil
	}
	negated := n.negated != n.uNotEqual
	cls = t.foldNegate(cls, negated)
	if len(cls) == 0 {
		t.fail(n.sp, "empty character classes are not allowed")
	}
	return cls
}

func (t *translator) foldNegate(cls runeSet, negated bool) runeSet {
	if t.flags.i {
		cls = cls.fold()
	}
	if negated {
		cls = cls.negateUnicode()
	}
	return cls
}

func (t *translator) setUnicode(s *classSet) runeSet {
	if s.op != 0 {
		lhs, rhs := t.setUnicode(s.lhs), t.setUnicode(s.rhs)
		if t.flags.i {
			lhs, rhs = lhs.fold(), rhs.fold()
		}
		switch s.op {
		case '&':
			return lhs.intersect(rhs)
		case '-':
			return lhs.diff(rhs)
		default:
			return lhs.symdiff(rhs)
		}
	}
	var out runeSet
	for _, it := range s.items {
		out = out.union(t.itemUnicode(it))
	}
	return out
}

func (t *translator) itemUnicode(it *classItem) runeSet {
	switch it.kind {
	case ciLiteral:
		return runeSet{it.lit.c, it.lit.c}
	case ciRange:
		return runeSet{it.lo.c, it.hi.c}
	case ciASCII:
		return t.foldNegate(asciiClass(it.ascii), it.negated)
	case ciUnicode:
		return t.unicodeClass(it.lit)
	case ciPerl:
		return t.perlUnicode(it.lit)
	case ciBracketed:
		return t.foldNegate(t.setUnicode(it.set), it.negated)
	case ciUnion:
		var out runeSet
		for _, x := range it.items {
			out = out.union(t.itemUnicode(x))
		}
		return out
	}
	return nil
}

func (t *translator) classByte(lit *node) (byte, bool) {
	if lit.hexByte && lit.c <= 0xFF {
		if lit.c >= 0x80 {
			t.rawBytes = true
		}
		return byte(lit.c), true
	}
	if lit.c <= 0x7F {
		return byte(lit.c), true
	}
	t.fail(lit.sp, "Unicode not allowed here")
	return 0, false
}

func (t *translator) setBytes(s *classSet) byteSet {
	if s.op != 0 {
		lhs, rhs := t.setBytes(s.lhs), t.setBytes(s.rhs)
		if t.flags.i {
			lhs, rhs = lhs.fold(), rhs.fold()
		}
		switch s.op {
		case '&':
			return lhs.and(rhs)
		case '-':
			return lhs.and(rhs.negate())
		default:
			return lhs.or(rhs).and(lhs.and(rhs).negate())
		}
	}
	var out byteSet
	for _, it := range s.items {
		out = out.or(t.itemBytes(it))
	}
	return out
}

func (t *translator) itemBytes(it *classItem) byteSet {
	var out byteSet
	switch it.kind {
	case ciLiteral:
		if b, ok := t.classByte(it.lit); ok {
			out.set(b)
		}
	case ciRange:
		lo, ok1 := t.classByte(it.lo)
		hi, ok2 := t.classByte(it.hi)
		if ok1 && ok2 {
			for c := int(lo); c <= int(hi); c++ {
				out.set(byte(c))
			}
		}
	case ciASCII:
		return foldNegateBytes(byteSetOf(asciiClass(it.ascii)), it.negated, t.flags.i)
	case ciUnicode:
		t.fail(it.sp, "Unicode not allowed here")
	case ciPerl:
		return t.perlBytes(it.lit)
	case ciBracketed:
		return foldNegateBytes(t.setBytes(it.set), it.negated, t.flags.i)
	case ciUnion:
		for _, x := range it.items {
			out = out.or(t.itemBytes(x))
		}
	}
	return out
}

// byteSet is a class of bytes ((?-u) mode).
type byteSet [4]uint64

func (b *byteSet) set(c byte)     { b[c>>6] |= 1 << (c & 63) }
func (b byteSet) has(c byte) bool { return b[c>>6]&(1<<(c&63)) != 0 }
func (b byteSet) or(o byteSet) byteSet {
	return byteSet{b[0] | o[0], b[1] | o[1], b[2] | o[2], b[3] | o[3]}
}
func (b byteSet) and(o byteSet) byteSet {
	return byteSet{b[0] & o[0], b[1] & o[1], b[2] & o[2], b[3] & o[3]}
}
func (b byteSet) negate() byteSet { return byteSet{^b[0], ^b[1], ^b[2], ^b[3]} }
func (b byteSet) remove(c byte) byteSet {
	b[c>>6] &^= 1 << (c & 63)
	return b
}

func (b byteSet) fold() byteSet {
	for c := 'A'; c <= 'Z'; c++ {
		if b.has(byte(c)) || b.has(byte(c|0x20)) {
			b.set(byte(c))
			b.set(byte(c | 0x20))
		}
	}
	return b
}

func byteRange(lo, hi byte) byteSet {
	var b byteSet
	for c := int(lo); c <= int(hi); c++ {
		b.set(byte(c))
	}
	return b
}

func byteSetOf(s runeSet) byteSet {
	var b byteSet
	for i := 0; i+1 < len(s); i += 2 {
		for c := s[i]; c <= s[i+1] && c <= 0xFF; c++ {
			b.set(byte(c))
		}
	}
	return b
}

func foldNegateBytes(b byteSet, negated, fold bool) byteSet {
	if fold {
		b = b.fold()
	}
	if negated {
		b = b.negate()
	}
	return b
}

// bytesToRunes maps a byte class onto runes: ASCII bytes as themselves,
// high bytes as their escape runes; a class holding every high byte also
// takes every non-ASCII character (a valid multi-byte character is a run
// of high bytes, each of which such a class matches).
func bytesToRunes(b byteSet) runeSet {
	var out runeSet
	allHigh := true
	for c := 0; c < 256; c++ {
		if !b.has(byte(c)) {
			if c >= 0x80 {
				allHigh = false
			}
			continue
		}
		r := rune(c)
		if c >= 0x80 {
			r = rawByteRune(byte(c))
		}
		out = append(out, r, r)
	}
	if allHigh {
		out = append(out, 0x80, 0xD7FF, 0xE000, unicode.MaxRune)
	}
	return out.norm()
}
