package agentbe

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestScopePaths(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l := newExecLocal(t, LocalConfig{RootDir: root, AllowDangerous: true})
	u1, err := l.Scope("users/user1", ScopeOptions{})
	mustOK(t, err)
	if u1.RootDir() != filepath.Join(root, "users/user1") || u1.Kind() != KindLocal || u1.Path() != "users/user1" {
		t.Fatalf("scope RootDir/Kind/Path = %q %v %q", u1.RootDir(), u1.Kind(), u1.Path())
	}
	mustOK(t, u1.Write(ctx, "file.txt", []byte("u1")))
	// docs/paths.md, scoped workspaces: the three forms name one file.
	for _, p := range []string{"file.txt", "/file.txt", filepath.Join(root, "users/user1/file.txt")} {
		if got, err := u1.Read(ctx, p); err != nil || string(got) != "u1" {
			t.Fatalf("Read(%q) = %q, %v", p, got, err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(root, "users/user1/file.txt")); string(data) != "u1" {
		t.Fatal("scope write not under the scope directory")
	}
	mustOK(t, l.Write(ctx, "users/user2/secret", []byte("u2")))
	for _, p := range []string{"../user2/secret", "../../users/user2/secret", "a/../../user2/secret"} {
		if _, err := u1.Read(ctx, p); !errors.Is(err, ErrPathEscape) {
			t.Fatalf("Read(%q) in scope: %v, want path escape", p, err)
		}
	}
	// Scope creation itself is validated.
	for _, p := range []string{"..", "../x", "a/../../x"} {
		if _, err := l.Scope(p, ScopeOptions{}); !errors.Is(err, ErrPathEscape) {
			t.Fatalf("Scope(%q): %v", p, err)
		}
		if _, err := u1.Scope(p, ScopeOptions{}); !errors.Is(err, ErrPathEscape) {
			t.Fatalf("nested Scope(%q): %v", p, err)
		}
	}
	// Nested scopes join paths.
	deep, err := u1.Scope("projects/p1", ScopeOptions{})
	mustOK(t, err)
	mustOK(t, deep.Write(ctx, "main.go", []byte("package main")))
	if _, err := os.Stat(filepath.Join(root, "users/user1/projects/p1/main.go")); err != nil {
		t.Fatalf("nested write: %v", err)
	}
	if deep.Path() != "users/user1/projects/p1" {
		t.Fatalf("nested Path = %q", deep.Path())
	}
	if _, err := deep.Read(ctx, "../../file.txt"); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("nested escape to parent scope: %v", err)
	}
	// A link inside a scope pointing to a sibling scope is refused even
	// though it stays inside the root workspace.
	mustOK(t, os.Symlink(filepath.Join(root, "users/user2"), filepath.Join(root, "users/user1/sib")))
	if _, err := u1.Read(ctx, "sib/secret"); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("link to sibling: %v", err)
	}
	if _, err := l.Read(ctx, "users/user1/sib/secret"); err != nil {
		t.Fatalf("the same link from the root backend: %v", err)
	}
}

func TestScopeExec(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	l := newExecLocal(t, LocalConfig{RootDir: root, AllowDangerous: true,
		Env: map[string]string{"LEVEL": "root", "A": "root"}})
	s1, err := l.Scope("t1", ScopeOptions{Env: map[string]string{"LEVEL": "s1", "B": "s1"}})
	mustOK(t, err)
	s2, err := s1.Scope("inner", ScopeOptions{Env: map[string]string{"LEVEL": "s2"}})
	mustOK(t, err)
	// exec in a fresh scope creates its directory and runs there.
	out, err := s2.Exec(ctx, `pwd; echo "$HOME $LEVEL $A $B"`, ExecOptions{})
	mustOK(t, err)
	want := filepath.Join(l.jailHost(t), "t1/inner")
	if string(out) != want+"\n"+want+" s2 root s1\n" {
		t.Fatalf("scoped exec = %q", out)
	}
	out, err = s2.Exec(ctx, `echo $LEVEL`, ExecOptions{Env: map[string]string{"LEVEL": "call"}})
	if err != nil || string(out) != "call\n" {
		t.Fatalf("per-call env over scope env = %q %v", out, err)
	}
	out, err = s1.Exec(ctx, `echo $LEVEL`, ExecOptions{})
	if err != nil || string(out) != "s1\n" {
		t.Fatalf("parent scope env = %q %v", out, err)
	}
	if _, err := s1.Exec(ctx, "pwd", ExecOptions{Dir: "../"}); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("scope Dir escape: %v", err)
	}
}

