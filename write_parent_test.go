package agentbe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteInParentCases: a nested write keeps the file's mode, writes
// through a final link to its target, creates missing parents, refuses a
// directory, and leaves no descriptor or temporary file behind.
func TestWriteInParentCases(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	root := l.RootDir()
	mustOK(t, os.MkdirAll(filepath.Join(root, "a", "b", "dir"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(root, "a", "b", "kept"), []byte("old"), 0o600))
	mustOK(t, os.WriteFile(filepath.Join(root, "a", "target"), []byte("old"), 0o640))
	mustOK(t, os.Symlink("../target", filepath.Join(root, "a", "b", "link")))
	ctCheckNoLeak(t, 5, func(int) {
		for _, p := range []string{"a/b/new", "a/b/kept", "a/b/link", "x/y/z/new"} {
			if err := l.Write(ctx, p, []byte("new")); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		if err := l.Write(ctx, "a/b/dir", []byte("new")); err == nil {
			t.Fatal("wrote over a directory")
		}
	})
	for p, mode := range map[string]os.FileMode{"a/b/new": 0o644, "a/b/kept": 0o600, "a/target": 0o640, "x/y/z/new": 0o644} {
		fi, err := os.Stat(filepath.Join(root, p))
		mustOK(t, err)
		got, _ := os.ReadFile(filepath.Join(root, p))
		if fi.Mode().Perm() != mode || string(got) != "new" {
			t.Errorf("%s: mode %v content %q", p, fi.Mode(), got)
		}
	}
	if fi, err := os.Lstat(filepath.Join(root, "a", "b", "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "a", "b"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}
