package grep

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// nestLimit is ripgrep's limit on nested groups, classes and repetitions.
const nestLimit = 250

type groupState struct {
	alt *node // non-nil: an alternation in progress
	// a group in progress
	concat   *node
	group    *node
	ignoreWS bool
}

type classState struct {
	open bool
	// open
	union    *classSet // the parent's union so far
	set      *node     // the bracket being parsed (set.set filled on close)
	setStart position
	// op
	opKind byte
	lhs    *classSet
}

type rxParser struct {
	pat      string
	p        position
	ignoreWS bool
	groups   []groupState
	classes  []classState
	capNames map[string]span
}

func parsePattern(pat string) (*node, error) {
	ps := &rxParser{pat: pat, p: position{0, 1, 1}}
	return ps.parse()
}

func (ps *rxParser) err(sp span, msg string) error {
	return &PatternError{Pattern: ps.pat, msg: msg, spans: []span{sp}}
}

func (ps *rxParser) err2(sp, aux span, msg string) error {
	return &PatternError{Pattern: ps.pat, msg: msg, spans: []span{sp, aux}}
}

func (ps *rxParser) eof() bool { return ps.p.off >= len(ps.pat) }

func (ps *rxParser) char() rune {
	r, _ := utf8.DecodeRuneInString(ps.pat[ps.p.off:])
	return r
}

func (ps *rxParser) charAt(off int) rune {
	r, _ := utf8.DecodeRuneInString(ps.pat[off:])
	return r
}

func (ps *rxParser) bump() bool {
	if ps.eof() {
		return false
	}
	c, n := utf8.DecodeRuneInString(ps.pat[ps.p.off:])
	if c == '\n' {
		ps.p.line++
		ps.p.col = 1
	} else {
		ps.p.col++
	}
	ps.p.off += n
	return !ps.eof()
}

func (ps *rxParser) bumpIf(prefix string) bool {
	if !strings.HasPrefix(ps.pat[ps.p.off:], prefix) {
		return false
	}
	for range utf8.RuneCountInString(prefix) {
		ps.bump()
	}
	return true
}

func (ps *rxParser) bumpAndBumpSpace() bool {
	if !ps.bump() {
		return false
	}
	ps.bumpSpace()
	return !ps.eof()
}

func (ps *rxParser) bumpSpace() {
	if !ps.ignoreWS {
		return
	}
	for !ps.eof() {
		c := ps.char()
		if unicode.IsSpace(c) || isRustWhitespace(c) {
			ps.bump()
		} else if c == '#' {
			ps.bump()
			for !ps.eof() {
				c := ps.char()
				ps.bump()
				if c == '\n' {
					break
				}
			}
		} else {
			break
		}
	}
}

// isRustWhitespace is Rust's char::is_whitespace (White_Space property).
func isRustWhitespace(c rune) bool { return unicode.Is(unicode.White_Space, c) }

func (ps *rxParser) peek() (rune, bool) {
	if ps.eof() {
		return 0, false
	}
	_, n := utf8.DecodeRuneInString(ps.pat[ps.p.off:])
	if ps.p.off+n >= len(ps.pat) {
		return 0, false
	}
	return ps.charAt(ps.p.off + n), true
}

func (ps *rxParser) peekSpace() (rune, bool) {
	if !ps.ignoreWS {
		return ps.peek()
	}
	if ps.eof() {
		return 0, false
	}
	_, n := utf8.DecodeRuneInString(ps.pat[ps.p.off:])
	start := ps.p.off + n
	inComment := false
	for i, c := range ps.pat[start:] {
		switch {
		case isRustWhitespace(c):
		case !inComment && c == '#':
			inComment = true
		case inComment && c == '\n':
			inComment = false
		case inComment:
		default:
			return ps.charAt(start + i), true
		}
	}
	return 0, false
}

func (ps *rxParser) here() span { return span{ps.p, ps.p} }

