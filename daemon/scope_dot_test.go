package daemon

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/acp"
)

// TestScopeDotIsWholeWorkspace: X-Scope-Path "." (and its spellings) is
// the whole workspace on /mcp and /v1; such a request closes nothing, so
// later requests, commands and ACP starts still work.
func TestScopeDotIsWholeWorkspace(t *testing.T) {
	d := startDaemon(t, Config{DisableSSHWS: true,
		ACPAgents: []acp.Agent{{ID: "cat", Command: "exec cat"}}})
	v1 := func(method, path, scope, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
		if scope != "" {
			req.Header.Set("X-Scope-Path", scope)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, sc := range []string{".", "/.", "./"} {
		status, body := d.post(t, toolCall("write_file", `{"path":"dot.txt","content":"`+sc+`"}`), "X-Scope-Path", sc)
		if status != 200 || strings.Contains(body, `"isError":true`) {
			t.Fatalf("/mcp scope %q: %d %s", sc, status, body)
		}
		if b, err := os.ReadFile(filepath.Join(d.RootDir(), "dot.txt")); err != nil || string(b) != sc {
			t.Fatalf("scope %q wrote %q, %v (want the workspace root)", sc, b, err)
		}
		if c, b := v1("GET", "/v1/fs/file?path=dot.txt", sc, ""); c != 200 || b != sc {
			t.Fatalf("/v1 scope %q: %d %s", sc, c, b)
		}
		if c, b := v1("GET", "/v1/acp", sc, ""); c != 200 {
			t.Fatalf("/v1/acp scope %q: %d %s", sc, c, b)
		}
	}
	// Everything still works afterwards.
	status, body := d.post(t, toolCall("exec", `{"command":"cat dot.txt"}`))
	if status != 200 || !strings.Contains(body, `./`) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("exec after dot scopes: %d %s", status, body)
	}
	status, body = d.post(t, toolCall("write_file", `{"path":"f.txt","content":"u"}`), "X-Scope-Path", "u")
	if status != 200 || strings.Contains(body, `"isError":true`) {
		t.Fatalf("scoped request after dot scopes: %d %s", status, body)
	}
	if c, b := v1("PUT", "/v1/fs/file?path=after.txt", "", "after"); c != 200 {
		t.Fatalf("/v1 write after dot scopes: %d %s", c, b)
	}
	c, b := v1("POST", "/v1/acp/s1?agent=cat", "", `{"jsonrpc":"2.0","method":"ping"}`)
	if c != http.StatusAccepted {
		t.Fatalf("ACP start after dot scopes: %d %s", c, b)
	}
	if c, b := v1("DELETE", "/v1/acp/s1", "", ""); c >= 300 {
		t.Fatalf("ACP delete: %d %s", c, b)
	}
	if strings.Contains(d.log.String(), "panic") {
		t.Fatalf("a handler panicked:\n%s", d.log.String())
	}
}
