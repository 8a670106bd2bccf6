package fstools

import (
	"testing"
	"time"
	"unicode/utf8"
)

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1: "1 B", 1023: "1023 B", 1024: "1.00 KB", 1152: "1.13 KB", 10000: "9.77 KB",
		2048: "2.00 KB", 12058: "11.78 KB", 1<<20 - 1: "1024.00 KB", 1 << 20: "1.00 MB",
		5 << 30: "5.00 GB", 3 << 40: "3.00 TB", 2048 << 40: "2048.00 TB",
	} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDecodeUTF8LikeWHATWG(t *testing.T) {
	for in, want := range map[string]string{
		"plain":             "plain",
		"\xef\xbb\xbfbom":   "\ufeffbom",
		"a\xffb":            "a\ufffdb",
		"\xe2\x82":          "\ufffd",             // truncated sequence: one replacement
		"\xe2\x82x":         "\ufffdx",            // maximal subpart, then x
		"\xed\xa0\x80":      "\ufffd\ufffd\ufffd", // surrogate: every byte
		"\xf0\x9f\x98\x80!": "😀!",
		"\xc0\xaf":          "\ufffd\ufffd",
		"\xf4\x90\x80\x80":  "\ufffd\ufffd\ufffd\ufffd",
	} {
		got := decodeUTF8([]byte(in))
		if got != want || !utf8.ValidString(got) {
			t.Errorf("decodeUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFileURL(t *testing.T) {
	for in, want := range map[string]string{
		"/w/a b.txt":     "file:///w/a%20b.txt",
		"/w/ü.txt":       "file:///w/%C3%BC.txt",
		"/w/#?%.txt":     "file:///w/%23%3F%25.txt",
		"/w/a-b_c~(1)@x": "file:///w/a-b_c%7E(1)@x", // Node 20.20 encodes ~
	} {
		if got := fileURL(in); got != want {
			t.Errorf("fileURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCanonicallyEqual(t *testing.T) {
	cases := []struct {
		a, b string
		eq   bool
	}{
		{"café", "cafe\u0301", true},
		{"\u212B", "\u00C5", true},
		{"\u212B", "A\u030A", true},
		{"\u1E69", "s\u0323\u0307", true}, // s with dot below and above: reordering
		{"s\u0307\u0323", "s\u0323\u0307", true},
		{"한", "\u1112\u1161\u11AB", true},
		{"cafe", "café", false},
		{"K", "k", false},
	}
	for _, c := range cases {
		if got := canonicallyEqual(c.a, c.b); got != c.eq {
			t.Errorf("canonicallyEqual(%q, %q) = %v", c.a, c.b, got)
		}
	}
}

func TestJSDateString(t *testing.T) {
	tm := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	old := time.Local
	time.Local = time.UTC
	defer func() { time.Local = old }()
	if got, want := jsDateString(tm), "Tue Jan 02 2024 03:04:05 GMT+0000 (Coordinated Universal Time)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	time.Local = time.FixedZone("CET", 3600)
	if got, want := jsDateString(tm), "Tue Jan 02 2024 04:04:05 GMT+0100 (CET)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBraceExpand(t *testing.T) {
	for in, want := range map[string][]string{
		"a{b,c}d":   {"abd", "acd"},
		"{a,{b,c}}": {"a", "b", "c"},
		"x{1..3}":   {"x1", "x2", "x3"},
		"{c..a}":    {"c", "b", "a"},
		"a{b}c":     {"a{b}c"},
		"\\{a,b}":   {"\\{a,b}"},
	} {
		got := braceExpand(in)
		if len(got) != len(want) {
			t.Errorf("braceExpand(%q) = %q, want %q", in, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("braceExpand(%q) = %q, want %q", in, got, want)
				break
			}
		}
	}
}
