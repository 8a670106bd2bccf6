package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

// TestRemoteManyScopes: scopes each get an SFTP session of their own on
// the link; many more scopes than the daemon allows channels on one
// connection, used at once (readers held open included), all work, and
// the link keeps only a few sessions.
func TestRemoteManyScopes(t *testing.T) {
	ctx := context.Background()
	before := sftpSessions()
	d := startDaemon(t, "tok-many-scopes")
	r := d.remote(t, nil)
	const n = 24
	scopes := make([]*agentbe.Scope, n)
	for i := range scopes {
		sc, err := r.Scope(fmt.Sprintf("users/u%02d", i), agentbe.ScopeOptions{})
		must(t, err)
		scopes[i] = sc
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for round := 0; round < 2; round++ {
		for i, sc := range scopes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("f%d.txt", round)
				want := fmt.Sprintf("u%02d round %d", i, round)
				if err := sc.Write(ctx, name, []byte(want)); err != nil {
					errs <- fmt.Errorf("u%02d write: %w", i, err)
					return
				}
				rc, err := sc.Open(ctx, name)
				if err != nil {
					errs <- fmt.Errorf("u%02d open: %w", i, err)
					return
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || string(got) != want {
					errs <- fmt.Errorf("u%02d read: %q %v", i, got, err)
				}
				if names, err := sc.ReadDir(ctx, "."); err != nil || len(names) != round+1 {
					errs <- fmt.Errorf("u%02d readdir: %v %v", i, names, err)
				}
			}()
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range scopes {
		if b, err := os.ReadFile(filepath.Join(d.root, fmt.Sprintf("users/u%02d/f1.txt", i))); err != nil || !strings.HasSuffix(string(b), "round 1") {
			t.Errorf("u%02d on the host: %q %v", i, b, err)
		}
	}
	// The link's own session and at most 4 idle ones of scopes stay open:
	// the daemon ends up serving at most 5 SFTP sessions for r.
	eventually(t, "at most 4 idle scope sessions kept", func() bool { return sftpSessions()-before <= 5 })
}

// sftpSessions counts the SFTP sessions the daemons of this test binary
// serve: the goroutines running sftpjail.Serve.
func sftpSessions() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("/sftpjail.Serve("))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestRemoteScopeOutsideConnection: on a connection the daemon scoped to
// users/alice (X-Scope-Path on the upgrade), a scope outside it gets
// clear errors for commands and files, and nothing of the sibling.
func TestRemoteScopeOutsideConnection(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "tok-outside")
	must(t, os.MkdirAll(filepath.Join(d.root, "users/bob"), 0o755))
	must(t, os.WriteFile(filepath.Join(d.root, "users/bob/secret.txt"), []byte("bob's"), 0o644))
	must(t, os.MkdirAll(filepath.Join(d.root, "users/alice"), 0o755))
	r := d.remote(t, func(c *agentbe.RemoteConfig) {
		c.RootDir = filepath.Join(d.root, "users/alice")
		c.Headers = http.Header{"X-Scope-Path": {"users/alice"}}
	})
	must(t, r.Write(ctx, "mine.txt", []byte("alice's")))
	if out, err := r.Exec(ctx, "cat mine.txt", agentbe.ExecOptions{}); err != nil || string(out) != "alice's" {
		t.Fatalf("alice's own scope: %q %v", out, err)
	}
	other := d.remote(t, func(c *agentbe.RemoteConfig) { c.Headers = http.Header{"X-Scope-Path": {"users/alice"}} })
	bob, err := other.Scope("users/bob", agentbe.ScopeOptions{})
	must(t, err)
	out, err := bob.Exec(ctx, "cat secret.txt", agentbe.ExecOptions{})
	if err == nil || strings.Contains(string(out), "bob's") || !strings.Contains(err.Error(), "refused the scope") {
		t.Errorf("exec in bob's scope on alice's connection: %q %v", out, err)
	}
	data, err := bob.Read(ctx, "secret.txt")
	if err == nil || strings.Contains(string(data), "bob's") || !strings.Contains(err.Error(), "refused the scope") {
		t.Errorf("read in bob's scope on alice's connection: %q %v", data, err)
	}
	if errors.Is(err, agentbe.ErrConnectionClosed) {
		t.Errorf("a refused scope reads as a lost connection: %v", err)
	}
}

// BenchmarkRemoteScopeRead reads a 4 KiB file through the root Remote
// (the connection's SFTP session) next to the same through a scope (its
// own session, jailed by the daemon), once the session is open.
func BenchmarkRemoteScopeRead(b *testing.B) {
	ctx := context.Background()
	d := startDaemon(b, "tok-bench-scope")
	r := d.remote(b, nil)
	sc, err := r.Scope("users/alice", agentbe.ScopeOptions{})
	must(b, err)
	must(b, sc.Write(ctx, "f", make([]byte, 4096)))
	for _, c := range []struct {
		name string
		be   agentbe.Backend
		p    string
	}{{"root", r, "users/alice/f"}, {"scope", sc, "f"}} {
		be, p := c.be, c.p
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := be.Read(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
