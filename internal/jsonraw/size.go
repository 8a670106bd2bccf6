package jsonraw

import "unicode/utf8"

// maxEscapeGrowth is the most bytes AppendString writes for one input byte:
// a control byte and a byte of invalid UTF-8 become six (\u001f, \ufffd).
const maxEscapeGrowth = 6

// EscapedLen is the length of s as AppendString encodes it, quotes
// excluded. Strings short enough that even their worst case fits max are
// not scanned (the answer is then an upper bound, still <= max).
func EscapedLen(s string, max int) int {
	if len(s) <= max/maxEscapeGrowth {
		return len(s) * maxEscapeGrowth
	}
	n, _ := ClipEscaped(s, -1)
	return n
}

// ClipEscaped returns the escaped length of s (as EscapedLen, exact) when
// max < 0 or when all of s fits max; otherwise it returns the length of the
// longest prefix of s whose escaped form fits max, cut on a rune boundary,
// as cut (>= 0; n is then that prefix's escaped length).
func ClipEscaped(s string, max int) (n, cut int) {
	for i := 0; i < len(s); {
		plain := PlainPrefix(BytesOf(s[i:]), true)
		if max >= 0 && n+plain > max {
			return max, i + (max - n) // inside a run of ASCII: a rune boundary
		}
		n += plain
		if i += plain; i >= len(s) {
			break
		}
		c := s[i]
		w, size := 1, 1
		switch {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			w = 2
		case c < 0x20:
			w = 6
		case c >= utf8.RuneSelf:
			r, sz := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && sz == 1 {
				w = 6 // \ufffd
			} else {
				w, size = sz, sz
			}
		}
		if max >= 0 && n+w > max {
			return n, i
		}
		n += w
		i += size
	}
	return n, -1
}
