package grep

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPattern: any pattern either compiles or is refused with an error,
// never a panic; a compiled one gives the same answer on a line from Go's
// engine and from our own matcher wherever both apply.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{
		`foo`, `^a.b$`, `\bfoo\b`, `[a-z&&[^aeiou]]+`, `a[.[x]]b`, `(?x) a b # c`, `a{2}{1}`, `a++`,
		`\p{Greek}+`, `\p{sc=Latin}`, `(?i)straße`, `\u{e9}`, `(?-u)\xE9`, `[[:alpha:]]`, `x{2,1}`, `(`, `[`,
		`(?P<n>a)|b`, `\d+\s\w*`, `a|b|`, `(?s).`, `\Q`, `(?U)a+?`, `[^\n]`, `[\-]`, `a{1001}`,
	} {
		f.Add(s, "foo a.b straße 123 αβγ")
	}
	f.Fuzz(func(t *testing.T, pat, line string) {
		if len(pat) > 200 || strings.Contains(line, "\n") {
			return
		}
		for _, ci := range []bool{false, true} {
			m, err := compilePattern(pat, ci, false)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("empty error text")
				}
				continue
			}
			b := []byte(line)
			_, _, vmOK := m.vm.find(b, 0)
			if m.re != nil && !m.rawBytes && utf8.Valid(b) && (!m.unicodeWB || isASCII(b)) {
				if goOK := m.re.Match(b); goOK != vmOK {
					t.Fatalf("pattern %q (i=%v) on %q: go %v, vm %v (go regexp %s)", pat, ci, line, goOK, vmOK, m.re)
				}
			}
			if m.dfa != nil {
				if e, ok := m.dfa.firstMatchEnd(b, 0); ok && (e >= 0) != vmOK {
					t.Fatalf("pattern %q (i=%v) on %q: dfa %v, vm %v", pat, ci, line, e >= 0, vmOK)
				}
				// and over a buffer of lines: the line found is the first matching one
				buf := []byte("zz\n" + line + "\n" + line)
				ls, _, ok := m.nextLine(buf, 0)
				_, _, first := m.vm.find([]byte("zz"), 0)
				want := -1
				switch {
				case first:
					want = 0
				case vmOK:
					want = 3
				}
				if !ok {
					ls = -1
				}
				if ls != want {
					t.Fatalf("pattern %q (i=%v) on lines zz/%q: first matching line at %d, want %d", pat, ci, line, ls, want)
				}
			}
			if got := m.matchLine(b); got != vmOK {
				t.Fatalf("pattern %q (i=%v) on %q: matchLine %v, vm %v", pat, ci, line, got, vmOK)
			}
			if m.pre != nil && vmOK {
				if m.pre.find(b, 0) < 0 {
					t.Fatalf("pattern %q (i=%v) on %q: the prefilter misses a match", pat, ci, line)
				}
			}
		}
	})
}

// FuzzGitignore: any ignore line parses or is skipped without a panic,
// and the fast matchers agree with the general translation of the glob.
func FuzzGitignore(f *testing.F) {
	for _, s := range []string{"*.log", "!keep.log", "build/", "/rootonly.txt", "**/gen/*.txt", `\#hash`, "trail   ",
		"a[", "{a,b}", "a/**", "**", "*.{ts,js}", "[!a]x", `foo\ `, "#c", "a/**/b"} {
		f.Add(s, "a/b/keep.log")
	}
	f.Fuzz(func(t *testing.T, line, p string) {
		g, ok, msg := parseGitignoreLine(line)
		if !ok {
			if g != nil || (msg == "" && strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "#") && strings.TrimRightFunc(line, isRustWhitespace) != "") {
				t.Fatalf("line %q: not ok without a reason (%q)", line, msg)
			}
			return
		}
		got := g.match(p)
		if g.kind == gRegexp || !utf8.ValidString(line) || !utf8.ValidString(p) {
			// Go's regexp reads an invalid byte as U+FFFD; the fast
			// matchers compare bytes.
			return
		}
		// Recompile through the general path and compare.
		actual := strings.TrimPrefix(strings.TrimPrefix(line, "!"), "/")
		actual = strings.TrimRightFunc(actual, isRustWhitespace)
		actual = strings.TrimSuffix(actual, "/")
		if !strings.HasPrefix(strings.TrimPrefix(line, "!"), "/") && !strings.Contains(actual, "/") {
			actual = "**/" + actual
		}
		src, bad := globToRegexp(actual, true)
		if bad != "" {
			return
		}
		want := mustMatch(src, p)
		if got != want {
			t.Fatalf("line %q on %q: fast %v, regexp %v", line, p, got, want)
		}
	})
}

func mustMatch(src, p string) bool {
	re, err := regexpCompile(src)
	if err != nil {
		return false
	}
	return re.MatchString(p)
}

var regexpCompile = regexp.Compile