func (ps *rxParser) spanChar() span {
	next := ps.p
	c, n := utf8.DecodeRuneInString(ps.pat[ps.p.off:])
	next.off += n
	next.col++
	if c == '\n' {
		next.line++
		next.col = 1
	}
	return span{ps.p, next}
}

func (ps *rxParser) parse() (*node, error) {
	concat := &node{kind: nConcat, sp: ps.here()}
	var err error
	for {
		ps.bumpSpace()
		if ps.eof() {
			break
		}
		switch ps.char() {
		case '(':
			concat, err = ps.pushGroup(concat)
		case ')':
			concat, err = ps.popGroup(concat)
		case '|':
			concat = ps.pushAlternate(concat)
		case '[':
			var cls *node
			cls, err = ps.parseSetClass()
			if err == nil {
				concat.subs = append(concat.subs, cls)
			}
		case '?':
			err = ps.parseUncountedRepetition(concat, 0, 1)
		case '*':
			err = ps.parseUncountedRepetition(concat, 0, -1)
		case '+':
			err = ps.parseUncountedRepetition(concat, 1, -1)
		case '{':
			err = ps.parseCountedRepetition(concat)
		default:
			var prim *node
			prim, err = ps.parsePrimitive()
			if err == nil {
				concat.subs = append(concat.subs, prim)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	ast, err := ps.popGroupEnd(concat)
	if err != nil {
		return nil, err
	}
	if err := checkNest(ps, ast); err != nil {
		return nil, err
	}
	return ast, nil
}

func (ps *rxParser) pushAlternate(concat *node) *node {
	concat.sp.end = ps.p
	if n := len(ps.groups); n > 0 && ps.groups[n-1].alt != nil {
		alt := ps.groups[n-1].alt
		alt.subs = append(alt.subs, concatToNode(concat))
	} else {
		ps.groups = append(ps.groups, groupState{alt: &node{kind: nAlt, sp: span{concat.sp.start, ps.p}, subs: []*node{concatToNode(concat)}}})
	}
	ps.bump()
	return &node{kind: nConcat, sp: ps.here()}
}

func (ps *rxParser) pushGroup(concat *node) (*node, error) {
	g, err := ps.parseGroup()
	if err != nil {
		return nil, err
	}
	if g.kind == nFlags {
		if v, ok := flagState(g.flags, 'x'); ok {
			ps.ignoreWS = v
		}
		concat.subs = append(concat.subs, g)
		return concat, nil
	}
	old := ps.ignoreWS
	nw := old
	if v, ok := flagState(g.flags, 'x'); ok {
		nw = v
	}
	ps.groups = append(ps.groups, groupState{concat: concat, group: g, ignoreWS: old})
	ps.ignoreWS = nw
	return &node{kind: nConcat, sp: ps.here()}, nil
}

// flagState reports whether flag c is set or cleared in items.
func flagState(items []flagItem, c rune) (bool, bool) {
	enable := true
	for _, it := range items {
		if it.c == '-' {
			enable = false
		} else if it.c == c {
			return enable, true
		}
	}
	return false, false
}

func (ps *rxParser) popGroup(groupConcat *node) (*node, error) {
	n := len(ps.groups)
	if n == 0 {
		return nil, ps.err(ps.spanChar(), "unopened group")
	}
	top := ps.groups[n-1]
	ps.groups = ps.groups[:n-1]
	var alt *node
	if top.alt != nil {
		alt = top.alt
		n = len(ps.groups)
		if n == 0 || ps.groups[n-1].alt != nil {
			return nil, ps.err(ps.spanChar(), "unopened group")
		}
		top = ps.groups[n-1]
		ps.groups = ps.groups[:n-1]
	}
	ps.ignoreWS = top.ignoreWS
	groupConcat.sp.end = ps.p
	ps.bump()
	g := top.group
	g.sp.end = ps.p
	if alt != nil {
		alt.sp.end = groupConcat.sp.end
		alt.subs = append(alt.subs, concatToNode(groupConcat))
		g.subs = []*node{alt}
	} else {
		g.subs = []*node{concatToNode(groupConcat)}
	}
	prior := top.concat
	prior.subs = append(prior.subs, g)
	return prior, nil
}

func (ps *rxParser) popGroupEnd(concat *node) (*node, error) {
	concat.sp.end = ps.p
	var ast *node
	n := len(ps.groups)
	if n == 0 {
		ast = concatToNode(concat)
	} else {
		top := ps.groups[n-1]
		ps.groups = ps.groups[:n-1]
		if top.alt == nil {
			return nil, ps.err(top.group.sp, "unclosed group")
		}
		top.alt.sp.end = ps.p
		top.alt.subs = append(top.alt.subs, concatToNode(concat))
		ast = top.alt
		if len(ast.subs) == 1 {
			ast = ast.subs[0]
		}
	}
	if n := len(ps.groups); n > 0 {
		return nil, ps.err(ps.groups[n-1].group.sp, "unclosed group")
	}
	return ast, nil
}

func (ps *rxParser) parseUncountedRepetition(concat *node, min, max int) error {
	opStart := ps.p
	_ = opStart
	if len(concat.subs) == 0 {
		return ps.err(ps.here(), "repetition operator missing expression")
	}
	ast := concat.subs[len(concat.subs)-1]
	if ast.kind == nEmpty || ast.kind == nFlags {
		return ps.err(ps.here(), "repetition operator missing expression")
	}
	concat.subs = concat.subs[:len(concat.subs)-1]
	greedy := true
	if ps.bump() && ps.char() == '?' {
		greedy = false
		ps.bump()
	}
	concat.subs = append(concat.subs, &node{kind: nRepeat, sp: span{ast.sp.start, ps.p}, min: min, max: max, greedy: greedy, subs: []*node{ast}})
	return nil
}

func (ps *rxParser) parseCountedRepetition(concat *node) error {
	start := ps.p
	if len(concat.subs) == 0 {
		return ps.err(ps.here(), "repetition operator missing expression")
	}
	ast := concat.subs[len(concat.subs)-1]
	if ast.kind == nEmpty || ast.kind == nFlags {
		return ps.err(ps.here(), "repetition operator missing expression")
	}
	concat.subs = concat.subs[:len(concat.subs)-1]
	unclosed := func() error { return ps.err(span{start, ps.p}, "unclosed counted repetition") }
	if !ps.bumpAndBumpSpace() {
		return unclosed()
	}
	lo, err := ps.parseDecimal()
	if err != nil {
		return err
	}
	hi := lo
	if ps.eof() {
		return unclosed()
	}
	if ps.char() == ',' {
		if !ps.bumpAndBumpSpace() {
			return unclosed()
		}
		if ps.char() != '}' {
			hi, err = ps.parseDecimal()
			if err != nil {
				return err
			}
		} else {
			hi = -1
		}
	}
	if ps.eof() || ps.char() != '}' {
		return unclosed()
	}
	greedy := true
	if ps.bumpAndBumpSpace() && ps.char() == '?' {
		greedy = false
		ps.bump()
	}
	if hi >= 0 && lo > hi {
		return ps.err(span{start, ps.p}, "invalid repetition count range, the start must be <= the end")
	}
	concat.subs = append(concat.subs, &node{kind: nRepeat, sp: span{ast.sp.start, ps.p}, min: lo, max: hi, greedy: greedy, subs: []*node{ast}})
	return nil
}

// parseDecimal reads a repetition count; whitespace around it is allowed
// even outside (?x), as in ripgrep.
func (ps *rxParser) parseDecimal() (int, error) {
	for !ps.eof() && isRustWhitespace(ps.char()) {
		ps.bump()
	}
	start := ps.p
	var digits strings.Builder
	for !ps.eof() && ps.char() >= '0' && ps.char() <= '9' {
		digits.WriteRune(ps.char())
		ps.bumpAndBumpSpace()
	}
	sp := span{start, ps.p}
	for !ps.eof() && isRustWhitespace(ps.char()) {
		ps.bumpAndBumpSpace()
	}
	if digits.Len() == 0 {
		return 0, ps.err(sp, "repetition quantifier expects a valid decimal")
	}
	n, err := strconv.ParseUint(digits.String(), 10, 32)
	if err != nil {
		return 0, ps.err(sp, "decimal literal invalid")
	}
	return int(n), nil
}

func (ps *rxParser) parseGroup() (*node, error) {
	open := ps.spanChar()
	ps.bump()
	ps.bumpSpace()
	if ps.bumpIf("?=") || ps.bumpIf("?!") || ps.bumpIf("?<=") || ps.bumpIf("?<!") {
		e := ps.err(span{open.start, ps.p}, "look-around, including look-ahead and look-behind, is not supported").(*PatternError)
		e.hint = pcre2Hint
		return nil, e
	}
	inner := ps.here()
	if ps.bumpIf("?P<") {
		if err := ps.parseCaptureName(); err != nil {
			return nil, err
		}
		return &node{kind: nGroup, sp: open}, nil
	}
	if ps.bumpIf("?") {
		if ps.eof() {
			return nil, ps.err(open, "unclosed group")
		}
		flags, err := ps.parseFlags()
		if err != nil {
			return nil, err
		}
		end := ps.char()
		ps.bump()
		if end == ')' {
			if len(flags) == 0 {
				return nil, ps.err(inner, "repetition operator missing expression")
			}
			return &node{kind: nFlags, sp: span{open.start, ps.p}, flags: flags}, nil
		}
		return &node{kind: nGroup, sp: open, flags: flags, isFlagsGroup: true}, nil
	}
	return &node{kind: nGroup, sp: open}, nil
}

func isCaptureChar(c rune, first bool) bool {
	return c == '_' || (!first && ((c >= '0' && c <= '9') || c == '.' || c == '[' || c == ']')) ||
		(c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
}

func (ps *rxParser) parseCaptureName() error {
	if ps.eof() {
		return ps.err(ps.here(), "unclosed capture group name")
	}
	start := ps.p
	for {
		if ps.char() == '>' {
			break
		}
		if !isCaptureChar(ps.char(), ps.p == start) {
			return ps.err(ps.spanChar(), "invalid capture group character")
		}
		if !ps.bump() {
			break
		}
	}
	end := ps.p
	if ps.eof() {
		return ps.err(ps.here(), "unclosed capture group name")
	}
	ps.bump()
	name := ps.pat[start.off:end.off]
	if name == "" {
		return ps.err(span{start, start}, "empty capture group name")
	}
	sp := span{start, end}
	if ps.capNames == nil {
		ps.capNames = map[string]span{}
	}
	if orig, dup := ps.capNames[name]; dup {
		return ps.err2(sp, orig, "duplicate capture group name")
	}
	ps.capNames[name] = sp
	return nil
}

func (ps *rxParser) parseFlags() ([]flagItem, error) {
	var items []flagItem
	var lastNeg *span
	for ps.char() != ':' && ps.char() != ')' {
		c := ps.char()
		sc := ps.spanChar()
		if c == '-' {
			lastNeg = &sc
		} else {
			lastNeg = nil
			if !strings.ContainsRune("imsUux", c) {
				return nil, ps.err(sc, "unrecognized flag")
			}
		}
		for _, it := range items {
			if it.c == c {
				if c == '-' {
					return nil, ps.err2(sc, it.sp, "flag negation operator repeated")
				}
				return nil, ps.err2(sc, it.sp, "duplicate flag")
			}
		}
		items = append(items, flagItem{c: c, sp: sc})
		if !ps.bump() {
			return nil, ps.err(ps.here(), "expected flag but got end of regex")
		}
	}
	if lastNeg != nil {
		return nil, ps.err(*lastNeg, "dangling flag negation operator")
	}
	return items, nil
}

func (ps *rxParser) parsePrimitive() (*node, error) {
	switch ps.char() {
	case '\\':
		return ps.parseEscape()
	case '.':
		n := &node{kind: nDot, sp: ps.spanChar()}
		ps.bump()
		return n, nil
	case '^':
		n := &node{kind: nAssert, sp: ps.spanChar(), assert: aStartLine}
		ps.bump()
		return n, nil
	case '$':
		n := &node{kind: nAssert, sp: ps.spanChar(), assert: aEndLine}
		ps.bump()
		return n, nil
	}
	n := &node{kind: nLiteral, sp: ps.spanChar(), c: ps.char()}
	ps.bump()
	return n, nil
}

func isMetaChar(c rune) bool { return strings.ContainsRune(`\.+*?()|[]{}^$#&-~`, c) }

func (ps *rxParser) parseEscape() (*node, error) {
	start := ps.p
	if !ps.bump() {
		return nil, ps.err(span{start, ps.p}, "incomplete escape sequence, reached end of pattern prematurely")
	}
	c := ps.char()
	switch {
	case c >= '0' && c <= '9':
		e := ps.err(span{start, ps.spanChar().end}, "backreferences are not supported").(*PatternError)
		e.hint = pcre2Hint
		return nil, e
	case c == 'x' || c == 'u' || c == 'U':
		n, err := ps.parseHex()
		if err != nil {
			return nil, err
		}
		n.sp.start = start
		return n, nil
	case c == 'p' || c == 'P':
		n, err := ps.parseUnicodeClass()
		if err != nil {
			return nil, err
		}
		n.sp.start = start
		return n, nil
	case strings.ContainsRune("dswDSW", c):
		sp := ps.spanChar()
		ps.bump()
		return &node{kind: nPerl, sp: span{start, sp.end}, perl: byte(unicode.ToLower(c)), negated: unicode.IsUpper(c)}, nil
	}
	ps.bump()
	sp := span{start, ps.p}
	if isMetaChar(c) {
		return &node{kind: nLiteral, sp: sp, c: c}, nil
	}
	lit := func(r rune) (*node, error) { return &node{kind: nLiteral, sp: sp, c: r}, nil }
	as := func(k assertKind) (*node, error) { return &node{kind: nAssert, sp: sp, assert: k}, nil }
	switch c {
	case 'a':
		return lit('\a')
	case 'f':
		return lit('\f')
	case 't':
		return lit('\t')
	case 'n':
		return lit('\n')
	case 'r':
		return lit('\r')
	case 'v':
		return lit('\v')
	case ' ':
		if ps.ignoreWS {
			return lit(' ')
		}
	case 'A':
		return as(aStartText)
	case 'z':
		return as(aEndText)
	case 'b':
		return as(aWord)
	case 'B':
		return as(aNotWord)
	}
	return nil, ps.err(sp, "unrecognized escape sequence")
}

func isHex(c rune) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (ps *rxParser) parseHex() (*node, error) {
	kind := ps.char()
	digits := map[rune]int{'x': 2, 'u': 4, 'U': 8}[kind]
	if !ps.bumpAndBumpSpace() {
		return nil, ps.err(ps.here(), "incomplete escape sequence, reached end of pattern prematurely")
	}
	var hex strings.Builder
	if ps.char() == '{' {
		brace := ps.p
		start := ps.spanChar().end
		for ps.bumpAndBumpSpace() && ps.char() != '}' {
			if !isHex(ps.char()) {
				return nil, ps.err(ps.spanChar(), "invalid hexadecimal digit")
			}
			hex.WriteRune(ps.char())
		}
		if ps.eof() {
			return nil, ps.err(span{brace, ps.p}, "incomplete escape sequence, reached end of pattern prematurely")
		}
		end := ps.p
		ps.bumpAndBumpSpace()
		if hex.Len() == 0 {
			return nil, ps.err(span{brace, ps.p}, "hexadecimal literal empty")
		}
		v, err := strconv.ParseUint(hex.String(), 16, 32)
		if err != nil || !utf8.ValidRune(rune(v)) {
			return nil, ps.err(span{start, end}, "hexadecimal literal is not a Unicode scalar value")
		}
		return &node{kind: nLiteral, sp: span{start, ps.p}, c: rune(v)}, nil
	}
	start := ps.p
	for i := 0; i < digits; i++ {
		if i > 0 && !ps.bumpAndBumpSpace() {
			return nil, ps.err(ps.here(), "incomplete escape sequence, reached end of pattern prematurely")
		}
		if !isHex(ps.char()) {
			return nil, ps.err(ps.spanChar(), "invalid hexadecimal digit")
		}
		hex.WriteRune(ps.char())
	}
	ps.bumpAndBumpSpace()
	end := ps.p
	v, err := strconv.ParseUint(hex.String(), 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return nil, ps.err(span{start, end}, "hexadecimal literal is not a Unicode scalar value")
	}
	return &node{kind: nLiteral, sp: span{start, end}, c: rune(v), hexByte: kind == 'x'}, nil
}

func (ps *rxParser) parseUnicodeClass() (*node, error) {
	negated := ps.char() == 'P'
	if !ps.bumpAndBumpSpace() {
		return nil, ps.err(ps.here(), "incomplete escape sequence, reached end of pattern prematurely")
	}
	n := &node{kind: nUnicode, negated: negated}
	if ps.char() == '{' {
		start := ps.spanChar().end
		var name strings.Builder
		for ps.bumpAndBumpSpace() && ps.char() != '}' {
			name.WriteRune(ps.char())
		}
		if ps.eof() {
			return nil, ps.err(ps.here(), "incomplete escape sequence, reached end of pattern prematurely")
		}
		ps.bump()
		s := name.String()
		if i := strings.Index(s, "!="); i >= 0 {
			n.uname, n.uvalue, n.uByValue, n.uNotEqual = s[:i], s[i+2:], true, true
		} else if i := strings.IndexByte(s, ':'); i >= 0 {
			n.uname, n.uvalue, n.uByValue = s[:i], s[i+1:], true
		} else if i := strings.IndexByte(s, '='); i >= 0 {
			n.uname, n.uvalue, n.uByValue = s[:i], s[i+1:], true
		} else {
			n.uname = s
		}
		n.sp = span{start, ps.p}
		return n, nil
	}
	start := ps.p
	c := ps.char()
	if c == '\\' {
		return nil, ps.err(ps.spanChar(), "invalid Unicode character class")
	}
	ps.bumpAndBumpSpace()
	n.uname = string(c)
	n.sp = span{start, ps.p}
	return n, nil
}

// ── bracketed classes ──────────────────────────────────────────────────

func (ps *rxParser) unclosedClass() error {
	for i := len(ps.classes) - 1; i >= 0; i-- {
		if ps.classes[i].open {
			return ps.err(ps.classes[i].set.sp, "unclosed character class")
		}
	}
	return ps.err(ps.here(), "unclosed character class")
}

func (ps *rxParser) parseSetClass() (*node, error) {
	union := &classSet{sp: ps.here()}
	for {
		ps.bumpSpace()
		if ps.eof() {
			return nil, ps.unclosedClass()
		}
		switch c := ps.char(); {
		case c == '[':
			if len(ps.classes) > 0 {
				if item := ps.maybeASCIIClass(); item != nil {
					union.items = append(union.items, item)
					continue
				}
			}
			nu, err := ps.pushClassOpen(union)
			if err != nil {
				return nil, err
			}
			union = nu
		case c == ']':
			done, nu, err := ps.popClass(union)
			if err != nil {
				return nil, err
			}
			if done != nil {
				return done, nil
			}
			union = nu
		case c == '&' && ps.peekIs('&'):
			ps.bumpIf("&&")
			union = ps.pushClassOp('&', union)
		case c == '-' && ps.peekIs('-'):
			ps.bumpIf("--")
			union = ps.pushClassOp('-', union)
		case c == '~' && ps.peekIs('~'):
			ps.bumpIf("~~")
			union = ps.pushClassOp('~', union)
		default:
			item, err := ps.parseSetClassRange()
			if err != nil {
				return nil, err
			}
			union.items = append(union.items, item)
		}
	}
}

func (ps *rxParser) peekIs(c rune) bool {
	r, ok := ps.peek()
	return ok && r == c
}

func (ps *rxParser) pushClassOpen(parent *classSet) (*classSet, error) {
	start := ps.p
	unclosed := func() error { return ps.err(span{start, ps.p}, "unclosed character class") }
	if !ps.bumpAndBumpSpace() {
		return nil, unclosed()
	}
	negated := false
	if ps.char() == '^' {
		negated = true
		if !ps.bumpAndBumpSpace() {
			return nil, unclosed()
		}
	}
	union := &classSet{sp: ps.here()}
	for ps.char() == '-' {
		union.items = append(union.items, &classItem{kind: ciLiteral, sp: ps.spanChar(), lit: &node{kind: nLiteral, sp: ps.spanChar(), c: '-'}})
		if !ps.bumpAndBumpSpace() {
			return nil, ps.err(span{start, start}, "unclosed character class")
		}
	}
	if len(union.items) == 0 && ps.char() == ']' {
		union.items = append(union.items, &classItem{kind: ciLiteral, sp: ps.spanChar(), lit: &node{kind: nLiteral, sp: ps.spanChar(), c: ']'}})
		if !ps.bumpAndBumpSpace() {
			return nil, unclosed()
		}
	}
	set := &node{kind: nBracket, sp: span{start, ps.p}, negated: negated}
	ps.classes = append(ps.classes, classState{open: true, union: parent, set: set})
	return union, nil
}

// popClassOp folds rhs into a pending binary operation, if one is on top.
func (ps *rxParser) popClassOp(rhs *classSet) *classSet {
	n := len(ps.classes)
	if n == 0 || ps.classes[n-1].open {
		return rhs
	}
	top := ps.classes[n-1]
	ps.classes = ps.classes[:n-1]
	return &classSet{sp: span{top.lhs.sp.start, rhs.sp.end}, op: top.opKind, lhs: top.lhs, rhs: rhs}
}

func itemSet(u *classSet) *classSet {
	it := unionToItem(u.sp, u.items)
	return &classSet{sp: it.sp, items: []*classItem{it}}
}

func (ps *rxParser) pushClassOp(kind byte, union *classSet) *classSet {
	lhs := ps.popClassOp(itemSet(union))
	ps.classes = append(ps.classes, classState{opKind: kind, lhs: lhs})
	return &classSet{sp: ps.here()}
}

func (ps *rxParser) popClass(union *classSet) (*node, *classSet, error) {
	prev := ps.popClassOp(itemSet(union))
	n := len(ps.classes)
	top := ps.classes[n-1]
	ps.classes = ps.classes[:n-1]
	ps.bump()
	top.set.sp.end = ps.p
	top.set.set = prev
	if len(ps.classes) == 0 {
		return top.set, nil, nil
	}
	parent := top.union
	parent.items = append(parent.items, &classItem{kind: ciBracketed, sp: top.set.sp, set: prev, negated: top.set.negated})
	return nil, parent, nil
}

func (ps *rxParser) parseSetClassRange() (*classItem, error) {
	prim1, err := ps.parseSetClassItem()
	if err != nil {
		return nil, err
	}
	ps.bumpSpace()
	if ps.eof() {
		return nil, ps.unclosedClass()
	}
	if ps.char() != '-' {
		return primToItem(ps, prim1)
	}
	if r, ok := ps.peekSpace(); ok && (r == ']' || r == '-') {
		return primToItem(ps, prim1)
	}
	if !ps.bumpAndBumpSpace() {
		return nil, ps.unclosedClass()
	}
	prim2, err := ps.parseSetClassItem()
	if err != nil {
		return nil, err
	}
	sp := span{prim1.sp.start, prim2.sp.end}
	if prim1.kind != nLiteral {
		return nil, ps.err(prim1.sp, "invalid range boundary, must be a literal")
	}
	if prim2.kind != nLiteral {
		return nil, ps.err(prim2.sp, "invalid range boundary, must be a literal")
	}
	if prim1.c > prim2.c {
		return nil, ps.err(sp, "invalid character class range, the start must be <= the end")
	}
	return &classItem{kind: ciRange, sp: sp, lo: prim1, hi: prim2}, nil
}

func primToItem(ps *rxParser, p *node) (*classItem, error) {
	switch p.kind {
	case nLiteral:
		return &classItem{kind: ciLiteral, sp: p.sp, lit: p}, nil
	case nPerl:
		return &classItem{kind: ciPerl, sp: p.sp, lit: p}, nil
	case nUnicode:
		return &classItem{kind: ciUnicode, sp: p.sp, lit: p}, nil
	}
	return nil, ps.err(p.sp, "invalid escape sequence found in character class")
}

func (ps *rxParser) parseSetClassItem() (*node, error) {
	if ps.char() == '\\' {
		return ps.parseEscape()
	}
	n := &node{kind: nLiteral, sp: ps.spanChar(), c: ps.char()}
	ps.bump()
	return n, nil
}

var asciiClassNames = map[string]bool{
	"alnum": true, "alpha": true, "ascii": true, "blank": true, "cntrl": true, "digit": true, "graph": true,
	"lower": true, "print": true, "punct": true, "space": true, "upper": true, "word": true, "xdigit": true,
}

func (ps *rxParser) maybeASCIIClass() *classItem {
	start := ps.p
	back := func() *classItem { ps.p = start; return nil }
	if !ps.bump() || ps.char() != ':' {
		return back()
	}
	if !ps.bump() {
		return back()
	}
	negated := false
	if ps.char() == '^' {
		negated = true
		if !ps.bump() {
			return back()
		}
	}
	nameStart := ps.p.off
	for ps.char() != ':' && ps.bump() {
	}
	if ps.eof() {
		return back()
	}
	name := ps.pat[nameStart:ps.p.off]
	if !ps.bumpIf(":]") {
		return back()
	}
	if !asciiClassNames[name] {
		return back()
	}
	return &classItem{kind: ciASCII, sp: span{start, ps.p}, ascii: name, negated: negated}
}

// ── nesting limit ──────────────────────────────────────────────────────

func checkNest(ps *rxParser, n *node) error {
	var walk func(n *node, depth int) error
	var walkSet func(s *classSet, depth int) error
	var walkItem func(it *classItem, depth int) error
	inc := func(sp span, depth int) (int, error) {
		if depth+1 > nestLimit {
			return 0, ps.err(sp, "exceed the maximum number of nested parentheses/brackets (250)")
		}
		return depth + 1, nil
	}
	walk = func(n *node, depth int) error {
		switch n.kind {
		case nBracket, nRepeat, nGroup, nAlt, nConcat:
			d, err := inc(n.sp, depth)
			if err != nil {
				return err
			}
			if n.kind == nBracket {
				return walkSet(n.set, d)
			}
			for _, s := range n.subs {
				if err := walk(s, d); err != nil {
					return err
				}
			}
		}
		return nil
	}
	walkSet = func(s *classSet, depth int) error {
		if s.op != 0 {
			d, err := inc(s.sp, depth)
			if err != nil {
				return err
			}
			if err := walkSet(s.lhs, d); err != nil {
				return err
			}
			return walkSet(s.rhs, d)
		}
		for _, it := range s.items {
			if err := walkItem(it, depth); err != nil {
				return err
			}
		}
		return nil
	}
	walkItem = func(it *classItem, depth int) error {
		switch it.kind {
		case ciBracketed:
			d, err := inc(it.sp, depth)
			if err != nil {
				return err
			}
			return walkSet(it.set, d)
		case ciUnion:
			d, err := inc(it.sp, depth)
			if err != nil {
				return err
			}
			for _, x := range it.items {
				if err := walkItem(x, d); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(n, 0)
}
