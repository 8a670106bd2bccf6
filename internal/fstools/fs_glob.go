package fstools

import (
	"strconv"
	"strings"
	"unicode"
)

// The glob dialect of search_files and directory_tree is minimatch's (what
// the official server uses) with {dot: true}: "*", "?", "[...]" classes
// (with "!"/"^" negation, ranges and [:alpha:]-style names), "\" escapes,
// "**" as a whole segment for any number of segments, {a,b} and {1..3}
// braces, a leading "!" negating and a leading "#" matching nothing.
// Extglobs such as +(a|b) are matched literally.

// globMatch reports whether the slash-separated relative path name matches
// pattern.
func globMatch(pattern, name string) bool {
	return compileGlob(pattern).match(name)
}

// glob is a compiled pattern: its brace expansions split into segments.
type glob struct {
	comment, negate bool
	alts            [][]segPattern
}

// segPattern is one pattern segment.
type segPattern struct {
	raw      string
	globstar bool
	toks     []globTok
}

func compileGlob(pattern string) *glob {
	g := &glob{}
	if strings.HasPrefix(pattern, "#") {
		g.comment = true
		return g
	}
	for strings.HasPrefix(pattern, "!") {
		g.negate = !g.negate
		pattern = pattern[1:]
	}
	for _, p := range braceExpand(pattern) {
		parts := strings.Split(p, "/")
		segs := make([]segPattern, len(parts))
		for i, part := range parts {
			segs[i] = segPattern{raw: part, globstar: part == "**", toks: compileSegment(part)}
		}
		g.alts = append(g.alts, segs)
	}
	return g
}

func (g *glob) match(name string) bool {
	if g.comment {
		return false
	}
	file := strings.Split(name, "/")
	for _, segs := range g.alts {
		if matchSegments(file, segs) {
			return !g.negate
		}
	}
	return g.negate
}

// matchSegments matches path segments against pattern segments, "**"
// standing for zero or more whole segments (never "." or ".."). Failed
// (segment, pattern) positions are remembered, so patterns with many "**"
// stay polynomial.
func matchSegments(file []string, pat []segPattern) bool {
	m := &segMatcher{file: file, pat: pat}
	return m.match(0, 0)
}

type segMatcher struct {
	file   []string
	pat    []segPattern
	failed map[[2]int]bool
}

func (m *segMatcher) match(fi, pi int) bool {
	if m.failed[[2]int{fi, pi}] {
		return false
	}
	ok := m.matchFrom(fi, pi)
	if !ok {
		if m.failed == nil {
			m.failed = map[[2]int]bool{}
		}
		m.failed[[2]int{fi, pi}] = true
	}
	return ok
}

func (m *segMatcher) matchFrom(fi, pi int) bool {
	file, pat := m.file, m.pat
	for fi < len(file) && pi < len(pat) {
		if pat[pi].globstar {
			for pi+1 < len(pat) && pat[pi+1].globstar {
				pi++ // consecutive globstars are one
			}
			if pi+1 == len(pat) {
				for _, f := range file[fi:] {
					if f == "." || f == ".." {
						return false
					}
				}
				return true
			}
			for fr := fi; fr < len(file); fr++ {
				if m.match(fr, pi+1) {
					return true
				}
				if file[fr] == "." || file[fr] == ".." {
					break
				}
			}
			return false
		}
		if !matchSegment(&pat[pi], file[fi]) {
			return false
		}
		fi++
		pi++
	}
	if fi == len(file) && pi == len(pat) {
		return true
	}
	// A pattern that ends in "/" (an empty last segment) matches a path
	// whose segments are exhausted.
	return fi == len(file) && pi == len(pat)-1 && pat[pi].raw == ""
}

type globTok struct {
	kind byte // 'l' literal, '?' any one, '*' any run, '[' class
	r    rune
	neg  bool
	cls  *globClass // for '['
}

// globClass is the content of a bracket expression, kept apart so that the
// common tokens stay small.
type globClass struct {
	ranges [][2]rune
	named  []func(rune) bool
}

