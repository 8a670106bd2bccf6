package grep

import (
	"bytes"
	"math"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// prefilter finds candidate positions fast: every match of the pattern
// contains one of a few literals, so a line without any of them cannot
// match. find returns the offset of the next occurrence at or after from,
// or -1.
type prefilter interface {
	find(buf []byte, from int) int
}

// literalPre finds one literal by its rarest byte (by byteFreq): looking
// for one byte is much faster than bytes.Index when the literal starts with
// a common one. Where the rare byte turns out common here, it hands over
// to bytes.Index.
type literalPre struct {
	lit  []byte
	rare byte
	off  int // of rare in lit
}

func newLiteralPre(lit []byte) literalPre {
	p := literalPre{lit: lit, rare: lit[0]}
	for i, c := range lit {
		if byteFreq[c] < byteFreq[p.rare] {
			p.rare, p.off = c, i
		}
	}
	return p
}

func (p literalPre) find(buf []byte, from int) int {
	fails := 0
	for i := from + p.off; i < len(buf); {
		j := bytes.IndexByte(buf[i:], p.rare)
		if j < 0 {
			return -1
		}
		at := i + j - p.off
		if at+len(p.lit) <= len(buf) && bytes.Equal(buf[at:at+len(p.lit)], p.lit) {
			return at
		}
		i += j + 1
		// Too many false hits for the bytes skipped: search the whole
		// literal instead.
		if fails++; fails > 4+(i-from)>>4 {
			if k := bytes.Index(buf[i-p.off:], p.lit); k >= 0 {
				return i - p.off + k
			}
			return -1
		}
	}
	return -1
}

// setPre finds the earliest of several literals.
type setPre struct{ lits [][]byte }

func (p setPre) find(buf []byte, from int) int {
	best := -1
	for _, l := range p.lits {
		end := len(buf)
		if best >= 0 {
			end = min(len(buf), best+len(l))
		}
		if from >= end {
			continue
		}
		if i := bytes.Index(buf[from:end], l); i >= 0 && (best < 0 || from+i < best) {
			best = from + i
		}
	}
	return best
}

// foldPre finds an ASCII letter of a case-insensitive literal in either
// case (the letter is one whose case orbit is ASCII only), the rarest one
// by a typical byte frequency.
type foldPre struct {
	lo, up byte
	// lit (lower case) and the offset of the letter in it, when every
	// letter of lit folds within ASCII: a candidate is then checked here.
	lit []byte
	off int
}

func (p foldPre) find(buf []byte, from int) int {
	for from < len(buf) {
		b := buf[from:]
		i := bytes.IndexByte(b, p.lo)
		end := len(b)
		if i >= 0 {
			end = i
		}
		if j := bytes.IndexByte(b[:end], p.up); j >= 0 {
			i = j
		}
		if i < 0 {
			return -1
		}
		at := from + i
		if p.lit == nil {
			return at
		}
		if start := at - p.off; start >= 0 && start+len(p.lit) <= len(buf) && asciiFoldEq(buf[start:start+len(p.lit)], p.lit) {
			return start
		}
		from = at + 1
	}
	return -1
}

func asciiFoldEq(b, lower []byte) bool {
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

type lits struct {
	set  []string
	fold bool
}

func (l *lits) minLen() int {
	n := 1 << 30
	for _, s := range l.set {
		n = min(n, len(s))
	}
	return n
}

// better picks the literals that will stop the search less often: exact
// ones over case-folded ones, then the set less likely to occur at a given
// position of typical text (longer and with rarer bytes).
func better(a, b *lits) *lits {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	if a.fold != b.fold {
		if a.fold {
			return b
		}
		return a
	}
	if b.commonness() < a.commonness() {
		return b
	}
	return a
}

// commonness estimates the log of the chance that one of the literals
// starts at a given position of typical text.
func (l *lits) commonness() float64 {
	total := 0.0
	for _, s := range l.set {
		p := 1.0
		for i := 0; i < len(s); i++ {
			p *= byteFreq[s[i]]
		}
		total += p
	}
	return math.Log(total)
}

// byteFreq approximates how often each byte occurs in source code and
// prose.
var byteFreq = func() [256]float64 {
	var f [256]float64
	for c := range f {
		f[c] = 0.0005 // non-ASCII, controls
	}
	for c := 0x21; c < 0x7F; c++ {
		f[c] = 0.001 // punctuation
	}
	for c := 'A'; c <= 'Z'; c++ {
		f[c] = 0.002
	}
	for c := '0'; c <= '9'; c++ {
		f[c] = 0.003
	}
	for _, e := range []struct {
		chars string
		freq  float64
	}{
		{" ", 0.15}, {"e", 0.06}, {"t", 0.05}, {"rnoias", 0.037}, {"\n\t", 0.03}, {"l", 0.025}, {"cd", 0.021},
		{"u", 0.018}, {"pm", 0.015}, {"fh", 0.012}, {"g().,=", 0.01}, {"b", 0.008}, {"yvw", 0.006},
		{"k\"_", 0.005}, {":{}", 0.004}, {"x;/*-", 0.003}, {"jqz", 0.001},
	} {
		for i := 0; i < len(e.chars); i++ {
			f[e.chars[i]] = e.freq
		}
	}
	return f
}()

// required returns literals one of which every match contains.
func required(re *syntax.Regexp) *lits {
	switch re.Op {
	case syntax.OpLiteral:
		return &lits{set: []string{string(re.Rune)}, fold: re.Flags&syntax.FoldCase != 0}
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpCharClass:
		// A small class of single characters: each one is a literal.
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if n > 0 && n <= 4 {
			var set []string
			for i := 0; i+1 < len(re.Rune); i += 2 {
				for c := re.Rune[i]; c <= re.Rune[i+1]; c++ {
					if c >= byteEscapeBase && c <= byteEscapeBase+0xFF {
						return nil
					}
					set = append(set, string(c))
				}
			}
			return &lits{set: set}
		}
	case syntax.OpConcat:
		var best *lits
		for _, s := range re.Sub {
			best = better(best, required(s))
		}
		return best
	case syntax.OpAlternate:
		out := &lits{}
		for i, s := range re.Sub {
			l := required(s)
			if l == nil || (i > 0 && l.fold != out.fold) {
				return nil
			}
			out.fold = l.fold
			out.set = append(out.set, l.set...)
		}
		if len(out.set) > 6 {
			return nil
		}
		return out
	}
	return nil
}

func buildPrefilter(tree *syntax.Regexp) (prefilter, bool) {
	l := required(tree)
	if l == nil || len(l.set) == 0 || l.minLen() == 0 {
		return nil, false
	}
	exact := tree.Op == syntax.OpLiteral && !l.fold
	if l.fold {
		if len(l.set) != 1 {
			return nil, false
		}
		return foldPrefilter(l.set[0]), false
	}
	if len(l.set) == 1 {
		return newLiteralPre([]byte(l.set[0])), exact
	}
	p := setPre{}
	for _, s := range l.set {
		p.lits = append(p.lits, []byte(s))
	}
	return p, false
}

// foldPrefilter picks the rarest ASCII letter of lit whose case orbit has
// no other member (k and s fold with non-ASCII characters).
func foldPrefilter(lit string) prefilter {
	best, bestRank, off := byte(0), 1<<30, 0
	checkable := true
	for i := 0; i < len(lit); i++ {
		if c := lit[i]; c >= utf8.RuneSelf || c|0x20 == 'k' || c|0x20 == 's' {
			checkable = false
		}
	}
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if c >= utf8.RuneSelf {
			continue
		}
		lc := byte(unicode.ToLower(rune(c)))
		if lc < 'a' || lc > 'z' || lc == 'k' || lc == 's' {
			continue
		}
		if r := byteRank[lc]; r < bestRank {
			best, bestRank, off = lc, r, i
		}
	}
	if best == 0 {
		return nil
	}
	p := foldPre{lo: best, up: best - 0x20, off: off}
	if checkable {
		p.lit = []byte(strings.ToLower(lit))
	}
	return p
}

// byteRank orders lowercase letters from rare to common in source code and
// prose (a smaller rank is rarer).
var byteRank = func() [256]int {
	var r [256]int
	for i, c := range "qjzxvkwyfbghmpdulcsnrtoiae" {
		r[c] = i
	}
	return r
}()
