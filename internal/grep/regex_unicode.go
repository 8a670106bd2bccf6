package grep

import (
	"sort"
	"sync"
	"unicode"
)

// runeSet is a set of code points as sorted, non-overlapping, non-adjacent
// inclusive ranges [lo0, hi0, lo1, hi1, …] (the layout of syntax.Regexp.Rune
// for a character class).
type runeSet []rune

// Raw bytes (matched by (?-u) classes and \xNN literals) are represented
// as the surrogate code points 0xDC00+b: a surrogate never decodes from
// valid UTF-8, and the matcher's own decoder (vm.go) turns each byte of an
// invalid sequence into one, the way Python's surrogateescape does.
const byteEscapeBase = 0xDC00

func rawByteRune(b byte) rune { return byteEscapeBase + rune(b) }

func (s runeSet) norm() runeSet {
	if len(s) <= 2 {
		return s
	}
	type rg struct{ lo, hi rune }
	rs := make([]rg, 0, len(s)/2)
	for i := 0; i+1 < len(s); i += 2 {
		rs = append(rs, rg{s[i], s[i+1]})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	out := runeSet{}
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1]+1 {
			if r.hi > out[n-1] {
				out[n-1] = r.hi
			}
			continue
		}
		out = append(out, r.lo, r.hi)
	}
	return out
}

func (s runeSet) union(t runeSet) runeSet {
	out := make(runeSet, 0, len(s)+len(t))
	out = append(append(out, s...), t...)
	return out.norm()
}

func (s runeSet) contains(r rune) bool {
	i := sort.Search(len(s)/2, func(i int) bool { return s[2*i+1] >= r })
	return i < len(s)/2 && s[2*i] <= r
}

// complement within [lo, hi].
func (s runeSet) complementIn(lo, hi rune) runeSet {
	var out runeSet
	next := lo
	for i := 0; i+1 < len(s); i += 2 {
		a, b := s[i], s[i+1]
		if b < lo || a > hi {
			continue
		}
		if a > next {
			out = append(out, next, a-1)
		}
		if b+1 > next {
			next = b + 1
		}
	}
	if next <= hi {
		out = append(out, next, hi)
	}
	return out
}

// negateUnicode complements s over the Unicode scalar values (surrogates
// excluded), as a negated class in Unicode mode does.
func (s runeSet) negateUnicode() runeSet {
	all := runeSet{0, 0xD7FF, 0xE000, unicode.MaxRune}
	return all.diff(s)
}

func (s runeSet) intersect(t runeSet) runeSet {
	var out runeSet
	i, j := 0, 0
	for i < len(s) && j < len(t) {
		lo, hi := max(s[i], t[j]), min(s[i+1], t[j+1])
		if lo <= hi {
			out = append(out, lo, hi)
		}
		if s[i+1] < t[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	return out
}

func (s runeSet) diff(t runeSet) runeSet {
	return s.intersect(t.complementIn(0, unicode.MaxRune))
}

func (s runeSet) symdiff(t runeSet) runeSet {
	return s.union(t).diff(s.intersect(t))
}

func (s runeSet) remove(r rune) runeSet { return s.diff(runeSet{r, r}) }

func fromTable(t *unicode.RangeTable) runeSet {
	var s runeSet
	for _, r := range t.R16 {
		if r.Stride == 1 {
			s = append(s, rune(r.Lo), rune(r.Hi))
			continue
		}
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			s = append(s, c, c)
		}
	}
	for _, r := range t.R32 {
		if r.Stride == 1 {
			s = append(s, rune(r.Lo), rune(r.Hi))
			continue
		}
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			s = append(s, c, c)
		}
	}
	return s.norm()
}

func fromTables(ts ...*unicode.RangeTable) runeSet {
	var s runeSet
	for _, t := range ts {
		s = append(s, fromTable(t)...)
	}
	return s.norm()
}

var foldable = sync.OnceValue(func() []rune {
	var out []rune
	for c := rune(0); c <= unicode.MaxRune; c++ {
		if c == 0x20000 { // no cased letters past the SMP
			break
		}
		if unicode.SimpleFold(c) != c {
			out = append(out, c)
		}
	}
	return out
})

