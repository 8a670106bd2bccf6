package jsonraw

import (
	"math/rand"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapedOf is AppendString's output for s without its quotes: what the
// size functions must agree with.
func escapedOf(s string) string {
	b := AppendString(nil, s)
	return string(b[1 : len(b)-1])
}

// exactLen is the escaped length of s, always scanned.
func exactLen(s string) int {
	n, _ := ClipEscaped(s, -1)
	return n
}

// checkClip checks ClipEscaped(s, max) against AppendString: the prefix
// fits, is cut on a rune boundary, and one more rune would not fit.
func checkClip(t *testing.T, s string, max int) {
	t.Helper()
	n, cut := ClipEscaped(s, max)
	full := len(escapedOf(s))
	if cut < 0 {
		if full > max || n != full {
			t.Fatalf("ClipEscaped(%.40q, %d) = (%d, -1), escaped length %d", s, max, n, full)
		}
		return
	}
	prefix := s[:cut]
	if got := len(escapedOf(prefix)); got != n || n > max {
		t.Fatalf("ClipEscaped(%.40q, %d) = (%d, %d): prefix escapes to %d", s, max, n, cut, got)
	}
	if cut < len(s) && !utf8.RuneStart(s[cut]) && utf8.ValidString(s) {
		t.Fatalf("ClipEscaped(%.40q, %d) cut inside a rune at %d", s, max, cut)
	}
	_, size := utf8.DecodeRuneInString(s[cut:])
	if cut < len(s) && len(escapedOf(s[:cut+size])) <= max {
		t.Fatalf("ClipEscaped(%.40q, %d) cut at %d, but the next rune fits too", s, max, cut)
	}
}

func TestClipEscaped(t *testing.T) {
	var ctl strings.Builder
	for c := 0; c < 0x20; c++ {
		ctl.WriteByte(byte(c))
	}
	cases := []string{
		"",
		"plain ascii text",
		strings.Repeat(`"`, 100),
		strings.Repeat(`\`, 100),
		strings.Repeat("\x00", 100), // six bytes each
		strings.Repeat(ctl.String(), 10),
		strings.Repeat("é", 100), // two-byte runes
		strings.Repeat("€", 100), // three-byte runes
		strings.Repeat("😀", 100), // four-byte runes
		"ab\xffcd\xfe\xfd",       // invalid bytes: \ufffd each
		"x€\x01\"😀\n\u2028\x7f",  // a mix; U+2028 and DEL are not escaped
	}
	for _, s := range cases {
		if got, want := exactLen(s), len(escapedOf(s)); got != want {
			t.Errorf("ClipEscaped(%.40q, -1) = %d, want %d", s, got, want)
		}
		for max := 0; max <= len(escapedOf(s))+2; max++ {
			checkClip(t, s, max)
		}
		if n := EscapedLen(s, 1<<20); n < len(escapedOf(s)) {
			t.Errorf("EscapedLen(%.40q) = %d, below the real %d", s, n, len(escapedOf(s)))
		}
	}
}

// TestClipEscapedRandom checks the bound on random mixes of the bytes that
// escape differently, at random budgets.
func TestClipEscapedRandom(t *testing.T) {
	pieces := []string{"a", "\"", "\\", "\n", "\x01", "é", "€", "😀", "\xff", "abcdefghijklmnop"}
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := r.Intn(60); n > 0; n-- {
			b.WriteString(pieces[r.Intn(len(pieces))])
		}
		s := b.String()
		checkClip(t, s, r.Intn(len(escapedOf(s))+8))
	}
}

func FuzzClipEscaped(f *testing.F) {
	f.Add("a\"b\\c\x00é€😀\xff", 7)
	f.Add(strings.Repeat("\x1f", 40), 13)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		checkClip(t, s, max)
	})
}
