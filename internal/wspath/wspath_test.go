package wspath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestResolve(t *testing.T) {
	const root = "/var/workspace"
	tests := []struct {
		name, root, in, want string
		err                  error
	}{
		// docs/paths.md, case 1: relative paths.
		{"relative file", root, "file.txt", "file.txt", nil},
		{"relative nested", root, "subdir/file.txt", "subdir/file.txt", nil},
		{"dot", root, ".", ".", nil},
		{"empty", root, "", ".", nil},
		// case 2: absolute paths under the root.
		{"abs under root", root, "/var/workspace/file.txt", "file.txt", nil},
		{"abs deep", root, "/var/workspace/a/b/c", "a/b/c", nil},
		{"abs root itself", root, "/var/workspace", ".", nil},
		{"abs root slash", root, "/var/workspace/", ".", nil},
		{"abs double slashes", root, "//var//workspace//x", "x", nil},
		// case 3: other absolute paths are relative.
		{"abs other", root, "/file.txt", "file.txt", nil},
		{"etc passwd", root, "/etc/passwd", "etc/passwd", nil},
		{"sibling prefix", root, "/var/workspace2/x", "var/workspace2/x", nil},
		{"sibling prefix u1/u10", "/ws/u1", "/ws/u10/x", "ws/u10/x", nil},
		// escapes.
		{"dotdot", root, "../etc/passwd", "", ErrEscape},
		{"dotdot thrice", root, "../../..", "", ErrEscape},
		{"complex traversal", root, "a/b/../../../../etc", "", ErrEscape},
		{"abs under root then up", root, "/var/workspace/../etc", "", ErrEscape},
		{"abs other then up", root, "/etc/../../x", "", ErrEscape},
		{"out and back in", root, "../workspace/x", "", ErrEscape},
		{"inner dotdot ok", root, "a/../b", "b", nil},
		{"dot segments", root, "./a/./b/.", "a/b", nil},
		{"nul byte", root, "a\x00b", "", ErrInvalid},
		// backslashes are ordinary name bytes on POSIX.
		{"windows style", root, `C:\Windows\win.ini`, `C:\Windows\win.ini`, nil},
		{"dotdot backslash", root, `..\x`, `..\x`, nil},
		// root "/": every absolute path is under it.
		{"slash root abs", "/", "/etc/hostname", "etc/hostname", nil},
		{"slash root escape", "/", "/..", "", ErrEscape},
		{"slash root dot", "/", "/", ".", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Resolve(tt.root, tt.in)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Resolve(%q, %q) error = %v, want %v", tt.root, tt.in, err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("Resolve(%q, %q) = %q, want %q", tt.root, tt.in, got, tt.want)
			}
		})
	}
}

func TestJoinWithin(t *testing.T) {
	for _, tt := range []struct{ a, b, join, within string }{
		{"/ws", ".", "/ws", "."},
		{"/ws", "a/b", "/ws/a/b", "a/b"},
		{"/", "a", "/a", "a"},
	} {
		if got := Join(tt.a, tt.b); got != tt.join {
			t.Errorf("Join(%q,%q) = %q, want %q", tt.a, tt.b, got, tt.join)
		}
	}
	if got := Within("u1", "x/y"); got != "u1/x/y" {
		t.Errorf("Within = %q", got)
	}
	if got := Within(".", "x"); got != "x" {
		t.Errorf("Within(., x) = %q", got)
	}
	if got := Within("u1", "."); got != "u1" {
		t.Errorf("Within(u1, .) = %q", got)
	}
}