// fold adds the simple case folding orbit of every member, as a
// case-insensitive class does.
func (s runeSet) fold() runeSet {
	f := foldable()
	var add runeSet
	for i := 0; i+1 < len(s); i += 2 {
		lo, hi := s[i], s[i+1]
		j := sort.Search(len(f), func(j int) bool { return f[j] >= lo })
		for ; j < len(f) && f[j] <= hi; j++ {
			for c := unicode.SimpleFold(f[j]); c != f[j]; c = unicode.SimpleFold(c) {
				add = append(add, c, c)
			}
		}
	}
	if add == nil {
		return s
	}
	return s.union(add)
}

func hasFold(c rune) bool { return unicode.SimpleFold(c) != c }

// ── ripgrep's Unicode classes ──────────────────────────────────────────

var (
	perlWord = sync.OnceValue(func() runeSet {
		return fromTables(unicode.L, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Nd, unicode.Pc, unicode.Join_Control)
	})
	perlSpace = sync.OnceValue(func() runeSet { return fromTable(unicode.White_Space) })
	perlDigit = sync.OnceValue(func() runeSet { return fromTable(unicode.Nd) })
)

func isWordRune(r rune) bool {
	if r < 0x80 {
		return r == '_' || (r >= '0' && r <= '9') || (r|0x20 >= 'a' && r|0x20 <= 'z')
	}
	return perlWord().contains(r)
}

func asciiClass(name string) runeSet {
	switch name {
	case "alnum":
		return runeSet{'0', '9', 'A', 'Z', 'a', 'z'}
	case "alpha":
		return runeSet{'A', 'Z', 'a', 'z'}
	case "ascii":
		return runeSet{0, 0x7F}
	case "blank":
		return runeSet{'\t', '\t', ' ', ' '}
	case "cntrl":
		return runeSet{0, 0x1F, 0x7F, 0x7F}
	case "digit":
		return runeSet{'0', '9'}
	case "graph":
		return runeSet{'!', '~'}
	case "lower":
		return runeSet{'a', 'z'}
	case "print":
		return runeSet{' ', '~'}
	case "punct":
		return runeSet{'!', '/', ':', '@', '[', '`', '{', '~'}
	case "space":
		return runeSet{'\t', '\r', ' ', ' '}
	case "upper":
		return runeSet{'A', 'Z'}
	case "word":
		return runeSet{'0', '9', 'A', 'Z', '_', '_', 'a', 'z'}
	case "xdigit":
		return runeSet{'0', '9', 'A', 'F', 'a', 'f'}
	}
	return nil
}

// normalizeProp is Unicode's loose matching of property names (UAX44-LM3)
// as ripgrep implements it: case, spaces, '_' and '-' ignored, an initial
// "is" dropped, non-ASCII dropped.
func normalizeProp(x string) string {
	b := []byte(x)
	start := 0
	isPrefix := len(b) >= 2 && (b[0] == 'i' || b[0] == 'I') && (b[1] == 's' || b[1] == 'S')
	if isPrefix {
		start = 2
	}
	out := make([]byte, 0, len(b))
	for _, c := range b[start:] {
		switch {
		case c == ' ' || c == '_' || c == '-':
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		case c <= 0x7F:
			out = append(out, c)
		}
	}
	if isPrefix && len(out) == 1 && out[0] == 'c' {
		return "isc"
	}
	return string(out)
}

var gencatAliases = map[string]string{
	"c": "C", "other": "C", "cc": "Cc", "control": "Cc", "cntrl": "Cc", "cf": "Cf", "format": "Cf",
	"cn": "Cn", "unassigned": "Cn", "co": "Co", "privateuse": "Co", "cs": "Cs", "surrogate": "Cs",
	"l": "L", "letter": "L", "lc": "LC", "casedletter": "LC", "l&": "LC", "ll": "Ll", "lowercaseletter": "Ll",
	"lm": "Lm", "modifierletter": "Lm", "lo": "Lo", "otherletter": "Lo", "lt": "Lt", "titlecaseletter": "Lt",
	"lu": "Lu", "uppercaseletter": "Lu", "m": "M", "mark": "M", "combiningmark": "M", "mc": "Mc", "spacingmark": "Mc",
	"me": "Me", "enclosingmark": "Me", "mn": "Mn", "nonspacingmark": "Mn", "n": "N", "number": "N",
	"nd": "Nd", "decimalnumber": "Nd", "digit": "Nd", "nl": "Nl", "letternumber": "Nl", "no": "No", "othernumber": "No",
	"p": "P", "punctuation": "P", "punct": "P", "pc": "Pc", "connectorpunctuation": "Pc", "pd": "Pd", "dashpunctuation": "Pd",
	"pe": "Pe", "closepunctuation": "Pe", "pf": "Pf", "finalpunctuation": "Pf", "pi": "Pi", "initialpunctuation": "Pi",
	"po": "Po", "otherpunctuation": "Po", "ps": "Ps", "openpunctuation": "Ps", "s": "S", "symbol": "S",
	"sc": "Sc", "currencysymbol": "Sc", "sk": "Sk", "modifiersymbol": "Sk", "sm": "Sm", "mathsymbol": "Sm",
	"so": "So", "othersymbol": "So", "z": "Z", "separator": "Z", "zl": "Zl", "lineseparator": "Zl",
	"zp": "Zp", "paragraphseparator": "Zp", "zs": "Zs", "spaceseparator": "Zs",
	"any": "Any", "assigned": "Assigned", "ascii": "ASCII",
}

