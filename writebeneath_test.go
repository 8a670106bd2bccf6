package agentbe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteReplaceKeepsMode: replacing a file (through Write and through
// writeInDir) keeps every permission bit the umask would have taken from a
// new file, drops setuid/setgid, creates new files at 0644 minus the umask,
// and leaves no temporary sibling behind.
func TestWriteReplaceKeepsMode(t *testing.T) {
	bothWritePaths(t, testWriteReplaceKeepsMode)
}

func testWriteReplaceKeepsMode(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	root := l.RootDir()
	mustOK(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
	want := map[string]os.FileMode{}
	for name, mode := range map[string]os.FileMode{"open": 0o666, "exe": 0o777, "private": 0o600, "suid": 0o4755} {
		p := filepath.Join(root, "d", name)
		mustOK(t, os.WriteFile(p, []byte("old"), 0o600))
		mustOK(t, os.Chmod(p, mode))
		want["d/"+name] = mode.Perm()
	}
	want["d/new"] = 0o644 &^ umaskForTest(t)
	for i, p := range []string{"d/open", "d/exe", "d/private", "d/suid", "d/new"} {
		var err error
		if i%2 == 0 {
			err = l.Write(ctx, p, []byte("new"))
		} else {
			_, err = l.writeInDir(ctx, p, []byte("new"))
		}
		mustOK(t, err)
	}
	for p, mode := range want {
		fi, err := os.Stat(filepath.Join(root, p))
		mustOK(t, err)
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), mode)
		}
		if got, _ := os.ReadFile(filepath.Join(root, p)); string(got) != "new" {
			t.Errorf("%s holds %q", p, got)
		}
	}
	assertNoTemp(t, filepath.Join(root, "d"))
}

// TestWriteCancelledKeepsOld: a write whose context is done changes
// nothing and leaves no temporary file.
func TestWriteCancelledKeepsOld(t *testing.T) {
	bothWritePaths(t, testWriteCancelledKeepsOld)
}

func testWriteCancelledKeepsOld(t *testing.T) {
	l := ctLocal(t, LocalConfig{})
	root := l.RootDir()
	mustOK(t, os.WriteFile(filepath.Join(root, "f"), []byte("old"), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Write(ctx, "f", []byte("new")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "f")); string(got) != "old" {
		t.Errorf("f holds %q", got)
	}
	assertNoTemp(t, root)
}

// TestWriteThroughLinkedParent: a parent directory that is a link leading
// out of the workspace is never written through, whichever path (fast or
// general) takes the write; a link inside the workspace is followed.
func TestWriteThroughLinkedParent(t *testing.T) {
	bothWritePaths(t, testWriteThroughLinkedParent)
}

func testWriteThroughLinkedParent(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	root := l.RootDir()
	canary := t.TempDir()
	mustOK(t, os.Symlink(canary, filepath.Join(root, "out")))
	mustOK(t, os.Symlink("../"+filepath.Base(canary), filepath.Join(root, "rel")))
	mustOK(t, os.MkdirAll(filepath.Join(root, "in"), 0o755))
	mustOK(t, os.Symlink("in", filepath.Join(root, "inlink")))
	for _, p := range []string{"out/x", "rel/x"} {
		_ = l.Write(ctx, p, []byte("escaped"))
		_, _ = l.writeInDir(ctx, p, []byte("escaped"))
	}
	if names, _ := os.ReadDir(canary); len(names) != 0 {
		t.Fatalf("the canary directory holds %v", names)
	}
	mustOK(t, l.Write(ctx, "inlink/x", []byte("in")))
	if got, _ := os.ReadFile(filepath.Join(root, "in", "x")); string(got) != "in" {
		t.Errorf("in/x holds %q", got)
	}
}

// bothWritePaths runs test with the openat2 fast path (where there is
// one) and with the os.Root path alone.
func bothWritePaths(t *testing.T, test func(t *testing.T)) {
	t.Run("fast", test)
	t.Run("os.Root", func(t *testing.T) {
		withoutOpenat2(t)
		test(t)
	})
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	mustOK(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// umaskForTest is the process umask, seen through a new file's mode.
func umaskForTest(t *testing.T) os.FileMode {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o777)
	mustOK(t, err)
	f.Close()
	fi, err := os.Stat(p)
	mustOK(t, err)
	return 0o777 &^ fi.Mode().Perm()
}
