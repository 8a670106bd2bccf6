package jsonraw

import (
	"encoding/json"
	"strings"
	"testing"
)

var validJSONCases = []string{
	``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`,
	`"x"`, `"\u00e9\n\"\\\/"`, `"\u00g0"`, `"\x"`, "\"a\tb\"", "\"\x7f\xff\"", `"`, `"\`, `"\u12"`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5e`, `1.5e+`, `1e5`, `1E-5`, `-12.34e+56`, `+1`, `0x1`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `true false`, `[true,false,null]`,
	` {"a" : [ 1 , { "b" : null } ] } `, `{"a":[1,{"b":null]}`, `[1]]`, `[[1]`, `{"a":{}}}`,
	"{\"a\":1}\n", "\t[]\r\n", `{"":""}`, `[""]`, `{"a":}`, `{"a"}`, `{,}`, `[1 2]`,
}

func TestValidJSONMatchesEncodingJSON(t *testing.T) {
	cases := append([]string{}, validJSONCases...)
	cases = append(cases, strings.Repeat("[", maxJSONDepth)+strings.Repeat("]", maxJSONDepth),
		strings.Repeat("[", maxJSONDepth+1)+strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat(`{"a":`, maxJSONDepth)+"1"+strings.Repeat("}", maxJSONDepth),
		strings.Repeat(`{"a":`, maxJSONDepth+1)+"1"+strings.Repeat("}", maxJSONDepth+1))
	for _, c := range cases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("%.60q: Valid %v, json.Valid %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validJSONCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Valid(data), json.Valid(data); got != want {
			t.Fatalf("%q: Valid %v, json.Valid %v", data, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"bench/write/w00.txt","content":"` +
		strings.Repeat(`0123456789abcdef\n`, 256) + `"}}}`)
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			Valid(msg)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			json.Valid(msg)
		}
	})
}

// FuzzPlainPrefix holds the eight-bytes-at-a-time scan to its byte-wise
// definition.
func FuzzPlainPrefix(f *testing.F) {
	for _, c := range []string{"", "abcdefgh", "abcdefg\"h", "0123456789abcdef\\n", "\x1f", "caf\xc3\xa9 au lait, s'il vous plait", "\x7f\x80\x20\x21\x22\x5b\x5c\x5d"} {
		f.Add([]byte(c), false)
		f.Add([]byte(c), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, ascii bool) {
		want := 0
		for want < len(b) {
			if c := b[want]; c == '"' || c == '\\' || c < 0x20 || (ascii && c >= 0x80) {
				break
			}
			want++
		}
		if got := PlainPrefix(b, ascii); got != want {
			t.Fatalf("PlainPrefix(%q, %v) = %d, want %d", b, ascii, got, want)
		}
	})
}

// BenchmarkAppendString encodes 1 KiB of text with a newline every 64
// bytes (a read_text_file result): PlainPrefix skips the plain runs.
func BenchmarkAppendString(b *testing.B) {
	s := strings.Repeat(strings.Repeat("x", 63)+"\n", 16)
	b.SetBytes(int64(len(s)))
	var buf []byte
	for b.Loop() {
		buf = AppendString(buf[:0], s)
	}
}
