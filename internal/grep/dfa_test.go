package grep

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// matchingLines lists the starts of the matching lines of buf, found
// through nextLine (the DFA where it answers).
func matchingLines(m *matcher, buf []byte) []int {
	var out []int
	for pos := 0; pos < len(buf); {
		ls, le, ok := m.nextLine(buf, pos)
		if !ok {
			break
		}
		out = append(out, ls)
		pos = le + 1
	}
	return out
}

// dfaLines lists them through the DFA alone; false if it declined.
func dfaLines(d *dfa, buf []byte) ([]int, bool) {
	var out []int
	for pos := 0; pos < len(buf); {
		e, ok := d.firstMatchEnd(buf, pos)
		if !ok {
			return nil, false
		}
		if e < 0 || (e == len(buf) && buf[len(buf)-1] == '\n') {
			break
		}
		ls := pos + bytes.LastIndexByte(buf[pos:e], '\n') + 1
		out = append(out, ls)
		le := bytes.IndexByte(buf[e:], '\n')
		if le < 0 {
			break
		}
		pos = e + le + 1
	}
	return out, true
}

// vmLines lists them through the VM, line by line.
func vmLines(m *matcher, buf []byte) []int {
	var out []int
	for pos := 0; pos < len(buf); {
		end := len(buf)
		if i := strings.IndexByte(string(buf[pos:]), '\n'); i >= 0 {
			end = pos + i
		}
		if _, _, ok := m.vm.find(buf[pos:end], 0); ok {
			out = append(out, pos)
		}
		pos = end + 1
	}
	return out
}

func randomLines(rng *rand.Rand, alphabet []string, lines, width int) []byte {
	var b strings.Builder
	for range lines {
		for range rng.IntN(width) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// TestDFAAgreesWithVM: the lines the DFA finds in a buffer are the ones
// the VM finds line by line, with the cache at its normal size and so
// small that it is cleared all the time.
func TestDFAAgreesWithVM(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", "A", "Z", "1", "9", "_", " ", "-", "é", "β", "\xff", "\t", "\u212a", "ſ", "k", "s"}
	patterns := []string{
		`[A-Z][a-z]+[0-9]{3}`, `a+b`, `^ab`, `b$`, `\bab\b`, `\Ba\B`, `(?-u:\b)a`, `[^a]c`, `^$`, `a|b1`,
		`(a|b)*a(a|b){5}`, `\w+\s\w`, `(?i)AB`, `é|β`, `[^\x00-\x7F]`, `(?-u)\xFF`, `.c.`, `^[a-c]+$`, `\d\d`, `Z\b`,
		`\p{Greek}`, `(?-u:\w)é`, `a{3,}`, `[[:upper:]][[:digit:]]`, `a.b`, `A.{2}9`, `(?i)k.`, `(?i)s\d`, `(?i)ks`, `(?i)s[a-c]`, `[^a-z]{2}`,
		`(?-u:\b)Z.`, `^.{3}$`, `^[A-Z][a-z]+\d`, `^\s*[a-c]+$`, `^a|b9`, `^(a|b)*a(a|b){3}`, `(?m:^)c`, `\Ab`,
	}
	clears := 0
	for _, pat := range patterns {
		for _, ci := range []bool{false, true} {
			m, err := compilePattern(pat, ci, false)
			if err != nil {
				t.Fatalf("%s: %v", pat, err)
			}
			for _, budget := range []int{dfaCacheBytes, 1 << 10, 400} {
				c := m.clone()
				if c.dfa == nil {
					t.Fatalf("%s: no DFA", pat)
				}
				c.dfa.budget = budget
				c.dfa.reset()
				answered := 0
				for round := range 20 {
					buf := randomLines(rng, alphabet, 50, 30)
					if round%2 == 1 {
						buf = buf[:len(buf)-1] // no final newline
					}
					want := vmLines(c, buf)
					if got := matchingLines(c, buf); !slices.Equal(got, want) {
						t.Fatalf("%s (i=%v, cache %d) on %q:\n got %v\nwant %v", pat, ci, budget, buf, got, want)
					}
					got, ok := dfaLines(c.dfa, buf)
					if ok {
						answered++
					}
					if ok && !slices.Equal(got, want) {
						t.Fatalf("%s (i=%v, cache %d) on %q: DFA\n got %v\nwant %v", pat, ci, budget, buf, got, want)
					}
				}
				clears += c.dfa.clears
				if answered == 0 && budget == dfaCacheBytes {
					t.Errorf("%s (i=%v, cache %d): the DFA never answered", pat, ci, budget)
				}
			}
		}
	}
	if clears == 0 {
		t.Error("the small cache was never cleared")
	}
}

// TestDFACacheBounded: a pattern whose DFA is exponential in size keeps
// the cache within its bound, gives up on the DFA (the other engines
// answer) and still finds the right lines.
func TestDFACacheBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// (a|b)*a(a|b){20} without a literal for the prefilter to find
	const pat = `[a-f]*[a-e][a-f]{20}`
	alphabet := []string{"a", "b", "c", "d", "e", "f"}
	m, err := compilePattern(pat, false, false)
	if err != nil {
		t.Fatal(err)
	}
	m = m.clone()
	maxMem := 0
	for range 10 {
		buf := randomLines(rng, alphabet, 200, 400)
		got := matchingLines(m, buf)
		maxMem = max(maxMem, m.dfa.mem)
		if want := vmLines(m, buf); !slices.Equal(got, want) {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	}
	if !m.dfa.failed {
		t.Error("the DFA did not give up")
	}
	if limit := dfaCacheBytes + 64<<10; maxMem > limit {
		t.Errorf("cache held %d bytes, bound %d", maxMem, limit)
	}
	// Through a search, with this pattern and with the one that has a
	// literal for the prefilter (the DFA then checks the candidate lines):
	// it finishes (the search's own deadline is the guard) with the count
	// the VM gives.
	for _, c := range []struct {
		pat      string
		alphabet []string
	}{{pat, alphabet}, {`(a|b)*a(a|b){20}`, []string{"a", "b"}}} {
		text := randomLines(rng, c.alphabet, 2000, 400)
		mc, err := compilePattern(c.pat, false, false)
		if err != nil {
			t.Fatal(err)
		}
		want := len(vmLines(mc, text))
		dir := t.TempDir()
		write(t, dir+"/x.txt", string(text))
		res, err := Search(t.Context(), openRoot(t, dir), Options{Pattern: c.pat, Mode: Count})
		if err != nil || res.Stopped != "" || len(res.Files) != 1 || res.Files[0].Count != want {
			t.Fatalf("%s: %v %+v, want %d lines", c.pat, err, res, want)
		}
	}
}
