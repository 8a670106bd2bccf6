package jsonraw

import "bytes"

// A small scanner for valid JSON: a caller validates the whole input with
// Valid first (a fast, reflection-free pass) and then slices out the
// members it needs; strings are decoded by Unquote. Unlike encoding/json,
// member names match case-sensitively, as they do in the official
// (zod-based) MCP SDK.

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipSpace returns the index of the first byte at or after i that is not
// white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) && IsSpace(data[i]) {
		i++
	}
	return i
}

// SkipString returns the index after the string starting at data[i]=='"'
// (data is known to be valid JSON, so only quotes and backslashes matter):
// it jumps from quote to quote with bytes.IndexByte, and a quote ends the
// string unless an odd run of backslashes precedes it.
func SkipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			break
		}
		i += q
		n := 0
		for n < i && data[i-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
	return len(data)
}

// SkipValue returns the index after the JSON value starting at data[i]
// (data is known to be valid JSON).
func SkipValue(data []byte, i int) int {
	if i >= len(data) {
		return i
	}
	switch data[i] {
	case '"':
		return SkipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				i = SkipString(data, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	default:
		for i < len(data) {
			switch data[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// ScanObject calls fn with each member of the valid JSON object data: the
// decoded name (aliasing data when it has no escapes) and the raw value,
// whitespace trimmed. It returns false if data is not an object.
func ScanObject(data []byte, fn func(key, val []byte)) bool {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = SkipSpace(data, i+1)
	for i < len(data) && data[i] == '"' {
		end := SkipString(data, i)
		key, ok := Unquote(data[i:end])
		if !ok {
			return false
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = SkipSpace(data, i+1)
		vend := SkipValue(data, i)
		fn(key, data[i:vend])
		i = SkipSpace(data, vend)
		if i < len(data) && data[i] == ',' {
			i = SkipSpace(data, i+1)
		}
	}
	return true
}

// String is Unquote returning a string.
func String(raw []byte) (string, bool) {
	b, ok := Unquote(raw)
	return string(b), ok
}