var assigned = sync.OnceValue(func() runeSet {
	var s runeSet
	for _, t := range unicode.Categories {
		s = append(s, fromTable(t)...)
	}
	return s.norm()
})

func gencatSet(name string) runeSet {
	switch name {
	case "Any":
		return runeSet{0, unicode.MaxRune}
	case "ASCII":
		return runeSet{0, 0x7F}
	case "Assigned":
		return assigned()
	case "Cn":
		return assigned().complementIn(0, unicode.MaxRune)
	case "C":
		return fromTable(unicode.C).union(assigned().complementIn(0, unicode.MaxRune))
	case "LC":
		return fromTables(unicode.Lu, unicode.Ll, unicode.Lt)
	}
	return fromTable(unicode.Categories[name])
}

var scriptAliases = map[string]string{
	"arab": "Arabic", "armn": "Armenian", "beng": "Bengali", "bopo": "Bopomofo", "cyrl": "Cyrillic",
	"deva": "Devanagari", "ethi": "Ethiopic", "geor": "Georgian", "grek": "Greek", "gujr": "Gujarati",
	"guru": "Gurmukhi", "hang": "Hangul", "hani": "Han", "hebr": "Hebrew", "hira": "Hiragana",
	"kana": "Katakana", "khmr": "Khmer", "knda": "Kannada", "laoo": "Lao", "latn": "Latin", "mlym": "Malayalam",
	"mong": "Mongolian", "mymr": "Myanmar", "orya": "Oriya", "sinh": "Sinhala", "taml": "Tamil", "telu": "Telugu",
	"thaa": "Thaana", "thai": "Thai", "tibt": "Tibetan", "zyyy": "Common", "zinh": "Inherited", "qaai": "Inherited",
	"runr": "Runic", "ogam": "Ogham", "copt": "Coptic", "qaac": "Coptic", "syrc": "Syriac", "brai": "Braille",
}

var scriptByNorm = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for name := range unicode.Scripts {
		m[normalizeProp(name)] = name
	}
	for a, name := range scriptAliases {
		m[a] = name
	}
	return m
})

