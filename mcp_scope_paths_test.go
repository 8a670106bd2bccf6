package agentbe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/mcp"

	"github.com/agentbe/agent-backend/internal/fstools"
)

// TestScopedWriteFileTakesTheFastPath: write_file through NewMCPServer
// costs a scope the same backend operations as the workspace itself: one
// write, which resolves its path once through the jail (and once lexically
// in the tool). A Scope that did not forward the tools' fast paths answered
// write_file through the general path: realpath, three lstat, two stat and
// the write for a new file (seven resolutions through the jail, where the
// fast path has one), realpath, lstat, stat and the write to replace one.
func TestScopedWriteFileTakesTheFastPath(t *testing.T) {
	ctx := context.Background()
	rec := &OpRecorder{}
	l := ctLocal(t, LocalConfig{Logger: rec, LogMode: LogVerbose})
	mustOK(t, l.Mkdir(ctx, "tenants/a/notes"))
	sc, err := l.Scope("tenants/a", ScopeOptions{})
	mustOK(t, err)
	defer sc.Destroy(ctx)
	ops := func(b Backend, path string) []OpEntry {
		srv := NewMCPServer(b)
		before := len(rec.Entries())
		resp := string(srv.HandleBytes(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"`+path+`","content":"hi"}}}`)))
		if !strings.Contains(resp, "Successfully wrote to") {
			t.Fatalf("write_file %s: %s", path, resp)
		}
		return rec.Entries()[before:]
	}
	for _, what := range []string{"create", "replace"} {
		local := ops(l, "tenants/a/notes/x.txt")
		scoped := ops(sc, "notes/y.txt")
		if len(local) != 1 || len(scoped) != 1 || scoped[0].Op != "write" || scoped[0].Path != filepath.Join(l.RootDir(), "tenants/a/notes/y.txt") ||
			scoped[0].Scope != "tenants/a" || !scoped[0].Success {
			t.Errorf("%s: workspace did %v, scope %+v; want one write each", what, opNames(local), scoped)
		}
	}
	if b, err := os.ReadFile(filepath.Join(l.RootDir(), "tenants/a/notes/y.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("scoped write: %q, %v", b, err)
	}
}

func opNames(es []OpEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Op
	}
	return out
}

// TestScopedWriteFileStaysInTheScope: the scoped fast path meets what the
// general path met: a link in tenant a's scope to tenant b's directory, a
// destroyed scope, a scope directory that does not exist yet.
func TestScopedWriteFileStaysInTheScope(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	root := l.RootDir()
	mustOK(t, l.Mkdir(ctx, "tenants/a"))
	mustOK(t, l.Mkdir(ctx, "tenants/b/notes"))
	mustOK(t, os.Symlink("../b/notes", filepath.Join(root, "tenants/a/notes")))
	mustOK(t, os.Symlink("../b/notes/f.txt", filepath.Join(root, "tenants/a/f.txt")))
	sc, err := l.Scope("tenants/a", ScopeOptions{})
	mustOK(t, err)
	write := func(b Backend, path string) string {
		return string(NewMCPServer(b).HandleBytes(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"`+path+`","content":"pwned"}}}`)))
	}
	for _, p := range []string{"notes/x.txt", "f.txt", "../b/notes/y.txt", "/ws/../b/notes/z.txt"} {
		if resp := write(sc, p); !strings.Contains(resp, `"isError":true`) {
			t.Errorf("write_file %s in scope a: %s", p, resp)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "tenants/b/notes")); len(ents) != 0 {
		t.Fatalf("tenant b's directory holds %d entries", len(ents))
	}
	// Both answered by the general path, as before the fast path: a
	// destroyed scope refuses, and a scope directory that does not exist is
	// a missing parent (write_file never creates directories).
	mustOK(t, sc.Destroy(ctx))
	if resp := write(sc, "new.txt"); !strings.Contains(resp, `"isError":true`) {
		t.Errorf("write_file in a destroyed scope: %s", resp)
	}
	fresh, err := l.Scope("tenants/c", ScopeOptions{})
	mustOK(t, err)
	defer fresh.Destroy(ctx)
	if resp := write(fresh, "x.txt"); !strings.Contains(resp, "ENOENT: no such file or directory, open '"+filepath.Join(root, "tenants/c/x.txt")+"'") {
		t.Errorf("write_file in a scope without its directory: %s", resp)
	}
	for _, p := range []string{"tenants/a/new.txt", "tenants/c"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// BenchmarkWriteFileScoped measures write_file of 4 KiB through
// NewMCPServer on the workspace and on a scope of it (what the daemon does
// for a request with X-Scope-Path), replacing an existing file; and, for
// comparison in the same run, on the scope as it was served before it
// forwarded the fast paths (the tools on the Scope's public methods only).
func BenchmarkWriteFileScoped(b *testing.B) {
	ctx := context.Background()
	l := ctLocal(b, LocalConfig{})
	if err := l.Mkdir(ctx, "tenants/a/notes"); err != nil {
		b.Fatal(err)
	}
	sc, err := l.Scope("tenants/a", ScopeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Destroy(ctx)
	general := func() *mcp.Server {
		return mcp.NewServer(serverInfo, mcp.ServerOptions{}, fstools.Tools(true), fstools.Handler(sc, nil, fstools.Limits{}))
	}
	content := strings.Repeat("0123456789abcde\\n", 256)
	for _, c := range []struct {
		name string
		srv  func() *mcp.Server
		path string
	}{
		{"Workspace", func() *mcp.Server { return NewMCPServer(l) }, "tenants/a/notes/w.txt"},
		{"Scope", func() *mcp.Server { return NewMCPServer(sc) }, "notes/w.txt"},
		{"ScopeGeneralPath", general, "notes/w.txt"},
	} {
		req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"` + c.path + `","content":"` + content + `"}}}`)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if resp := c.srv().HandleBytes(ctx, req); !strings.Contains(string(resp), "Successfully") {
					b.Fatal(string(resp))
				}
			}
		})
	}
}
