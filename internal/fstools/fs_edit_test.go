package fstools

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestEditMatchesReference replays tools_edit_corpus.json: random files
// (LF, CRLF, mixed and lone-CR endings; spaces, tabs and no-break spaces)
// and edits run through the official server's applyFileEdits of each
// era (edit_gen_corpus.mjs): the diff and the bytes written must be the
// same, or the error.
func TestEditMatchesReference(t *testing.T) {
	type outcome struct{ Diff, Written, Error string }
	var cases []struct {
		Content string
		Edits   []struct{ OldText, NewText string }
		R2025   outcome `json:"2025"`
		R2026   outcome `json:"2026"`
	}
	loadJSON(t, "tools_edit_corpus.json", &cases)
	for i, c := range cases {
		edits := make([]edit, len(c.Edits))
		for j, e := range c.Edits {
			edits[j] = edit{oldText: e.OldText, newText: e.NewText}
		}
		for _, r := range []struct {
			rule editRule
			want outcome
		}{{editRule2025, c.R2025}, {editRule2026, c.R2026}} {
			written, patch, err := editText(context.Background(), "/w/f.txt", c.Content, edits, 1<<20, r.rule)
			var got outcome
			if err != nil {
				got.Error = err.Error()
			} else {
				got.Diff, got.Written = fenceDiff(patch), written
			}
			if got != r.want {
				t.Errorf("case %d, rule %d: content %q edits %q\n got: %q\nwant: %q", i, r.rule, c.Content, c.Edits, got, r.want)
			}
		}
	}
}

