package jsonraw

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendString: the hand-written string encoder always yields JSON
// that decodes back to the input (invalid UTF-8 aside).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c", "\x00\x1f\u2028", "é€😀", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("invalid JSON %q for %q: %v", b, s, err)
		}
		want, _ := json.Marshal(s)
		var w string
		json.Unmarshal(want, &w)
		if back != w {
			t.Fatalf("round trip %q -> %q, want %q", s, back, w)
		}
	})
}

// FuzzUnquoteMatchesJSON: Unquote decodes every string literal exactly as
// encoding/json does and refuses what it refuses.
func FuzzUnquoteMatchesJSON(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\"c\\d\/e\u00e9\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`,
		"\"\xff\xfe\"", `"\x"`, `"unterminated`, `"a"b"`, "\"tab\there\"", `"\u12"`, `"\uD83D\uDE00"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(bytes.TrimSpace(raw)) != len(raw) {
			return // values reach Unquote trimmed
		}
		got, ok := Unquote(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		if err != nil || len(raw) == 0 || raw[0] != '"' {
			if ok && err != nil && len(raw) > 0 && raw[0] == '"' {
				t.Fatalf("%q: encoding/json refuses it (%v), Unquote gives %q", raw, err, got)
			}
			return
		}
		if !ok || string(got) != want {
			t.Fatalf("%q: Unquote %q (%v), encoding/json %q", raw, got, ok, want)
		}
	})
}
