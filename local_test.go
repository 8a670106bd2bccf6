package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNewLocalConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  LocalConfig
		code ErrorCode
	}{
		{"missing root", LocalConfig{}, CodeInvalidConfiguration},
		{"bad isolation", LocalConfig{RootDir: dir, Isolation: "chroot"}, CodeInvalidConfiguration},
		{"bad shell", LocalConfig{RootDir: dir, Shell: "fish"}, CodeInvalidConfiguration},
		{"negative output", LocalConfig{RootDir: dir, MaxOutputBytes: -1}, CodeInvalidConfiguration},
		{"root is a file", LocalConfig{RootDir: writeTemp(t, "f")}, CodeInvalidConfiguration},
		{"bad safety pattern", LocalConfig{RootDir: dir, Safety: SafetyPolicy{Blocked: []string{"("}}}, CodeInvalidConfiguration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLocal(tt.cfg)
			if CodeOf(err) != tt.code {
				t.Fatalf("NewLocal: %v, want code %s", err, tt.code)
			}
			if tt.code == CodeInvalidConfiguration && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("not ErrInvalidConfig: %v", err)
			}
		})
	}
	// A missing root is created.
	l, err := NewLocal(LocalConfig{RootDir: filepath.Join(dir, "new/ws")})
	mustOK(t, err)
	defer l.Destroy(context.Background())
	if fi, err := os.Stat(filepath.Join(dir, "new/ws")); err != nil || !fi.IsDir() {
		t.Fatalf("root not created: %v", err)
	}
	if l.Kind() != KindLocal || l.RootDir() != filepath.Join(dir, "new/ws") {
		t.Fatalf("Kind/RootDir = %v %v", l.Kind(), l.RootDir())
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	mustOK(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestLocalFileOps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := newTestLocal(t, dir)

	// Write creates parents; Read returns bytes; the three path cases agree.
	mustOK(t, l.Write(ctx, "a/b/c.txt", []byte("hello")))
	for _, p := range []string{"a/b/c.txt", "/a/b/c.txt", filepath.Join(dir, "a/b/c.txt"), "./a/x/../b/c.txt"} {
		got, err := l.Read(ctx, p)
		if err != nil || string(got) != "hello" {
			t.Fatalf("Read(%q) = %q, %v", p, got, err)
		}
	}
	// Other absolute paths are relative to the root.
	mustOK(t, l.Write(ctx, "/etc/passwd", []byte("mine")))
	if data, _ := os.ReadFile(filepath.Join(dir, "etc/passwd")); string(data) != "mine" {
		t.Fatalf("/etc/passwd not mapped into the workspace: %q", data)
	}

	// Missing file: fs.ErrNotExist and READ_FAILED, message without host path.
	_, err := l.Read(ctx, "missing.txt")
	if !errors.Is(err, fs.ErrNotExist) || CodeOf(err) != CodeReadFailed {
		t.Fatalf("Read missing: %v (%s)", err, CodeOf(err))
	}
	if strings.Contains(err.Error(), dir) {
		t.Fatalf("error reveals host path: %v", err)
	}

	// Escape: ErrPathEscape with the offending path.
	_, err = l.Read(ctx, "../x")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrPathEscape) || e.Path != "../x" || e.Code != CodePathEscape {
		t.Fatalf("escape: %#v", err)
	}

	// ReadDir: sorted names only.
	mustOK(t, l.Write(ctx, "a/z.txt", nil))
	mustOK(t, l.Mkdir(ctx, "a/m/n"))
	names, err := l.ReadDir(ctx, "a")
	mustOK(t, err)
	if strings.Join(names, ",") != "b,m,z.txt" {
		t.Fatalf("ReadDir = %v", names)
	}
	if _, err := l.ReadDir(ctx, "a/z.txt"); !errors.Is(err, syscall.ENOTDIR) || CodeOf(err) != CodeLsFailed {
		t.Fatalf("ReadDir on file: %v", err)
	}

	// Exists.
	for p, want := range map[string]bool{"a": true, "a/b/c.txt": true, "nope": false, "a/nope/x": false} {
		got, err := l.Exists(ctx, p)
		if err != nil || got != want {
			t.Fatalf("Exists(%q) = %v, %v", p, got, err)
		}
	}
	if _, err := l.Exists(ctx, "../../etc"); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("Exists escape: %v", err)
	}

	// Stat: file/dir, size, mtime.
	fi, err := l.Stat(ctx, "a/b/c.txt")
	mustOK(t, err)
	if fi.IsDir() || fi.Size() != 5 || time.Since(fi.ModTime()) > time.Hour {
		t.Fatalf("Stat file = %v %v %v", fi.IsDir(), fi.Size(), fi.ModTime())
	}
	if fi, err := l.Stat(ctx, "a"); err != nil || !fi.IsDir() {
		t.Fatalf("Stat dir = %v %v", fi, err)
	}

	// Mkdir is recursive and idempotent; the root is fine.
	mustOK(t, l.Mkdir(ctx, "x/y/z"))
	mustOK(t, l.Mkdir(ctx, "x/y/z"))
	mustOK(t, l.Mkdir(ctx, "."))

	// Rename creates the destination's parent; both ends validated.
	mustOK(t, l.Rename(ctx, "a/z.txt", "moved/deep/z.txt"))
	if ok, _ := l.Exists(ctx, "moved/deep/z.txt"); !ok {
		t.Fatal("rename target missing")
	}
	if err := l.Rename(ctx, "moved/deep/z.txt", "../z.txt"); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("rename to outside: %v", err)
	}
	if err := l.Rename(ctx, "../z.txt", "z.txt"); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("rename from outside: %v", err)
	}
	if err := l.Rename(ctx, ".", "elsewhere"); err == nil {
		t.Fatal("renaming the root succeeded")
	}

	// Remove: plain, recursive, force.
	if err := l.Remove(ctx, "x", RemoveOptions{}); err == nil {
		t.Fatal("non-recursive remove of a non-empty dir succeeded")
	}
	mustOK(t, l.Remove(ctx, "x", RemoveOptions{Recursive: true}))
	if err := l.Remove(ctx, "x", RemoveOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("remove missing: %v", err)
	}
	mustOK(t, l.Remove(ctx, "x", RemoveOptions{Force: true}))
	mustOK(t, l.Remove(ctx, "x", RemoveOptions{Force: true, Recursive: true}))
	if err := l.Remove(ctx, ".", RemoveOptions{Recursive: true}); err == nil {
		t.Fatal("removing the workspace root succeeded")
	}
}

