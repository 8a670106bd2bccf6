package jsonraw

import (
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote decodes the JSON string literal raw (quotes included) exactly as
// encoding/json does, without reflection: escapes are decoded, a lone
// surrogate and every invalid UTF-8 byte become U+FFFD. It reports false
// for anything that is not one well-formed string literal.
func Unquote(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	in := raw[1 : len(raw)-1]
	i := PlainPrefix(in, true) // the common case: nothing to decode
	if i == len(in) {
		return in, true
	}
	out := make([]byte, i, len(in)+8)
	copy(out, in[:i])
	for i < len(in) {
		n := PlainPrefix(in[i:], true)
		out = append(out, in[i:i+n]...)
		if i += n; i == len(in) {
			break
		}
		c := in[i]
		switch {
		case c == '"' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, in[i:i+size]...)
			}
			i += size
		default: // backslash
			if i+1 >= len(in) {
				return nil, false
			}
			e := in[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(in, i)
				if !ok {
					return nil, false
				}
				i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(in, i+2); ok && i+1 < len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							break
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				return nil, false
			}
		}
	}
	return out, true
}

// hex4 decodes the four hex digits at in[i:].
func hex4(in []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
