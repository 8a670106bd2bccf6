package agentbe

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// thirdParty is a Backend of another package: only the interface's
// methods, none of this package's hooks.
type thirdParty struct{ Backend }

func (t thirdParty) Scope(p string, opts ScopeOptions) (*Scope, error) { return NewScope(t, p, opts) }

func TestScopeOverThirdPartyBackend(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	local := newIsoLocal(t, ws, IsolationNone, false)
	mem, err := NewMemory(MemoryConfig{RootDir: "/ws"})
	mustOK(t, err)
	for name, inner := range map[string]Backend{"local": local, "memory": mem} {
		t.Run(name, func(t *testing.T) {
			tp := thirdParty{inner}
			s, err := tp.Scope("users/alice", ScopeOptions{Env: map[string]string{"WHO": "alice"}})
			mustOK(t, err)
			if s.RootDir() != filepath.Join(inner.RootDir(), "users/alice") {
				t.Errorf("RootDir %q", s.RootDir())
			}
			mustOK(t, s.Write(ctx, "a/b.txt", []byte("hi")))
			if b, err := inner.Read(ctx, "users/alice/a/b.txt"); err != nil || string(b) != "hi" {
				t.Fatalf("parent sees %q, %v", b, err)
			}
			mustOK(t, inner.Write(ctx, "users/bob/secret", []byte("bob")))
			for _, p := range []string{"../bob/secret", "a/../../bob/secret"} {
				if _, err := s.Read(ctx, p); !errors.Is(err, ErrPathEscape) {
					t.Errorf("Read(%q): %v", p, err)
				}
			}
			if b, err := s.Read(ctx, s.RootDir()+"/a/b.txt"); err != nil || string(b) != "hi" {
				t.Errorf("absolute path under the scope: %q, %v", b, err)
			}
			if _, err := s.Read(ctx, "/users/bob/secret"); err == nil {
				t.Error("absolute path outside the scope read a sibling")
			}
			names, err := s.ReadDir(ctx, ".")
			if err != nil || strings.Join(names, ",") != "a" {
				t.Errorf("ReadDir %v, %v", names, err)
			}
			nested, err := s.Scope("a", ScopeOptions{})
			mustOK(t, err)
			if b, err := nested.Read(ctx, "b.txt"); err != nil || string(b) != "hi" {
				t.Errorf("nested: %q, %v", b, err)
			}
			if rp, err := s.RealPath(ctx, "a/b.txt"); err != nil || rp != s.RootDir()+"/a/b.txt" {
				t.Errorf("RealPath %q, %v", rp, err)
			}
			mustOK(t, s.Rename(ctx, "a/b.txt", "c.txt"))
			if ok, _ := inner.Exists(ctx, "users/alice/c.txt"); !ok {
				t.Error("rename did not land in the scope")
			}
			mustOK(t, s.Destroy(ctx))
			if _, err := s.Read(ctx, "c.txt"); !errors.Is(err, ErrDestroyed) {
				t.Errorf("after Destroy: %v", err)
			}
		})
	}
}

func TestScopeOverThirdPartyExec(t *testing.T) {
	ctx := context.Background()
	local := newIsoLocal(t, t.TempDir(), IsolationNone, false)
	s, err := NewScope(thirdParty{local}, "users/alice", ScopeOptions{Env: map[string]string{"WHO": "alice"}})
	mustOK(t, err)
	mustOK(t, local.Mkdir(ctx, "users/alice/sub"))
	out, err := s.Exec(ctx, `echo "$WHO"; pwd`, ExecOptions{Dir: "sub"})
	mustOK(t, err)
	host := local.jailHost(t)
	if string(out) != "alice\n"+host+"/users/alice/sub\n" {
		t.Errorf("Exec: %q", out)
	}
	if _, err := s.Exec(ctx, "pwd", ExecOptions{Dir: "../.."}); !errors.Is(err, ErrPathEscape) {
		t.Errorf("Dir escaping the scope: %v", err)
	}
}