func TestEditRules(t *testing.T) {
	type ed = edit
	cases := []struct {
		name    string
		rule    editRule
		content string
		edits   []edit
		want    string // the bytes written
	}{
		{"spaces keep relative indent", editRule2026,
			"def f(x):\n    if x:\n        print(x)\n    return x\n",
			[]ed{{"if x:\n    print(x)", "if x:\n    print(x + 1)\n    log(x)"}},
			"def f(x):\n    if x:\n        print(x + 1)\n        log(x)\n    return x\n"},
		{"2025: later lines relative to the first line", editRule2025,
			"def f(x):\n    if x:\n        print(x)\n    return x\n",
			[]ed{{"if x:\n    print(x)", "if x:\n    print(x + 1)\n    log(x)"}},
			"def f(x):\n    if x:\n    print(x + 1)\n    log(x)\n    return x\n"},
		{"dedent stops at no indentation", editRule2026,
			"a\n  b\nc\n",
			[]ed{{"      b", "b\n    d"}},
			"a\nb\nd\nc\n"},
		{"extra lines placed like the last oldText line, in the file's unit", editRule2026,
			"x\n\t\ty\nz\n",
			[]ed{{" x\n y", "x\n y\n  w\n y2"}},
			"x\n\t\ty\n\t\t\tw\n\t\ty2\nz\n"},
		{"space-indented edit into a tab file", editRule2026,
			"\tif x:\n\t\ty = 1\n",
			[]ed{{"if x:\n    y = 1", "if x:\n    y = 1\n        z = 2\nw = 3"}},
			"\tif x:\n\t\ty = 1\n\t\t\tz = 2\n\tw = 3\n"},
		{"tab-indented edit into a space file", editRule2026,
			"  a\n    b\n",
			[]ed{{"a\n\tb", "a\n\tb\n\t\tc\nd"}},
			"  a\n    b\n      c\n  d\n"},
		{"partial levels truncate toward zero", editRule2026,
			"\ta\n\t\tb\n",
			[]ed{{"a\n    b", "a\n    b\n       c\n  d"}},
			"\ta\n\t\tb\n\t\t\tc\n\td\n"},
		{"blank replacement lines kept as given", editRule2026,
			"  a\n  b\n",
			[]ed{{"a\nb", "a\n   \nb"}},
			"  a\n   \n  b\n"},
		{"no-break space counts as one character", editRule2026,
			"\u00a0\u00a0a\n\u00a0\u00a0b\n",
			[]ed{{"a\nb", "a\n b2\n   b3"}},
			"\u00a0\u00a0a\n\u00a0\u00a0 b2\n\u00a0\u00a0   b3\n"},
		{"CRLF file stays CRLF", editRule2026,
			"first\r\nsecond\r\nthird\r\n",
			[]ed{{"second\r\n", "SECOND\r\n"}},
			"first\r\nSECOND\r\nthird\r\n"},
		{"2025: CRLF file written with LF", editRule2025,
			"first\r\nsecond\r\nthird\r\n",
			[]ed{{"second\r\n", "SECOND\r\n"}},
			"first\nSECOND\nthird\n"},
		{"LF newText into a CRLF file", editRule2026,
			"a\r\nb\r\n",
			[]ed{{"b", "x\ny"}},
			"a\r\nx\r\ny\r\n"},
		{"CRLF newText into an LF file", editRule2026,
			"a\nb\n",
			[]ed{{"b", "x\r\ny"}},
			"a\nx\ny\n"},
		{"mixed, mostly LF: written LF", editRule2026,
			"a\r\nb\nc\n",
			[]ed{{"b", "B"}},
			"a\nB\nc\n"},
		{"mixed, mostly CRLF: written CRLF", editRule2026,
			"a\r\nb\r\nc\n",
			[]ed{{"b", "B"}},
			"a\r\nB\r\nc\r\n"},
		{"a tie is LF", editRule2026,
			"a\r\nb\n",
			[]ed{{"b", "B"}},
			"a\nB\n"},
		{"a lone CR is no line break", editRule2026,
			"a\rb\r\n",
			[]ed{{"b", "B"}},
			"a\rB\r\n"},
		{"CRLF with a whitespace-tolerant match", editRule2026,
			"\tif x:\r\n\t\ty\r\n",
			[]ed{{"if x:\r\n  y", "if x:\r\n  y\r\n    z"}},
			"\tif x:\r\n\t\ty\r\n\t\t\tz\r\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, _, err := editText(context.Background(), "/w/f", c.content, c.edits, 1<<20, c.rule)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestEditReindentBounded: a whitespace-tolerant edit whose re-indented
// lines would multiply a wide file indentation (by the edit's levels in
// the 2026 rule, by its line count in the 2025 one) fails as too large
// before it builds them: it allocates a small multiple of its input, not
// the n*n bytes of the lines.
func TestEditReindentBounded(t *testing.T) {
	const n = 20000
	wide := strings.Repeat(" ", n)
	cases := []struct {
		name    string
		rule    editRule
		content string
		e       edit
	}{
		// One tab of the edit is one file unit of n spaces: n levels.
		{"2026 levels", editRule2026, wide + "x\n",
			edit{"\tx", "\t" + strings.Repeat("\t", n) + "y"}},
		// Every later line gets the first line's n spaces.
		{"2025 lines", editRule2025, wide + "x\n" + strings.Repeat("y\n", n),
			edit{"x" + strings.Repeat("\n y", n), "x" + strings.Repeat("\n y", n)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			limit := int64(len(c.content)) * 4
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := editText(context.Background(), "/w/f", c.content, []edit{c.e}, limit, c.rule)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.HasPrefix(err.Error(), "Edited file too large") {
				t.Fatalf("err = %v, want too large", err)
			}
			if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
				t.Errorf("allocated %d bytes for a %d-byte file", a, len(c.content))
			}
		})
	}
}

// FuzzEditText: no input panics; what is written stays within the limit;
// the 2026 rule writes a predominantly CRLF file with CRLF breaks only;
// and an edit replacing a piece of the file with itself changes nothing
// but the line endings (all LF in the 2025 rule, the predominant one in
// the 2026 rule).
func FuzzEditText(f *testing.F) {
	f.Add("def f(x):\r\n    if x:\r\n        y\r\n", "if x:\n    y", "if x:\n    y\n    z", 3, true)
	f.Add("\ta\n\t\tb\n", "a\n    b", "a\n    b\n       c\n  d", 0, true)
	f.Add("  a\n    b\n", "a\n\tb", "a\n\tb\n\t\tc\nd", 2, false)
	f.Add("a\rb\r\n\u00a0c\n", "b", "B\r", 1, true)
	f.Fuzz(func(t *testing.T, content, old, new string, cut int, modern bool) {
		rule := editRule2025
		if modern {
			rule = editRule2026
		}
		content = decodeUTF8([]byte(content))
		limit := int64(2*len(content) + 64)
		written, _, err := editText(context.Background(), "/w/f", content, []edit{{old, new}}, limit, rule)
		if err == nil {
			if int64(len(written)) > limit {
				t.Fatalf("wrote %d bytes, limit %d", len(written), limit)
			}
			if rule == editRule2026 && predominantlyCRLF(content) && strings.Count(written, "\n") != strings.Count(written, "\r\n") {
				t.Fatalf("CRLF file written with a bare LF: %q", written)
			}
		}
		norm := normalizeLineEndings(content)
		piece := norm[:max(0, cut)%(len(norm)+1)]
		written, _, err = editText(context.Background(), "/w/f", content, []edit{{piece, piece}}, limit, rule)
		want := norm
		if rule == editRule2026 && predominantlyCRLF(content) {
			want = strings.ReplaceAll(norm, "\n", "\r\n")
		}
		if err != nil || written != want {
			t.Fatalf("identity edit %q of %q: wrote %q, %v; want %q", piece, content, written, err, want)
		}
	})
}
