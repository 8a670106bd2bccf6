package e2e_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

// TestGrepBackends: the same search on a Local, a Scope of it, a Remote
// (POST /v1/fs/grep), a Scope of the Remote and through the Remote's MCP
// tool gives the same answer; errors keep their kinds; Memory cannot.
func TestGrepBackends(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "tok")
	files := map[string]string{
		"src/a.go": "package a\nfunc Needle() {}\n", "src/b.txt": "no\n", "src/sub/c.go": "// needle\n",
		".git/config": "needle\n", "ignored.log": "needle\n", ".gitignore": "*.log\n",
	}
	for p, s := range files {
		must(t, os.MkdirAll(filepath.Join(d.root, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(d.root, p), []byte(s), 0o644))
	}
	l, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: d.root})
	must(t, err)
	defer l.Destroy(ctx)
	r := d.remote(t, nil)
	opts := agentbe.GrepOptions{Pattern: "(?i)needle", OutputMode: "content", LineNumbers: true}
	want := "src/a.go:2:func Needle() {}\nsrc/sub/c.go:1:// needle"
	for _, b := range []agentbe.Backend{l, r} {
		res, err := agentbe.Grep(ctx, b, opts)
		if err != nil || res.Text != want || res.Searched == 0 {
			t.Fatalf("%s: %+v %v", b.Kind(), res, err)
		}
		sc, err := b.Scope("src", agentbe.ScopeOptions{})
		must(t, err)
		res, err = agentbe.Grep(ctx, sc, agentbe.GrepOptions{Pattern: "needle", Path: "sub"})
		if err != nil || res.Text != "sub/c.go" || !reflect.DeepEqual(res.Files, []agentbe.GrepFile{{Path: "sub/c.go", Count: 1}}) {
			t.Fatalf("%s scope: %+v %v", b.Kind(), res, err)
		}
		if _, err := agentbe.Grep(ctx, sc, agentbe.GrepOptions{Pattern: "x", Path: "../.."}); !errors.Is(err, agentbe.ErrPathEscape) {
			t.Fatalf("%s scope escape: %v", b.Kind(), err)
		}
		if _, err := agentbe.Grep(ctx, b, agentbe.GrepOptions{Pattern: "x", Path: "nope"}); !errors.Is(err, fs.ErrNotExist) ||
			agentbe.GrepToolText(err) != "Command execution failed with exit code 1: nope: No such file or directory (os error 2)" {
			t.Fatalf("%s missing: %v / %q", b.Kind(), err, agentbe.GrepToolText(err))
		}
		_, err = agentbe.Grep(ctx, b, agentbe.GrepOptions{Pattern: "a{", Path: "src"})
		if !errors.Is(err, agentbe.ErrGrepInvalid) || !strings.HasPrefix(agentbe.GrepToolText(err), "Command execution failed with exit code 1: regex parse error:") {
			t.Fatalf("%s invalid: %v / %q", b.Kind(), err, agentbe.GrepToolText(err))
		}
	}
	c, err := agentbe.MCPClient(ctx, r, agentbe.MCPOptions{})
	must(t, err)
	defer c.Close()
	res, err := c.CallTool(ctx, "grep", map[string]any{"pattern": "(?i)needle", "outputMode": "content", "lineNumbers": true})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != want {
		t.Fatalf("grep over the daemon's /mcp: %+v %v", res, err)
	}

	m, err := agentbe.NewMemory(agentbe.MemoryConfig{})
	must(t, err)
	if _, err := agentbe.Grep(ctx, m, opts); !errors.Is(err, agentbe.ErrNotImplemented) {
		t.Fatalf("Memory grep: %v", err)
	}
}