func TestLocalWriteAtomic(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := newTestLocal(t, dir)
	mustOK(t, l.Write(ctx, "f.txt", []byte("old")))
	mustOK(t, os.Chmod(filepath.Join(dir, "f.txt"), 0o600))

	// Write keeps the mode of the file it replaces and leaves no temp files.
	mustOK(t, l.Write(ctx, "f.txt", []byte("new")))
	fi, _ := os.Stat(filepath.Join(dir, "f.txt"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode())
	}

	// Create commits on Close only.
	w, err := l.Create(ctx, "f.txt")
	mustOK(t, err)
	_, _ = io.WriteString(w, "streamed")
	if data, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(data) != "new" {
		t.Fatalf("content changed before Close: %q", data)
	}
	mustOK(t, w.Close())
	if data, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(data) != "streamed" {
		t.Fatalf("after Close: %q", data)
	}
	if err := w.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}

	// A cancelled context abandons the replacement.
	cctx, cancel := context.WithCancel(ctx)
	w, err = l.Create(cctx, "f.txt")
	mustOK(t, err)
	_, _ = io.WriteString(w, "partial")
	cancel()
	if err := w.Close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close after cancel: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(data) != "streamed" {
		t.Fatalf("abandoned write changed the file: %q", data)
	}

	// Writing onto a directory fails and loses nothing.
	mustOK(t, l.Mkdir(ctx, "d"))
	if err := l.Write(ctx, "d", []byte("x")); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("write onto dir: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}

	// Writing through a link inside the workspace replaces its target.
	mustOK(t, os.Symlink("f.txt", filepath.Join(dir, "link")))
	mustOK(t, l.Write(ctx, "link", []byte("via link")))
	if data, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(data) != "via link" {
		t.Fatalf("target = %q", data)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("link replaced by a file")
	}
}

