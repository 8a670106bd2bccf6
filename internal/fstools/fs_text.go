package fstools

import (
	"strings"
	"unicode/utf8"
	"unsafe"
)

// decodeUTF8 decodes b the way Node's Buffer.toString("utf-8") (the WHATWG
// decoder) does: every maximal invalid subsequence becomes one U+FFFD, and
// a byte order mark is kept.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return replaceInvalidUTF8(b)
}

// decodeUTF8Owned is decodeUTF8 for a buffer the caller hands over and
// never touches again: valid UTF-8 becomes the string without a copy.
func decodeUTF8Owned(b []byte) string {
	if utf8.Valid(b) {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	return replaceInvalidUTF8(b)
}

// replaceInvalidUTF8 is decodeUTF8 for b that is not valid UTF-8.
func replaceInvalidUTF8(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b) + 16)
	for i := 0; i < len(b); {
		c := b[i]
		if c < 0x80 {
			sb.WriteByte(c)
			i++
			continue
		}
		var need int
		lower, upper := byte(0x80), byte(0xBF)
		switch {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c >= 0xE0 && c <= 0xEF:
			need = 2
			if c == 0xE0 {
				lower = 0xA0
			} else if c == 0xED {
				upper = 0x9F
			}
		case c >= 0xF0 && c <= 0xF4:
			need = 3
			if c == 0xF0 {
				lower = 0x90
			} else if c == 0xF4 {
				upper = 0x8F
			}
		default:
			sb.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		ok := true
		for k := 0; k < need; k++ {
			if j >= len(b) || b[j] < lower || b[j] > upper {
				ok = false
				break
			}
			lower, upper = 0x80, 0xBF
			j++
		}
		if !ok {
			sb.WriteRune(utf8.RuneError)
			i = j
			continue
		}
		sb.Write(b[i:j])
		i = j
	}
	return sb.String()
}

// normalizeLineEndings turns CRLF into LF, as the official server does for
// edits and tails.
func normalizeLineEndings(s string) string {
	if !strings.Contains(s, "\r\n") {
		return s
	}
	return strings.ReplaceAll(s, "\r\n", "\n")
}
