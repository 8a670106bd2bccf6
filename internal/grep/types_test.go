package grep

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestTypesTableMatchesList checks the generated table against ripgrep's
// --type-list output it was generated from (go generate refreshes it).
func TestTypesTableMatchesList(t *testing.T) {
	data, err := os.ReadFile("../../testdata/grep/rg-type-list.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, globs, _ := strings.Cut(line, ": ")
		want[name] = strings.Split(globs, ", ")
	}
	if len(want) != len(rgTypes) {
		t.Fatalf("table has %d types, list %d", len(rgTypes), len(want))
	}
	for name, globs := range want {
		if !slices.Equal(rgTypes[name], globs) {
			t.Errorf("type %s: table %v, list %v", name, rgTypes[name], globs)
		}
	}
}

func TestTypeMatch(t *testing.T) {
	for _, c := range []struct {
		typ, name string
		want      bool
	}{
		{"c", "x.h", true}, {"c", "x.H", true}, {"c", "x.h.in", true}, {"c", "x.hpp", false},
		{"make", "Makefile", true}, {"make", "GNUmakefile", true}, {"make", "makefile.am", true},
		{"docker", "Dockerfile.dev", true}, {"sh", ".bashrc", true}, {"ts", "a.tsx", true}, {"ts", "a.js", false},
	} {
		m, err := newTypeMatcher(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.match(c.name); got != c.want {
			t.Errorf("type %s on %s = %v, want %v", c.typ, c.name, got, c.want)
		}
	}
	if _, err := newTypeMatcher("nosuchtype"); err == nil || err.Error() != "unrecognized file type: nosuchtype" {
		t.Fatalf("unknown type: %v", err)
	}
}
