package fstools

//go:generate sh -c "cd unicodegen && go run . | gofmt > ../fs_unicode_tables.go"

import (
	"sort"
	"strings"

	"github.com/agentbe/agent-backend/internal/wspath"
)

// Hangul syllable decomposition constants (Unicode chapter 3.12).
const (
	hangulSBase  = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulTCount = 28
	hangulNCount = 588
	hangulSCount = 11172
)

// combiningClass returns the canonical combining class of r.
func combiningClass(r rune) int32 {
	i := sort.Search(len(cccRanges), func(i int) bool { return cccRanges[i][1] >= r })
	if i < len(cccRanges) && cccRanges[i][0] <= r {
		return cccRanges[i][2]
	}
	return 0
}

// nfd returns the canonical decomposition (Normalization Form D) of s.
// Invalid UTF-8 bytes are kept as U+FFFD, which is only ever compared.
func nfd(s string) string {
	if wspath.IsASCII(s) {
		return s
	}
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r >= hangulSBase && r < hangulSBase+hangulSCount:
			si := r - hangulSBase
			out = append(out, hangulLBase+si/hangulNCount, hangulVBase+(si%hangulNCount)/hangulTCount)
			if t := si % hangulTCount; t != 0 {
				out = append(out, hangulTBase+t)
			}
		default:
			if d, ok := nfdTable[r]; ok {
				out = append(out, []rune(d)...)
			} else {
				out = append(out, r)
			}
		}
	}
	// Canonical ordering: stable sort of every run of non-starters by class.
	for i := 0; i < len(out); {
		if combiningClass(out[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(out) && combiningClass(out[j]) != 0 {
			j++
		}
		run := out[i:j]
		sort.SliceStable(run, func(a, b int) bool { return combiningClass(run[a]) < combiningClass(run[b]) })
		i = j
	}
	return string(out)
}

// canonicallyEqual reports whether a and b are canonically equivalent, that
// is whether their NFC (equally, NFD) forms are equal.
func canonicallyEqual(a, b string) bool {
	if a == b {
		return true
	}
	if wspath.IsASCII(a) && wspath.IsASCII(b) {
		return false
	}
	return nfd(a) == nfd(b)
}

// jsIsSpace reports whether r is white space for JavaScript's trim() and
// \s: WhiteSpace and LineTerminator of ECMA-262 (which, unlike Go's
// unicode.IsSpace, includes U+FEFF and excludes U+0085).
func jsIsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF:
		return true
	}
	return r >= 0x2000 && r <= 0x200A
}

func jsTrim(s string) string      { return strings.TrimFunc(s, jsIsSpace) }
func jsTrimStart(s string) string { return strings.TrimLeftFunc(s, jsIsSpace) }

// jsLeadingSpace returns the leading white space of s (JavaScript /^\s*/).
func jsLeadingSpace(s string) string {
	return s[:len(s)-len(jsTrimStart(s))]
}

// utf16Len is the length of s in UTF-16 code units, what JavaScript's
// String.length and padEnd count.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