func TestScopeLifecycle(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{})
	s, err := l.Scope("a", ScopeOptions{})
	mustOK(t, err)
	child, err := s.Scope("b", ScopeOptions{})
	mustOK(t, err)
	if l.scopes.len() != 1 || s.children.len() != 1 {
		t.Fatalf("registrations = %d, %d", l.scopes.len(), s.children.len())
	}
	if s.Status() != StatusConnected {
		t.Fatalf("scope status = %v", s.Status())
	}
	// Track lands on the root backend.
	c := &countCloser{}
	child.Track(c)
	// Destroying a scope unregisters it, never destroys the parent; its
	// children become orphans.
	mustOK(t, s.Destroy(ctx))
	mustOK(t, s.Destroy(ctx))
	if l.scopes.len() != 0 {
		t.Fatal("scope still registered after Destroy")
	}
	if l.Status() != StatusConnected || c.n != 0 {
		t.Fatalf("parent affected: %v, closer %d", l.Status(), c.n)
	}
	if s.Status() != StatusDestroyed {
		t.Fatalf("destroyed scope status = %v", s.Status())
	}
	if err := child.Write(ctx, "x", nil); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("orphan write: %v", err)
	}
	if err := l.Write(ctx, "a/still", []byte("ok")); err != nil {
		t.Fatalf("parent after scope destroy: %v", err)
	}
	// The scope status follows the parent dynamically.
	s3, err := l.Scope("c", ScopeOptions{})
	mustOK(t, err)
	var seen []Status
	var mu sync.Mutex
	s3.OnStatusChange(func(_, n Status) { mu.Lock(); seen = append(seen, n); mu.Unlock() })
	mustOK(t, l.Destroy(ctx))
	if s3.Status() != StatusDestroyed || c.n != 1 {
		t.Fatalf("after root destroy: scope %v closer %d", s3.Status(), c.n)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != StatusDestroyed {
		t.Fatalf("scope subscriber saw %v", seen)
	}
	mu.Unlock()
	if _, err := s3.Read(ctx, "x"); !errors.Is(err, ErrDestroyed) {
		t.Fatalf("scope op after root destroy: %v", err)
	}
}

type countCloser struct {
	mu sync.Mutex
	n  int
}

func (c *countCloser) Close() error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return nil
}

// TestScopeRootCreatedOnce: concurrent first writes create the scope
// directory exactly once; a failed creation is retried by the next write.
func TestScopeRootCreatedOnce(t *testing.T) {
	ctx := context.Background()
	rec := &OpRecorder{}
	root := t.TempDir()
	l := newExecLocal(t, LocalConfig{RootDir: root, Logger: rec, LogMode: LogVerbose})
	s, err := l.Scope("tenant", ScopeOptions{Logger: &OpRecorder{}})
	mustOK(t, err)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := s.Write(ctx, "f"+strings.Repeat("x", i), []byte("d")); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if n := s.creations.Load(); n != 1 {
		t.Fatalf("scope root created %d times", n)
	}
	for _, e := range rec.Entries() {
		if e.Op == "mkdir" {
			t.Fatalf("the scope's own directory creation was logged as a user mkdir: %+v", e)
		}
	}

	// A file in the way makes creation fail; once removed, writes succeed.
	mustOK(t, os.WriteFile(filepath.Join(root, "blocked"), []byte("file"), 0o644))
	b, err := l.Scope("blocked", ScopeOptions{})
	mustOK(t, err)
	if err := b.Write(ctx, "x", []byte("1")); err == nil {
		t.Fatal("write under a file succeeded")
	}
	mustOK(t, os.Remove(filepath.Join(root, "blocked")))
	if err := b.Write(ctx, "x", []byte("1")); err != nil {
		t.Fatalf("retry after failure: %v", err)
	}
	if n := b.creations.Load(); n != 2 {
		t.Fatalf("creation attempts = %d, want 2 (failed, retried)", n)
	}
}