func compileSegment(p string) []globTok {
	rs := []rune(p)
	var dead []bool // loop positions of bracket scans known to run off the end
	toks := make([]globTok, 0, len(rs))
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			toks = append(toks, globTok{kind: 'l', r: rs[i]})
		case '?':
			toks = append(toks, globTok{kind: '?'})
		case '*':
			if len(toks) == 0 || toks[len(toks)-1].kind != '*' {
				toks = append(toks, globTok{kind: '*'})
			}
		case '[':
			if dead == nil {
				dead = make([]bool, len(rs)+1)
			}
			tok, next, ok := compileClass(rs, i, dead)
			if !ok {
				toks = append(toks, globTok{kind: 'l', r: '['})
				continue
			}
			toks = append(toks, tok)
			i = next
		default:
			toks = append(toks, globTok{kind: 'l', r: r})
		}
	}
	return toks
}

var posixClasses = map[string]func(rune) bool{
	"alpha": unicode.IsLetter, "digit": unicode.IsDigit, "alnum": func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) },
	"upper": unicode.IsUpper, "lower": unicode.IsLower, "space": unicode.IsSpace, "punct": unicode.IsPunct,
	"cntrl": unicode.IsControl, "print": unicode.IsPrint, "graph": func(r rune) bool { return unicode.IsGraphic(r) && !unicode.IsSpace(r) },
	"blank": func(r rune) bool { return r == ' ' || r == '\t' }, "word": func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) },
	"xdigit": func(r rune) bool { return strings.ContainsRune("0123456789abcdefABCDEF", r) },
}

// compileClass parses the bracket expression starting at rs[i] == '['; it
// returns the index of its closing ']'.
//
// The scan's course depends only on the position it is at (past the first
// member), so a position from which one scan ran off the end without a
// closing ']' is marked in dead and ends every later scan that reaches it:
// a segment of many unclosed '[' costs linear time, not quadratic.
func compileClass(rs []rune, i int, dead []bool) (globTok, int, bool) {
	cls := &globClass{}
	tok := globTok{kind: '[', cls: cls}
	j := i + 1
	if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
		tok.neg = true
		j++
	}
	first := true
	var visited []int
	for ; j < len(rs); j++ {
		r := rs[j]
		if r == ']' && !first {
			return tok, j, len(cls.ranges)+len(cls.named) > 0
		}
		if !first {
			if dead[j] {
				break
			}
			visited = append(visited, j)
		}
		first = false
		if r == '[' && j+1 < len(rs) && rs[j+1] == ':' {
			// Class names are short: look for ":]" in a small window only.
			win := rs[j+2 : min(len(rs), j+2+maxClassName+2)]
			if end := strings.Index(string(win), ":]"); end >= 0 {
				name := string(win)[:end]
				if f, ok := posixClasses[name]; ok {
					cls.named = append(cls.named, f)
					j += 2 + len([]rune(name)) + 1
					continue
				}
			}
		}
		if r == '\\' && j+1 < len(rs) {
			j++
			r = rs[j]
		}
		lo, hi := r, r
		if j+2 < len(rs) && rs[j+1] == '-' && rs[j+2] != ']' {
			hi = rs[j+2]
			if hi == '\\' && j+3 < len(rs) {
				hi = rs[j+3]
				j++
			}
			j += 2
		}
		cls.ranges = append(cls.ranges, [2]rune{lo, hi})
	}
	for _, v := range visited {
		dead[v] = true
	}
	return tok, 0, false
}

// maxClassName is the length of the longest POSIX class name ("alpha"…).
const maxClassName = 6

func (t *globTok) matches(r rune) bool {
	switch t.kind {
	case 'l':
		return t.r == r
	case '?':
		return true
	}
	in := false
	for _, rg := range t.cls.ranges {
		if r >= rg[0] && r <= rg[1] {
			in = true
			break
		}
	}
	for _, f := range t.cls.named {
		if !in && f(r) {
			in = true
		}
	}
	return in != t.neg
}

