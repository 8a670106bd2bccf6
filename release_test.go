package agentbe

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseLaterClosesEverything: past the queue bound, releases happen
// inline; every file ends up closed and the draining goroutine exits.
func TestReleaseLaterClosesEverything(t *testing.T) {
	dir := t.TempDir()
	gs := runtime.NumGoroutine()
	var files []*os.File
	for range maxDeferredReleases + 50 {
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		releaseLater(f)
	}
	if got := ctSettledGoroutines(gs); got > gs {
		t.Fatalf("goroutines %d, want at most %d", got, gs)
	}
	for i, f := range files {
		if _, err := f.Stat(); !errors.Is(err, fs.ErrClosed) {
			t.Fatalf("file %d not closed: %v", i, err)
		}
	}
}

// TestWriteOverPinnedFile: replacing a file frees the old one after the
// write (its descriptor does not stay open), keeps the mode, and a reader
// that had the old file open still reads the old content.
func TestWriteOverPinnedFile(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	if err := l.Write(ctx, "f.txt", []byte("old")); err != nil {
		t.Fatal(err)
	}
	host := filepath.Join(l.RootDir(), "f.txt")
	if err := os.Chmod(host, 0o600); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(host)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ctCheckNoLeak(t, 20, func(int) {
		if err := l.Write(ctx, "f.txt", []byte("new")); err != nil {
			t.Fatal(err)
		}
	})
	if got, _ := os.ReadFile(host); string(got) != "new" {
		t.Fatalf("content %q", got)
	}
	if fi, _ := os.Stat(host); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	buf := make([]byte, 8)
	if n, _ := old.ReadAt(buf, 0); string(buf[:n]) != "old" {
		t.Fatalf("old reader sees %q", buf[:n])
	}
}

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
