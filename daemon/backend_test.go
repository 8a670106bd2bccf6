package daemon

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
)

// TestRequestBackend: the one rule of what a request works on, as every
// HTTP route gets it (the principal's scope narrowed by X-Scope-Path): the
// static scope confines every request, a request without one may name its own, a refusal is a *scopeRefusal, and release
// lets go of the scope it made.
func TestRequestBackend(t *testing.T) {
	ctx := context.Background()
	free := startDaemon(t, Config{DisableSSHWS: true})
	static := startDaemon(t, Config{DisableSSHWS: true, ScopePath: "/tenant"})
	root := free.RootDir()
	os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644)
	os.Symlink("..", filepath.Join(root, "link"))
	for _, c := range []struct {
		d       *testDaemon
		header  string
		scope   string // the scope made, "" for the whole workspace
		refused string // the refusal's title
	}{
		{free, "", "", ""},
		{free, ".", "", ""},
		{free, "/users/alice", "users/alice", ""},
		{free, "a/../b", "", "Invalid scope path"},
		{free, "link", "", "Invalid scope path"},
		{free, "file", "", "Invalid scope path"},
		{static, "", "tenant", ""},
		{static, "other", "", "Scope conflict"},
	} {
		b, release, err := c.d.requestBackend(ctx, principal{scope: c.d.staticScope}, c.header)
		var refused *scopeRefusal
		switch {
		case c.refused != "":
			if !errors.As(err, &refused) || refused.title != c.refused || b != nil {
				t.Errorf("%q: %v, want the refusal %q", c.header, err, c.refused)
			}
			continue
		case err != nil:
			t.Errorf("%q: %v", c.header, err)
			continue
		}
		sc, scoped := b.(*agentbe.Scope)
		switch {
		case c.scope == "" && b != agentbe.Backend(c.d.local):
			t.Errorf("%q: %T, want the workspace", c.header, b)
		case c.scope != "" && (!scoped || sc.Path() != c.scope):
			t.Errorf("%q: %T, want the scope %s", c.header, b, c.scope)
		case c.scope != "":
			if fi, err := os.Lstat(filepath.Join(c.d.RootDir(), c.scope)); err != nil || !fi.IsDir() {
				t.Errorf("%q: the scope's directory was not made: %v", c.header, err)
			}
		}
		release()
		if scoped && sc.Status() != agentbe.StatusDestroyed {
			t.Errorf("%q: release left the scope open", c.header)
		}
	}
}

// TestSSHStaticScopeRefused: an SSH session under a static scope that is
// a link out of the workspace is refused before it runs anything, like
// the HTTP routes refuse it.
func TestSSHStaticScopeRefused(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(root, "tenant"))
	d := startDaemon(t, Config{RootDir: root, ScopePath: "tenant"})
	_, err := runSSH(t, sshClient(t, d, "", ""), "touch pwned", "")
	if err == nil || !strings.Contains(err.Error(), "Scope path must") {
		t.Errorf("session in a linked scope: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the session wrote outside the workspace: %d entries", len(ents))
	}
	status, body := d.post(t, toolCall("list_directory", `{"path":"."}`))
	if status != http.StatusBadRequest || !strings.Contains(body, "Invalid scope path") {
		t.Errorf("/mcp in a linked scope: %d %s", status, body)
	}
}
