package agentbe

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteInDir: the common cases are written; every other one is
// declined with nothing changed (no directory created, no link followed,
// no non-ASCII name created).
func TestWriteInDir(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	root := l.RootDir()
	mustOK(t, os.MkdirAll(filepath.Join(root, "d", "sub"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(root, "d", "f"), []byte("old"), 0o600))
	mustOK(t, os.Symlink("f", filepath.Join(root, "d", "link")))
	nfd := "cafe\u0301"
	mustOK(t, os.WriteFile(filepath.Join(root, "d", nfd), []byte("nfd"), 0o644))
	for _, tc := range []struct {
		p    string
		done bool
	}{
		{"d/f", true},
		{"/d/new", true},
		{"top", true},
		{"d/link", false},
		{"d/sub", false},
		{"missing/f", false},
		{"d/f/x", false},
		{"d/caf\u00e9", false},
		{".", false},
	} {
		done, err := l.writeInDir(ctx, tc.p, []byte("new"))
		if done != tc.done || err != nil {
			t.Errorf("%s: done %v err %v, want done %v", tc.p, done, err, tc.done)
		}
	}
	for p, want := range map[string]string{"d/f": "new", "d/new": "new", "top": "new", "d/" + nfd: "nfd"} {
		if got, _ := os.ReadFile(filepath.Join(root, p)); string(got) != want {
			t.Errorf("%s holds %q, want %q", p, got, want)
		}
	}
	if fi, _ := os.Stat(filepath.Join(root, "d", "f")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	for _, p := range []string{"missing", "d/caf\u00e9"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s was created", p)
		}
	}
	if fi, _ := os.Lstat(filepath.Join(root, "d", "link")); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced")
	}
	mustOK(t, l.Destroy(ctx))
	if done, _ := l.writeInDir(ctx, "d/f", []byte("x")); done {
		t.Error("wrote after Destroy")
	}
}
