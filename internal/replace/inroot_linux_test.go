package replace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestInRoot: a file is replaced by the swap (the old content is
// gone, tmp too); a directory in the target's place is swapped back and
// left as it was, as a rename would have left it.
func TestInRoot(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	mustOK(t, err)
	defer r.Close()
	mustOK(t, os.WriteFile(filepath.Join(dir, "target"), []byte("old"), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(dir, "tmp"), []byte("new"), 0o644))
	if !InRoot(r, "tmp", "target") {
		t.Fatal("file not exchanged")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "target")); string(got) != "new" {
		t.Fatalf("target holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tmp")); !os.IsNotExist(err) {
		t.Fatalf("tmp left behind: %v", err)
	}

	mustOK(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(dir, "d", "keep"), nil, 0o644))
	mustOK(t, os.WriteFile(filepath.Join(dir, "tmp2"), []byte("new"), 0o644))
	if InRoot(r, "tmp2", "d") {
		t.Fatal("a directory was replaced by a file")
	}
	if fi, err := os.Stat(filepath.Join(dir, "d", "keep")); err != nil || fi.IsDir() {
		t.Fatalf("directory not restored: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "tmp2")); string(got) != "new" {
		t.Fatalf("tmp2 holds %q", got)
	}
	if InRoot(r, "tmp2", "missing") {
		t.Fatal("exchanged with nothing")
	}

	// Across directories: d/keep replaced by tmp2.
	if !InRoot(r, "tmp2", "d/keep") {
		t.Fatal("not exchanged across directories")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "d", "keep")); string(got) != "new" {
		t.Fatalf("d/keep holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tmp2")); !os.IsNotExist(err) {
		t.Fatalf("tmp2 left behind: %v", err)
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkReplaceExisting replaces an existing 4 KiB file with a freshly
// written one, by rename (ext4 starts writeback inside it) and by
// InRoot, alternating in one loop so both see the same load.
func BenchmarkReplaceExisting(b *testing.B) {
	dir := b.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	data := make([]byte, 4096)
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("renamed")
	write("exchanged")
	var tRename, tExchange time.Duration
	n := 0
	for b.Loop() {
		write("tmp")
		t0 := time.Now()
		if err := r.Rename("tmp", "renamed"); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		write("tmp")
		t2 := time.Now()
		if !InRoot(r, "tmp", "exchanged") {
			b.Fatal("not exchanged")
		}
		tExchange += time.Since(t2)
		tRename += t1.Sub(t0)
		n++
	}
	b.ReportMetric(float64(tRename.Nanoseconds())/float64(n), "rename-ns/op")
	b.ReportMetric(float64(tExchange.Nanoseconds())/float64(n), "exchange-ns/op")
}
