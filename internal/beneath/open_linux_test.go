package beneath

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenBeneath: the one-call open succeeds for plain paths and links
// that stay inside, and declines (leaving the answer to os.Root) for
// anything leading out, absolute links and missing files.
func TestOpenBeneath(t *testing.T) {
	ws, canary := wsAndCanary(t, "a/b.txt", "secret")
	mustOK(t, os.Symlink("a/b.txt", filepath.Join(ws, "rel-inside")))
	mustOK(t, os.Symlink(filepath.Join(ws, "a", "b.txt"), filepath.Join(ws, "abs-inside")))
	mustOK(t, os.Symlink("../canary/secret", filepath.Join(ws, "rel-out")))
	mustOK(t, os.Symlink(filepath.Join(canary, "secret"), filepath.Join(ws, "abs-out")))
	mustOK(t, os.Symlink("../../canary", filepath.Join(ws, "a", "dir-out")))
	mustOK(t, os.Symlink("/proc/self/root", filepath.Join(ws, "magic")))
	dir, err := os.Open(ws)
	mustOK(t, err)
	defer dir.Close()
	for _, tc := range []struct {
		rel  string
		want string // "" = declined
	}{
		{"a/b.txt", "inside"},
		{"rel-inside", "inside"},
		{"abs-inside", ""},
		{"rel-out", ""},
		{"abs-out", ""},
		{"a/dir-out/secret", ""},
		{"magic/" + strings.TrimPrefix(canary, "/") + "/secret", ""},
		{"missing", ""},
	} {
		f, ok := Open(dir, "name", tc.rel, os.O_RDONLY)
		if ok != (tc.want != "") {
			t.Errorf("%s: ok %v", tc.rel, ok)
		}
		if ok {
			got, _ := io.ReadAll(f)
			f.Close()
			if string(got) != tc.want {
				t.Errorf("%s: read %q", tc.rel, got)
			}
		}
	}
	if openat2Unusable.Load() {
		t.Fatal("openat2 reported unusable on this kernel")
	}
}

// TestReadBeneath: whole reads of regular files within the limit succeed
// in the one-call path; directories, FIFOs, links leading out and files
// over the limit are left to the general path.
func TestReadBeneath(t *testing.T) {
	base := t.TempDir()
	ws, canary := filepath.Join(base, "ws"), filepath.Join(base, "canary")
	mustOK(t, os.MkdirAll(filepath.Join(ws, "d"), 0o755))
	mustOK(t, os.MkdirAll(canary, 0o755))
	mustOK(t, os.WriteFile(filepath.Join(ws, "d", "f"), []byte("inside"), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(ws, "empty"), nil, 0o644))
	mustOK(t, os.WriteFile(filepath.Join(ws, "big"), make([]byte, 100), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(canary, "f"), []byte("canary"), 0o644))
	mustOK(t, os.Symlink("../canary/f", filepath.Join(ws, "out")))
	mustOK(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	dir, err := os.Open(ws)
	mustOK(t, err)
	defer dir.Close()
	for _, tc := range []struct {
		rel  string
		want string
		ok   bool
	}{
		{"d/f", "inside", true},
		{"empty", "", true},
		{"big", "", false},
		{"d", "", false},
		{"fifo", "", false},
		{"out", "", false},
		{"missing", "", false},
	} {
		got, ok := ReadFile(dir, tc.rel, 50)
		if ok != tc.ok || string(got) != tc.want {
			t.Errorf("%s: %q %v, want %q %v", tc.rel, got, ok, tc.want, tc.ok)
		}
	}
}

// wsAndCanary makes a workspace holding inside ("inside") and, beside it,
// a canary directory holding secret ("canary").
func wsAndCanary(t *testing.T, inside, secret string) (ws, canary string) {
	t.Helper()
	base := t.TempDir()
	ws, canary = filepath.Join(base, "ws"), filepath.Join(base, "canary")
	mustOK(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, inside)), 0o755))
	mustOK(t, os.MkdirAll(canary, 0o755))
	mustOK(t, os.WriteFile(filepath.Join(ws, inside), []byte("inside"), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(canary, secret), []byte("canary"), 0o644))
	return ws, canary
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
