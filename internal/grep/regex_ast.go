package grep

// The pattern syntax is ripgrep 13's (Rust regex-syntax 0.6): parsed here
// into a small syntax tree with the same shape and positions as ripgrep's,
// so that errors point at the same spans and come in the same order
// (parse errors first, then translation errors), and then translated onto
// Go's regexp/syntax tree (regex_translate.go).

// position is a place in the pattern: byte offset, 1-based line and
// 1-based column counted in characters, as ripgrep reports them.
type position struct{ off, line, col int }

type span struct{ start, end position }

type nodeKind uint8

const (
	nEmpty nodeKind = iota
	nFlags          // (?flags): changes the flags of the rest of the group
	nLiteral
	nDot
	nAssert
	nPerl    // \d \s \w and negations
	nUnicode // \pN, \p{Name}, \p{name=value}
	nBracket // [...]
	nRepeat
	nGroup
	nAlt
	nConcat
)

type assertKind uint8

const (
	aStartLine assertKind = iota // ^
	aEndLine                     // $
	aStartText                   // \A
	aEndText                     // \z
	aWord                        // \b
	aNotWord                     // \B
)

// flagItem is one element of a flag group: a flag letter, or '-' for the
// negation operator.
type flagItem struct {
	c  rune
	sp span
}

type node struct {
	kind nodeKind
	sp   span

	c       rune // nLiteral
	hexByte bool // nLiteral written as \xNN (a byte in (?-u) mode)

	assert assertKind // nAssert

	perl    byte // nPerl: 'd', 's', 'w'
	negated bool // nPerl, nUnicode, nBracket

	uname, uvalue string // nUnicode
	uByValue      bool   // nUnicode: name=value, name:value or name!=value
	uNotEqual     bool   // nUnicode: name!=value

	set *classSet // nBracket

	min, max int  // nRepeat; max < 0: unbounded
	greedy   bool // nRepeat
	// nGroup: flags of (?flags:...) (nil for capturing groups); nFlags: the flags
	flags        []flagItem
	isFlagsGroup bool

	subs []*node // nRepeat, nGroup: one; nAlt, nConcat: many
}

// classSet is the inside of a bracketed class: a union of items or a
// binary set operation.
type classSet struct {
	sp       span
	op       byte // 0 union, '&' intersection, '-' difference, '~' symmetric difference
	items    []*classItem
	lhs, rhs *classSet
}

type classItemKind uint8

const (
	ciEmpty classItemKind = iota
	ciLiteral
	ciRange
	ciASCII
	ciUnicode
	ciPerl
	ciBracketed
	ciUnion
)

type classItem struct {
	kind classItemKind
	sp   span
	lit  *node // ciLiteral, ciUnicode, ciPerl (the primitive)
	lo   *node // ciRange
	hi   *node
	// ciASCII
	ascii   string
	negated bool
	// ciBracketed
	set *classSet
	// ciUnion
	items []*classItem
}

func unionToItem(sp span, items []*classItem) *classItem {
	switch len(items) {
	case 0:
		return &classItem{kind: ciEmpty, sp: sp}
	case 1:
		return items[0]
	}
	return &classItem{kind: ciUnion, sp: sp, items: items}
}

func concatToNode(n *node) *node {
	switch len(n.subs) {
	case 0:
		return &node{kind: nEmpty, sp: n.sp}
	case 1:
		return n.subs[0]
	}
	return n
}