func TestScopeMemory(t *testing.T) {
	ctx := context.Background()
	m, err := NewMemory(MemoryConfig{Initial: map[string][]byte{"users/u2/secret": []byte("s")}})
	mustOK(t, err)
	s, err := m.Scope("users/u1", ScopeOptions{})
	mustOK(t, err)
	mustOK(t, s.Write(ctx, "/notes/a.txt", []byte("A")))
	if got, err := m.Read(ctx, "users/u1/notes/a.txt"); err != nil || string(got) != "A" {
		t.Fatalf("memory scope write = %q %v", got, err)
	}
	names, err := s.ReadDir(ctx, "/")
	if err != nil || strings.Join(names, ",") != "notes" {
		t.Fatalf("scope ReadDir = %v %v", names, err)
	}
	if _, err := s.Read(ctx, "../u2/secret"); !errors.Is(err, ErrPathEscape) {
		t.Fatalf("memory scope escape: %v", err)
	}
	if _, err := s.Exec(ctx, "true", ExecOptions{}); !errors.Is(err, ErrNotImplemented) {
		t.Fatalf("memory scope exec: %v", err)
	}
	rc, err := s.Open(ctx, "notes/a.txt")
	mustOK(t, err)
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "A" {
		t.Fatalf("Open = %q", data)
	}
}

// TestScopeDotDestroyKeepsParent: a scope of the parent's own directory
// ("." and every spelling of it) is a view of the parent; destroying it
// unregisters the view and closes nothing the parent still uses.
func TestScopeDotDestroyKeepsParent(t *testing.T) {
	ctx := context.Background()
	for _, p := range []string{".", "/", "a/..", ""} {
		t.Run(p, func(t *testing.T) {
			l := newExecLocal(t, LocalConfig{AllowDangerous: true})
			mustOK(t, l.Write(ctx, "keep.txt", []byte("keep")))
			sub, err := l.Scope("sub", ScopeOptions{})
			mustOK(t, err)
			mustOK(t, sub.Write(ctx, "in.txt", []byte("in")))
			// The dot scope of the root, and of a scope.
			for _, parent := range []interface {
				Scope(string, ScopeOptions) (*Scope, error)
			}{l, sub} {
				dot, err := parent.Scope(p, ScopeOptions{})
				if err != nil {
					t.Fatalf("Scope(%q): %v", p, err)
				}
				// Use the view first, so whatever it opens lazily is open.
				mustOK(t, dot.Write(ctx, "dot.txt", []byte("dot")))
				if _, err := dot.Read(ctx, "dot.txt"); err != nil {
					t.Fatalf("dot read: %v", err)
				}
				if _, err := dot.Exec(ctx, "true", ExecOptions{}); err != nil {
					t.Fatalf("dot exec: %v", err)
				}
				mustOK(t, dot.Destroy(ctx))
				if _, err := dot.Read(ctx, "dot.txt"); !errors.Is(err, ErrDestroyed) {
					t.Fatalf("destroyed dot scope read: %v", err)
				}
			}
			if l.Status() != StatusConnected {
				t.Fatalf("parent status %v", l.Status())
			}
			for name, b := range map[string]Backend{"root": l, "scope": sub} {
				mustOK(t, b.Write(ctx, "after.txt", []byte("after")))
				if got, err := b.Read(ctx, "dot.txt"); err != nil || string(got) != "dot" {
					t.Fatalf("%s read after dot destroy: %q, %v", name, got, err)
				}
				rc, err := b.Open(ctx, "after.txt")
				mustOK(t, err)
				rc.Close()
				if out, err := b.Exec(ctx, "cat after.txt", ExecOptions{}); err != nil || string(out) != "after" {
					t.Fatalf("%s exec after dot destroy: %q, %v", name, out, err)
				}
				if _, err := b.ReadDir(ctx, "."); err != nil {
					t.Fatalf("%s readdir after dot destroy: %v", name, err)
				}
			}
			// A scope made afterwards still works, as does destroying it.
			again, err := l.Scope("sub", ScopeOptions{})
			mustOK(t, err)
			if got, err := again.Read(ctx, "in.txt"); err != nil || string(got) != "in" {
				t.Fatalf("new scope after dot destroy: %q, %v", got, err)
			}
			mustOK(t, again.Destroy(ctx))
			mustOK(t, l.Destroy(ctx))
		})
	}
}