// linkTree builds a workspace with links of every kind next to an outside
// directory, and returns the workspace's real path and root.
func linkTree(t *testing.T) (string, *os.Root) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, "dir/sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "outside"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "dir/sub/f.txt"), []byte("in"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "outside/secret"), []byte("out"), 0o644))
	links := map[string]string{
		"rel":        "dir/sub/f.txt",
		"reldir":     "dir",
		"abs_in":     filepath.Join(ws, "dir/sub/f.txt"),
		"abs_out":    filepath.Join(base, "outside/secret"),
		"up_out":     "../outside",
		"dangling":   "missing/file",
		"loop_a":     "loop_b",
		"loop_b":     "loop_a",
		"chain":      "reldir/sub",
		"dir/up":     "..",
		"dir/upup":   "../..",
		"self":       ".",
		"abs_root":   "/",
		"abs_wsroot": ws,
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(ws, name)))
	}
	r, err := os.OpenRoot(ws)
	must(t, err)
	t.Cleanup(func() { r.Close() })
	return ws, r
}

func TestRealPath(t *testing.T) {
	ws, r := linkTree(t)
	tests := []struct {
		in, want string
		err      error
	}{
		{"dir/sub/f.txt", "dir/sub/f.txt", nil},
		{"rel", "dir/sub/f.txt", nil},
		{"reldir/sub/f.txt", "dir/sub/f.txt", nil},
		{"abs_in", "dir/sub/f.txt", nil},
		{"chain/f.txt", "dir/sub/f.txt", nil},
		{"dir/up/rel", "dir/sub/f.txt", nil},
		{"self/self/rel", "dir/sub/f.txt", nil},
		{"abs_wsroot/rel", "dir/sub/f.txt", nil},
		{"dangling", "missing/file", nil},
		{"new/file.txt", "new/file.txt", nil},
		{"abs_out", "", ErrEscape},
		{"up_out/secret", "", ErrEscape},
		{"up_out", "", ErrEscape},
		{"dir/upup", "", ErrEscape},
		{"dir/upup/outside/secret", "", ErrEscape},
		{"abs_root/etc/passwd", "", ErrEscape},
		{"loop_a", "", syscall.ELOOP},
		{".", ".", nil},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := RealPath(r, ws, tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("RealPath(%q) = %q, %v; want error %v", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("RealPath(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestRealPathNotDir(t *testing.T) {
	ws, r := linkTree(t)
	if _, err := RealPath(r, ws, "dir/sub/f.txt/x"); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("below a file: got %v, want ENOTDIR", err)
	}
}

// FuzzResolve checks the resolver's invariants on arbitrary input: a result
// is clean, relative, has no ".." element, and is stable when resolved again.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"file.txt", "subdir/file.txt", ".", "/var/workspace/file.txt",
		"/var/workspace/a/b/c", "/file.txt", "/etc/passwd", "../etc/passwd", "../../..",
		"a/b/../../../../etc", "/var/workspace/../etc", "//var/workspace/./x", "a\x00",
		`..\..\x`, "/var/workspace2/x", "....//..", "a/./../.."} {
		f.Add("/var/workspace", s)
		f.Add("/", s)
	}
	f.Fuzz(func(t *testing.T, root, p string) {
		if !strings.HasPrefix(root, "/") || filepath.Clean(root) != root {
			return
		}
		rel, err := Resolve(root, p)
		if err != nil {
			if rel != "" {
				t.Fatalf("error with result %q", rel)
			}
			return
		}
		if rel == "" || strings.HasPrefix(rel, "/") {
			t.Fatalf("Resolve(%q,%q) = %q: not relative", root, p, rel)
		}
		for _, seg := range strings.Split(rel, "/") {
			if seg == ".." || seg == "" || (seg == "." && rel != ".") {
				t.Fatalf("Resolve(%q,%q) = %q: unclean element %q", root, p, rel, seg)
			}
		}
		again, err := Resolve(root, rel)
		if err != nil || again != rel {
			t.Fatalf("not idempotent: %q -> %q, %v", rel, again, err)
		}
		host := Join(root, rel)
		if root != "/" && host != root && !strings.HasPrefix(host, root+"/") {
			t.Fatalf("host path %q outside %q", host, root)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