// matchSegment matches one path segment (never "." or ".." unless the
// pattern spells them) against one pattern segment.
func matchSegment(sp *segPattern, s string) bool {
	if sp.raw == s {
		return true
	}
	if s == "" || s == "." || s == ".." {
		return false
	}
	toks := sp.toks
	rs := []rune(s)
	ti, si := 0, 0
	starT, starS := -1, 0
	for si < len(rs) {
		if ti < len(toks) && toks[ti].kind == '*' {
			starT, starS = ti, si
			ti++
			continue
		}
		if ti < len(toks) && toks[ti].matches(rs[si]) {
			ti++
			si++
			continue
		}
		if starT >= 0 {
			starS++
			si = starS
			ti = starT + 1
			continue
		}
		return false
	}
	for ti < len(toks) && toks[ti].kind == '*' {
		ti++
	}
	return ti == len(toks)
}

// braceExpand expands {a,b} alternatives and {x..y} sequences, outermost
// first, the way the brace-expansion package does for minimatch. A brace
// pair with neither a comma nor a valid sequence stays literal.
func braceExpand(p string) []string {
	b := braceBudget{n: maxBraceExpansions, bytes: maxBraceBytes}
	return braceExpandN(p, &b)
}

// maxBraceExpansions bounds the patterns one glob expands to, so that
// "{a,b}{a,b}..." cannot exhaust memory; the rest is dropped. maxBraceBytes
// bounds their total size the same way.
const maxBraceExpansions = 1024

// braceBudget is what is left of the bounds while a pattern expands.
type braceBudget struct{ n, bytes int }

func (b *braceBudget) spent() bool { return b.n <= 0 || b.bytes <= 0 }

func braceExpandN(p string, budget *braceBudget) []string {
	if budget.spent() {
		return nil
	}
	// Literal pairs ("{}", "{a}") are skipped in one forward scan; only the
	// first pair that expands splits the pattern.
	var alts []string
	open, close := findBraces(p, 0)
	for open >= 0 {
		body := p[open+1 : close]
		if parts := splitTopLevel(body); len(parts) > 1 {
			alts = parts
			break
		}
		if seq, ok := braceSequence(body); ok {
			alts = seq
			break
		}
		open, close = findBraces(p, close+1)
	}
	if open < 0 {
		budget.n--
		budget.bytes -= len(p)
		return []string{p}
	}
	pre, post := p[:open], p[close+1:]
	var out []string
	for _, alt := range alts {
		if budget.spent() || len(pre)+len(alt)+len(post) > budget.bytes {
			break
		}
		out = append(out, braceExpandN(pre+alt+post, budget)...)
	}
	return out
}

// findBraces returns the first unescaped '{' at or after from and its
// matching '}', or -1, -1.
func findBraces(p string, from int) (int, int) {
	depth, open := 0, -1
	for i := from; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth > 0 {
				depth--
				if depth == 0 {
					return open, i
				}
			}
		}
	}
	return -1, -1
}

func splitTopLevel(body string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, body[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, body[start:])
}

// braceSequence expands "1..5", "a..e" and "1..10..2".
func braceSequence(body string) ([]string, bool) {
	parts := strings.Split(body, "..")
	if len(parts) != 2 && len(parts) != 3 {
		return nil, false
	}
	step := 1
	if len(parts) == 3 {
		s, err := strconv.Atoi(parts[2])
		if err != nil || s == 0 {
			return nil, false
		}
		step = max(s, -s)
	}
	a, errA := strconv.Atoi(parts[0])
	b, errB := strconv.Atoi(parts[1])
	if errA == nil && errB == nil {
		var out []string
		for i := a; (a <= b && i <= b) || (a > b && i >= b); {
			out = append(out, strconv.Itoa(i))
			if len(out) > maxBraceExpansions {
				break
			}
			if a <= b {
				i += step
			} else {
				i -= step
			}
		}
		return out, true
	}
	ra, rb := []rune(parts[0]), []rune(parts[1])
	if len(ra) == 1 && len(rb) == 1 {
		var out []string
		for r := ra[0]; (ra[0] <= rb[0] && r <= rb[0]) || (ra[0] > rb[0] && r >= rb[0]); {
			out = append(out, string(r))
			if len(out) > maxBraceExpansions {
				break
			}
			if ra[0] <= rb[0] {
				r += rune(step)
			} else {
				r -= rune(step)
			}
		}
		return out, true
	}
	return nil, false
}
