package fstools

import (
	"encoding/json"
	"os"
	"sort"
	"testing"
)

func loadJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestDiffMatchesJsdiff compares unifiedPatch with jsdiff 8.0.4's
// createTwoFilesPatch on 400 random text pairs (tools_gen_corpus.mjs).
func TestDiffMatchesJsdiff(t *testing.T) {
	var cases []struct{ Old, New, Patch string }
	loadJSON(t, "tools_diff_corpus.json", &cases)
	for i, c := range cases {
		if got := unifiedPatch("/w/f.txt", c.Old, c.New); got != c.Patch {
			t.Errorf("case %d: old %q new %q\n got: %q\nwant: %q", i, c.Old, c.New, got, c.Patch)
		}
	}
}

// TestGlobMatchesMinimatch compares globMatch with minimatch 10.2.6
// ({dot: true}) on every pattern x path of the corpus.
func TestGlobMatchesMinimatch(t *testing.T) {
	var cases []struct {
		Pattern, Path string
		Match         bool
	}
	loadJSON(t, "tools_glob_corpus.json", &cases)
	for _, c := range cases {
		if got := globMatch(c.Pattern, c.Path); got != c.Match {
			t.Errorf("minimatch(%q, %q) = %v, we say %v", c.Path, c.Pattern, c.Match, got)
		}
	}
}

// TestCollationMatchesLocaleCompare sorts names as Node's localeCompare
// (ICU, en-US) does.
func TestCollationMatchesLocaleCompare(t *testing.T) {
	var want []string
	loadJSON(t, "tools_collate_corpus.json", &want)
	got := append([]string(nil), want...)
	sort.Strings(got) // start from byte order, as readdir gives
	sort.SliceStable(got, func(i, j int) bool { return localeCompare(got[i], got[j]) < 0 })
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("position %d: got %q, want %q\n got %q\nwant %q", i, got[i], want[i], got, want)
			break
		}
	}
}
