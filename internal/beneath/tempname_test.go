package beneath

import (
	"strings"
	"testing"
)

func TestTempNameMatchesStalePattern(t *testing.T) {
	for i := 0; i < 10000; i++ {
		for _, rel := range []string{"a", "dir/b.txt", ".hidden", "x.tmp"} {
			n := TempName(rel)
			base := n[strings.LastIndexByte(n, '/')+1:]
			if !IsTempName(base) {
				t.Fatalf("TempName(%q) = %q, not matched by IsTempName", rel, n)
			}
		}
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{".a.0123456789abc.tmp", true},
		{"..0123456789abc.tmp", false}, // no base
		{".a.0123456789ab.tmp", false}, // 12 digits
		{".a.0123456789abcd.tmp", false},
		{".a.0123456789ABC.tmp", false},
		{"a.0123456789abc.tmp", false}, // not hidden
		{".a.0123456789abc.tmp.x", false},
		{".a.0123456789abc-tmp", false},
		{".a.b.0123456789abc.tmp", true},
		{".a.tmp", false},
	} {
		if got := IsTempName(c.name); got != c.ok {
			t.Errorf("IsTempName(%q) = %v", c.name, got)
		}
	}
}
