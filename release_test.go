package agentbe

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
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