// binaryProps maps normalized names and aliases of the binary properties
// Go's unicode package carries (or that derive from them) to their sets.
var binaryProps = sync.OnceValue(func() map[string]func() runeSet {
	m := map[string]func() runeSet{}
	aliases := map[string][]string{
		"ASCII_Hex_Digit": {"ahex"}, "Bidi_Control": {"bidic"}, "Dash": nil, "Deprecated": {"dep"},
		"Diacritic": {"dia"}, "Extender": {"ext"}, "Hex_Digit": {"hex"}, "Hyphen": nil,
		"IDS_Binary_Operator": {"idsb"}, "IDS_Trinary_Operator": {"idst"}, "Ideographic": {"ideo"},
		"Join_Control": {"joinc"}, "Logical_Order_Exception": {"loe"}, "Noncharacter_Code_Point": {"nchar"},
		"Other_Alphabetic": {"oalpha"}, "Other_Default_Ignorable_Code_Point": {"odi"},
		"Other_Grapheme_Extend": {"ogrext"}, "Other_ID_Continue": {"oidc"}, "Other_ID_Start": {"oids"},
		"Other_Lowercase": {"olower"}, "Other_Math": {"omath"}, "Other_Uppercase": {"oupper"},
		"Pattern_Syntax": {"patsyn"}, "Pattern_White_Space": {"patws"}, "Prepended_Concatenation_Mark": {"pcm"},
		"Quotation_Mark": {"qmark"}, "Radical": nil, "Regional_Indicator": {"ri"}, "Sentence_Terminal": {"sterm"},
		"Soft_Dotted": {"sd"}, "Terminal_Punctuation": {"term"}, "Unified_Ideograph": {"uideo"},
		"Variation_Selector": {"vs"}, "White_Space": {"wspace", "space"},
	}
	for name, t := range unicode.Properties {
		f := func() runeSet { return fromTable(t) }
		m[normalizeProp(name)] = f
		for _, a := range aliases[name] {
			m[a] = f
		}
	}
	alpha := func() runeSet { return fromTables(unicode.L, unicode.Nl, unicode.Other_Alphabetic) }
	lower := func() runeSet { return fromTables(unicode.Ll, unicode.Other_Lowercase) }
	upper := func() runeSet { return fromTables(unicode.Lu, unicode.Other_Uppercase) }
	idStart := func() runeSet {
		return fromTables(unicode.L, unicode.Nl, unicode.Other_ID_Start).diff(fromTables(unicode.Pattern_Syntax, unicode.Pattern_White_Space))
	}
	idCont := func() runeSet {
		return idStart().union(fromTables(unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue)).diff(fromTables(unicode.Pattern_Syntax, unicode.Pattern_White_Space))
	}
	for _, n := range []string{"alphabetic", "alpha"} {
		m[n] = alpha
	}
	for _, n := range []string{"lowercase", "lower"} {
		m[n] = lower
	}
	for _, n := range []string{"uppercase", "upper"} {
		m[n] = upper
	}
	m["math"] = func() runeSet { return fromTables(unicode.Sm, unicode.Other_Math) }
	m["cased"] = func() runeSet { return lower().union(upper()).union(fromTable(unicode.Lt)) }
	for _, n := range []string{"idstart", "ids", "xidstart", "xids"} {
		m[n] = idStart
	}
	for _, n := range []string{"idcontinue", "idc", "xidcontinue", "xidc"} {
		m[n] = idCont
	}
	m["graphemeextend"] = func() runeSet { return fromTables(unicode.Me, unicode.Mn, unicode.Other_Grapheme_Extend) }
	m["grext"] = m["graphemeextend"]
	m["defaultignorablecodepoint"] = func() runeSet {
		return fromTables(unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector).union(runeSet{0x00AD, 0x00AD, 0x034F, 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180F, 0x200B, 0x200F, 0x202A, 0x202E, 0x2060, 0x206F, 0x3164, 0x3164, 0xFE00, 0xFE0F, 0xFEFF, 0xFEFF, 0xFFA0, 0xFFA0, 0xFFF0, 0xFFF8, 0x1BCA0, 0x1BCA3, 0x1D173, 0x1D17A, 0xE0000, 0xE0FFF})
	}
	m["di"] = m["defaultignorablecodepoint"]
	return m
})

// unicodeClass resolves \p{...} as ripgrep does: a binary property, then a
// general category, then a script; or name=value for gc, sc and scx.
// Script_Extensions is approximated by Script (Go has no table for it).
func unicodeClass(n *node) (runeSet, string) {
	const notFound, valueNotFound = "Unicode property not found", "Unicode property value not found"
	if n.uByValue {
		name, value := normalizeProp(n.uname), normalizeProp(n.uvalue)
		switch name {
		case "generalcategory", "gc":
			if g, ok := gencatAliases[value]; ok {
				return gencatSet(g), ""
			}
			return nil, valueNotFound
		case "script", "sc", "scriptextensions", "scx":
			if s, ok := scriptByNorm()[value]; ok {
				return fromTable(unicode.Scripts[s]), ""
			}
			return nil, valueNotFound
		}
		return nil, notFound
	}
	norm := normalizeProp(n.uname)
	if norm != "cf" {
		if f, ok := binaryProps()[norm]; ok {
			return f(), ""
		}
	}
	if g, ok := gencatAliases[norm]; ok {
		return gencatSet(g), ""
	}
	if s, ok := scriptByNorm()[norm]; ok {
		return fromTable(unicode.Scripts[s]), ""
	}
	return nil, notFound
}
