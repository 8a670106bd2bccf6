package wspath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenNoFollow: a path of plain directories opens; a link anywhere on
// it, to a sibling or out of the root, is refused with ErrLink (and
// ErrEscape), a file with ENOTDIR; nothing names a host path.
func TestOpenNoFollow(t *testing.T) {
	base := t.TempDir()
	ws, canary := filepath.Join(base, "ws"), filepath.Join(base, "canary")
	must(t, os.MkdirAll(filepath.Join(ws, "a", "b"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "sib", "x"), 0o755))
	must(t, os.MkdirAll(canary, 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "file"), nil, 0o644))
	must(t, os.Symlink("sib", filepath.Join(ws, "in")))
	must(t, os.Symlink(canary, filepath.Join(ws, "out")))
	must(t, os.Symlink("../sib", filepath.Join(ws, "a", "up")))
	r, err := os.OpenRoot(ws)
	must(t, err)
	defer r.Close()
	for _, tc := range []struct {
		rel  string
		want error // nil: opens
	}{
		{"a", nil},
		{"a/b", nil},
		{"in", ErrLink},
		{"in/x", ErrLink},
		{"out", ErrLink},
		{"a/up", ErrLink},
		{"a/up/x", ErrLink},
		{"file", syscall.ENOTDIR},
		{"missing", os.ErrNotExist},
	} {
		d, err := OpenNoFollow(r, tc.rel)
		if tc.want == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.rel, err)
				continue
			}
			fi, _ := d.Stat(".")
			want, _ := os.Stat(filepath.Join(ws, tc.rel))
			if !os.SameFile(fi, want) {
				t.Errorf("%s: opened another directory", tc.rel)
			}
			d.Close()
			continue
		}
		if !errors.Is(err, tc.want) || tc.want == ErrLink && !errors.Is(err, ErrEscape) {
			t.Errorf("%s: %v, want %v", tc.rel, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), ws) || strings.Contains(err.Error(), canary)) {
			t.Errorf("%s: error names a host path: %v", tc.rel, err)
		}
	}
}

// TestMkdirNoFollow: missing directories are created with the mode asked
// for and the last is returned open; a planted link on the way is refused
// before anything is created through it.
func TestMkdirNoFollow(t *testing.T) {
	base := t.TempDir()
	ws, canary := filepath.Join(base, "ws"), filepath.Join(base, "canary")
	must(t, os.MkdirAll(filepath.Join(ws, "sib"), 0o755))
	must(t, os.MkdirAll(canary, 0o755))
	must(t, os.Symlink(canary, filepath.Join(ws, "out")))
	must(t, os.Symlink("sib", filepath.Join(ws, "in")))
	must(t, os.Symlink(filepath.Join(canary, "new"), filepath.Join(ws, "dangling")))
	r, err := os.OpenRoot(ws)
	must(t, err)
	defer r.Close()
	d, err := MkdirNoFollow(r, "a/b/c", 0o700)
	must(t, err)
	d.Close()
	if fi, err := os.Stat(filepath.Join(ws, "a", "b", "c")); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("a/b/c: %v %v", fi, err)
	}
	d, err = MkdirNoFollow(r, ".", 0o755)
	must(t, err)
	d.Close()
	for _, rel := range []string{"out", "out/x", "in/x", "dangling", "dangling/x"} {
		if d, err := MkdirNoFollow(r, rel, 0o755); !errors.Is(err, ErrLink) {
			if err == nil {
				d.Close()
			}
			t.Errorf("%s: %v, want ErrLink", rel, err)
		}
	}
	for _, dir := range []string{canary, filepath.Join(ws, "sib")} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("created through a link in %s: %v", dir, ents)
		}
	}
}