func TestLocalTouch(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := newTestLocal(t, dir)
	mustOK(t, l.Touch(ctx, "new/empty.txt"))
	if data, err := os.ReadFile(filepath.Join(dir, "new/empty.txt")); err != nil || len(data) != 0 {
		t.Fatalf("touch new: %q %v", data, err)
	}
	mustOK(t, l.Write(ctx, "keep.txt", []byte("content")))
	old := time.Now().Add(-time.Hour)
	mustOK(t, os.Chtimes(filepath.Join(dir, "keep.txt"), old, old))
	mustOK(t, l.Touch(ctx, "keep.txt"))
	data, _ := os.ReadFile(filepath.Join(dir, "keep.txt"))
	fi, _ := os.Stat(filepath.Join(dir, "keep.txt"))
	if string(data) != "content" || !fi.ModTime().After(old.Add(time.Minute)) {
		t.Fatalf("touch existing: %q mtime %v", data, fi.ModTime())
	}
}

func TestLocalSymlinks(t *testing.T) {
	ctx := context.Background()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	ws := filepath.Join(base, "ws")
	mustOK(t, os.MkdirAll(filepath.Join(ws, "real/sub"), 0o755))
	mustOK(t, os.MkdirAll(filepath.Join(base, "outside"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(base, "outside/keep"), []byte("keep"), 0o644))
	mustOK(t, os.WriteFile(filepath.Join(ws, "real/sub/f"), []byte("inside"), 0o644))
	mustOK(t, os.Symlink(filepath.Join(ws, "real"), filepath.Join(ws, "abs_in")))
	mustOK(t, os.Symlink("real/sub", filepath.Join(ws, "rel_in")))
	mustOK(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(ws, "out")))
	l := newTestLocal(t, ws)

	for p, want := range map[string]string{"abs_in/sub/f": "inside", "rel_in/f": "inside"} {
		if got, err := l.Read(ctx, p); err != nil || string(got) != want {
			t.Fatalf("Read(%q) = %q, %v", p, got, err)
		}
	}
	if got, err := l.RealPath(ctx, "abs_in/sub/f"); err != nil || got != filepath.Join(ws, "real/sub/f") {
		t.Fatalf("RealPath = %q, %v", got, err)
	}
	// Recursive remove of a directory holding a link out removes the link,
	// never what it points to; removing the link itself likewise.
	mustOK(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(ws, "real/sub/out2")))
	mustOK(t, l.Remove(ctx, "real", RemoveOptions{Recursive: true}))
	mustOK(t, l.Remove(ctx, "out", RemoveOptions{Recursive: true}))
	if data, err := os.ReadFile(filepath.Join(base, "outside/keep")); err != nil || string(data) != "keep" {
		t.Fatalf("outside file touched: %q %v", data, err)
	}
}

// TestLocalRootSlash: a workspace rooted at "/" works, and absolute paths
// are then used as they are.
func TestLocalRootSlash(t *testing.T) {
	ctx := context.Background()
	l, err := NewLocal(LocalConfig{RootDir: "/", Isolation: IsolationNone, AllowDangerous: true})
	mustOK(t, err)
	defer l.Destroy(ctx)
	dir := t.TempDir()
	mustOK(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	got, err := l.Read(ctx, filepath.Join(dir, "f"))
	if err != nil || string(got) != "x" {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if _, err := l.Read(ctx, "/.."); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("/.. : %v", err)
	}
	out, err := l.Exec(ctx, "pwd", ExecOptions{Dir: dir})
	if err != nil || strings.TrimSpace(string(out)) != dir {
		t.Fatalf("exec in %s: %q %v", dir, out, err)
	}
}

// TestLocalSiblingPrefix: /ws/u1 and /ws/u10 are different workspaces.
func TestLocalSiblingPrefix(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	mustOK(t, os.MkdirAll(filepath.Join(base, "u10"), 0o755))
	mustOK(t, os.WriteFile(filepath.Join(base, "u10/secret"), []byte("S"), 0o644))
	l := newTestLocal(t, filepath.Join(base, "u1"))
	if _, err := l.Read(ctx, filepath.Join(base, "u10/secret")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("sibling prefix read: %v", err)
	}
	mustOK(t, l.Write(ctx, filepath.Join(base, "u10/secret"), []byte("mine")))
	if data, _ := os.ReadFile(filepath.Join(base, "u10/secret")); string(data) != "S" {
		t.Fatal("sibling changed")
	}
	if data, _ := os.ReadFile(filepath.Join(base, "u1", base, "u10/secret")); string(data) != "mine" {
		t.Fatal("path not mapped under u1")
	}
}

func TestLocalContextDone(t *testing.T) {
	l := newTestLocal(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Write(ctx, "x", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with done ctx: %v", err)
	}
}
