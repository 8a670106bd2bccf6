package fstools

import (
	"slices"
	"strings"
	"testing"
)

// The glob compiler was made linear for hostile patterns (literal brace
// pairs skipped in one scan, bracket scans memoised). These fuzz targets
// check that it still gives what the straightforward versions below (the
// previous implementation) give, and that expansion stays within its bounds.

// refBraceExpand is the previous, recursive brace expansion (quadratic on
// "{}{}{}…", otherwise the reference).
func refBraceExpand(p string, budget *int) []string {
	if *budget <= 0 {
		return nil
	}
	open, close := findBraces(p, 0)
	if open < 0 {
		*budget--
		return []string{p}
	}
	pre, body, post := p[:open], p[open+1:close], p[close+1:]
	var alts []string
	if parts := splitTopLevel(body); len(parts) > 1 {
		alts = parts
	} else if seq, ok := braceSequence(body); ok {
		alts = seq
	} else {
		var out []string
		for _, rest := range refBraceExpand(post, budget) {
			out = append(out, pre+"{"+body+"}"+rest)
		}
		return out
	}
	var out []string
	for _, alt := range alts {
		if *budget <= 0 {
			break
		}
		out = append(out, refBraceExpand(pre+alt+post, budget)...)
	}
	return out
}

// refCompileClass is the previous bracket parser, without the memo.
func refCompileClass(rs []rune, i int) (globTok, int, bool) {
	cls := &globClass{}
	tok := globTok{kind: '[', cls: cls}
	j := i + 1
	if j < len(rs) && (rs[j] == '!' || rs[j] == '^') {
		tok.neg = true
		j++
	}
	first := true
	for ; j < len(rs); j++ {
		r := rs[j]
		if r == ']' && !first {
			return tok, j, len(cls.ranges)+len(cls.named) > 0
		}
		first = false
		if r == '[' && j+1 < len(rs) && rs[j+1] == ':' {
			if end := strings.Index(string(rs[j+2:]), ":]"); end >= 0 {
				name := string(rs[j+2:])[:end]
				if f, ok := posixClasses[name]; ok {
					cls.named = append(cls.named, f)
					j += 2 + len([]rune(name)) + 1
					continue
				}
			}
		}
		if r == '\\' && j+1 < len(rs) {
			j++
			r = rs[j]
		}
		lo, hi := r, r
		if j+2 < len(rs) && rs[j+1] == '-' && rs[j+2] != ']' {
			hi = rs[j+2]
			if hi == '\\' && j+3 < len(rs) {
				hi = rs[j+3]
				j++
			}
			j += 2
		}
		cls.ranges = append(cls.ranges, [2]rune{lo, hi})
	}
	return tok, 0, false
}

func refCompileSegment(p string) []globTok {
	rs := []rune(p)
	var toks []globTok
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			toks = append(toks, globTok{kind: 'l', r: rs[i]})
		case '?':
			toks = append(toks, globTok{kind: '?'})
		case '*':
			if len(toks) == 0 || toks[len(toks)-1].kind != '*' {
				toks = append(toks, globTok{kind: '*'})
			}
		case '[':
			tok, next, ok := refCompileClass(rs, i)
			if !ok {
				toks = append(toks, globTok{kind: 'l', r: '['})
				continue
			}
			toks = append(toks, tok)
			i = next
		default:
			toks = append(toks, globTok{kind: 'l', r: r})
		}
	}
	return toks
}

func sameToks(a, b []globTok) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.kind != y.kind || x.r != y.r || x.neg != y.neg || (x.cls == nil) != (y.cls == nil) {
			return false
		}
		if x.cls != nil && (!slices.Equal(x.cls.ranges, y.cls.ranges) || len(x.cls.named) != len(y.cls.named)) {
			return false
		}
	}
	return true
}

// FuzzBraceExpandBounded: expansion matches the reference and never goes
// past maxBraceExpansions patterns or maxBraceBytes bytes.
func FuzzBraceExpandBounded(f *testing.F) {
	for _, s := range []string{"{a,b}{c,d}", "{}{a,b}", "x{a}y{1..3}", "{a,{b,c}}d", `\{a,b}`, "{a,b}{}" + strings.Repeat("{x,y}", 12),
		"{1..2000}", "{a..e..2}", "}{a,b}{", "{{}}{,}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got := braceExpand(p)
		total := 0
		for _, g := range got {
			total += len(g)
		}
		if len(got) > maxBraceExpansions || total > maxBraceBytes {
			t.Fatalf("%q expands to %d patterns, %d bytes", p, len(got), total)
		}
		if len(p) > 256 {
			return
		}
		budget := maxBraceExpansions
		want := refBraceExpand(p, &budget)
		wantBytes := 0
		for _, w := range want {
			wantBytes += len(w)
		}
		if wantBytes <= maxBraceBytes/2 && !slices.Equal(got, want) {
			t.Fatalf("braceExpand(%q) = %q, reference %q", p, got, want)
		}
	})
}

// FuzzCompileSegmentMatchesReference: the memoised bracket scan compiles
// every segment as the plain one does.
func FuzzCompileSegmentMatchesReference(f *testing.F) {
	for _, s := range []string{"[a-z]*", "[[:alpha:]x]", "[!]]", `[\]]`, "[[[[", "[a-\\]]", "[[:alpha", "[x[:digit:]][", "[]a]", "[^-]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 512 {
			return
		}
		if got, want := compileSegment(p), refCompileSegment(p); !sameToks(got, want) {
			t.Fatalf("compileSegment(%q) differs from the reference", p)
		}
	})
}

// refIndexTrimmedLines is the previous window-by-window search.
func refIndexTrimmedLines(lines, pat []string) int {
	for i := 0; i+len(pat) <= len(lines); i++ {
		ok := true
		for j, p := range pat {
			if jsTrim(p) != jsTrim(lines[i+j]) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

// FuzzIndexTrimmedLines: the KMP search finds the same first window as the
// quadratic one.
func FuzzIndexTrimmedLines(f *testing.F) {
	f.Add("a\n a\na\nb\n", "a\nb")
	f.Add("x\n\n\ny", "\n")
	f.Add(" a\na\n a\na\nb", "a\na\nb")
	f.Fuzz(func(t *testing.T, content, old string) {
		lines, pat := strings.Split(content, "\n"), strings.Split(old, "\n")
		if got, want := indexTrimmedLines(lines, pat), refIndexTrimmedLines(lines, pat); got != want {
			t.Fatalf("indexTrimmedLines(%q, %q) = %d, want %d", content, old, got, want)
		}
	})
}

// TestSearchEntriesAreBounded: search_files stops after maxWalkEntries
// entries with an error (lowered here to keep the test small).
func TestSearchEntriesAreBounded(t *testing.T) {
	dir, tools := newTestTools(t)
	files := map[string]string{}
	for i := 0; i < 30; i++ {
		files["d"+string(rune('a'+i%26))+"/"+strings.Repeat("x", i+1)] = ""
	}
	writeFiles(t, dir, files)
	defer func(n int) { maxWalkEntries = n }(maxWalkEntries)
	maxWalkEntries = 20
	text, isErr := call(t, tools, "search_files", map[string]any{"path": ".", "pattern": "**/none"})
	if !isErr || !strings.Contains(text, "Too many entries: search_files visits at most 20 entries") {
		t.Errorf("search over the bound: %v %q", isErr, text)
	}
	maxWalkEntries = 1000
	if text, isErr := call(t, tools, "search_files", map[string]any{"path": ".", "pattern": "**/none"}); isErr || text != "No matches found" {
		t.Errorf("search within the bound: %v %q", isErr, text)
	}
}
