package acp

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// startSandboxAgent runs the pinned sandbox-agent 0.4.2 binary (installed
// by npm ci --prefix interop) on a loopback port with HOME set to a fresh
// directory, which is where it resolves relative fs paths. Its "mock"
// agent launcher is replaced by the Node test agent, so both servers proxy
// the same agent.
func startSandboxAgent(t *testing.T) (url, home string) {
	t.Helper()
	bin := filepath.Join(interopDir(t), "node_modules", "@sandbox-agent", "cli-linux-x64", "bin", "sandbox-agent")
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("sandbox-agent binary missing (npm ci --prefix interop): %v", err)
	}
	if fi.Mode()&0o111 == 0 { // its postinstall (chmod +x) may not have run
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(t.TempDir(), "sandbox-agent")
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home = filepath.Join(t.TempDir(), "home")
	os.MkdirAll(home, 0o755)
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ACP_SDK=" + acpSDK(t)}
	install := exec.Command(bin, "install-agent", "mock") // built in: no network
	install.Dir, install.Env = home, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("sandbox-agent install-agent mock: %v\n%s", err, out)
	}
	launcher := filepath.Join(home, ".local/share/sandbox-agent/bin/agent_processes/mock-acp")
	if _, err := os.Stat(launcher); err != nil {
		t.Fatalf("mock launcher not where expected: %v", err)
	}
	os.WriteFile(launcher, []byte("#!/bin/sh\nexec node "+agentSource(t)+"\n"), 0o755)
	port := testenv.FreePort(t)
	cmd := exec.Command(bin, "server", "--no-token", "--no-telemetry", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Dir = home
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url = "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if r, err := http.Get(url + "/v1/health"); err == nil {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sandbox-agent did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url, home
}

type goldenCase struct {
	name, method, path, ctype, body string
	// diff, when set, documents why our answer intentionally differs from
	// sandbox-agent's (status, or shape), and what we answer instead.
	diff       string
	wantStatus int // our status when diff is set (0: same as theirs)
}

type goldenAnswer struct {
	status int
	ctype  string
	body   []byte
}

func ask(t *testing.T, base string, c goldenCase) goldenAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, c.method, base+c.path, strings.NewReader(c.body))
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return goldenAnswer{status: -1, body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	mt, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	return goldenAnswer{resp.StatusCode, mt, b}
}

// shape is the structure of a JSON value: object keys (recursively),
// array element shapes, and the type of scalars; problem+json bodies keep
// their "type" value, the part clients switch on.
func shape(v any, problemType bool) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for _, k := range keys {
			if k == "details" || k == "detail" {
				fmt.Fprintf(&b, "%s,", k) // free text
				continue
			}
			if k == "type" && problemType {
				fmt.Fprintf(&b, "type=%v,", x[k])
				continue
			}
			fmt.Fprintf(&b, "%s:%s,", k, shape(x[k], false))
		}
		return b.String() + "}"
	case []any:
		if len(x) == 0 {
			return "[]"
		}
		return "[" + shape(x[0], false) + "]"
	case nil:
		return "null"
	default:
		return fmt.Sprintf("%T", x)
	}
}

func (a goldenAnswer) shape() string {
	var v any
	if json.Unmarshal(a.body, &v) != nil {
		return fmt.Sprintf("raw(%d bytes)", len(a.body))
	}
	return shape(v, a.ctype == "application/problem+json")
}

// TestGoldenVsSandboxAgent replays one corpus against the sandbox-agent
// 0.4.2 binary and against our handler, and requires the same status,
// media type and JSON shape, except for the documented differences (each
// one a fix of an escape or bug of sandbox-agent, or a more precise
// status), whose answers are checked too.
func TestGoldenVsSandboxAgent(t *testing.T) {
	saURL, home := startSandboxAgent(t)
	ours, root := startTestServer(t, buildTestServer(t), "-agent", "mock=exec node src/agent.mjs")
	os.WriteFile(filepath.Join(home, "outside-probe.txt"), []byte("x"), 0o644)
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "t/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "t/a.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("A"))
	tw.Close()
	var evil bytes.Buffer
	tw = tar.NewWriter(&evil)
	tw.WriteHeader(&tar.Header{Name: "../escaped.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("E"))
	tw.Close()
	var symTar bytes.Buffer
	tw = tar.NewWriter(&symTar)
	tw.WriteHeader(&tar.Header{Name: "lnk", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777})
	tw.Close()
	var partial bytes.Buffer
	tw = tar.NewWriter(&partial)
	tw.WriteHeader(&tar.Header{Name: "good.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("G"))
	tw.WriteHeader(&tar.Header{Name: "../bad.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("B"))
	tw.Close()
	hostFile := filepath.Join(home, "outside-probe.txt")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`
	cases := []goldenCase{
		{name: "root", method: "GET", path: "/"},
		{name: "health", method: "GET", path: "/v1/health"},
		{name: "acp list empty", method: "GET", path: "/v1/acp"},
		{name: "agent info", method: "GET", path: "/v1/agents/mock"},
		{name: "put file", method: "PUT", path: "/v1/fs/file?path=sub/a.txt", ctype: "application/octet-stream", body: "hello"},
		{name: "get file", method: "GET", path: "/v1/fs/file?path=sub/a.txt"},
		{name: "stat file", method: "GET", path: "/v1/fs/stat?path=sub/a.txt"},
		{name: "stat dir", method: "GET", path: "/v1/fs/stat?path=sub"},
		{name: "entries", method: "GET", path: "/v1/fs/entries?path=sub"},
		{name: "mkdir", method: "POST", path: "/v1/fs/mkdir?path=d1/d2"},
		{name: "move", method: "POST", path: "/v1/fs/move", ctype: "application/json", body: `{"from":"sub/a.txt","to":"sub/b.txt"}`},
		{name: "delete file", method: "DELETE", path: "/v1/fs/entry?path=sub/b.txt"},
		{name: "delete dir recursive", method: "DELETE", path: "/v1/fs/entry?path=d1&recursive=true"},
		{name: "stat missing", method: "GET", path: "/v1/fs/stat?path=nope",
			diff: "404 not_found instead of 400 invalid_request for a missing path", wantStatus: 404},
		{name: "move missing with overwrite", method: "POST", path: "/v1/fs/move", ctype: "application/json",
			body: `{"from":"nope","to":"sub","overwrite":true}`,
			diff: "404 for a missing source (400 there); the destination is never touched", wantStatus: 404},
		{name: "read with ..", method: "GET", path: "/v1/fs/file?path=../../etc/hostname",
			diff: "403 path_escape instead of 400 invalid_request", wantStatus: 403},
		{name: "read host absolute path", method: "GET", path: "/v1/fs/file?path=" + hostFile,
			diff: "ESCAPE in sandbox-agent: an absolute path reads any host file; here it is workspace-relative (404)", wantStatus: 404},
		{name: "upload batch", method: "POST", path: "/v1/fs/upload-batch?path=up", ctype: "application/x-tar", body: tb.String()},
		{name: "delete non-empty dir", method: "DELETE", path: "/v1/fs/entry?path=up",
			diff: "409 conflict instead of 502 stream_error for a non-empty directory", wantStatus: 409},
		{name: "upload wrong type", method: "POST", path: "/v1/fs/upload-batch", ctype: "application/octet-stream", body: tb.String(),
			diff: "415 unsupported_media_type instead of 400, as docs/acp-proxy.md maps content types", wantStatus: 415},
		{name: "upload tar slip", method: "POST", path: "/v1/fs/upload-batch?path=up", ctype: "application/x-tar", body: evil.String()},
		{name: "upload symlink member", method: "POST", path: "/v1/fs/upload-batch?path=symup", ctype: "application/x-tar", body: symTar.String(),
			diff: "ESCAPE in sandbox-agent: it extracts a symbolic link to any host path (here /etc); refused with 400 here", wantStatus: 400},
		{name: "upload partial", method: "POST", path: "/v1/fs/upload-batch?path=partup", ctype: "application/x-tar", body: partial.String(),
			diff: "same 400, but sandbox-agent keeps the members before the bad one; nothing is written here", wantStatus: 400},
		{name: "mkdir config dir", method: "POST", path: "/v1/fs/mkdir?path=proj"},
		{name: "mcp get missing", method: "GET", path: "/v1/config/mcp?directory=proj&mcpName=fs"},
		{name: "mcp put", method: "PUT", path: "/v1/config/mcp?directory=proj&mcpName=fs", ctype: "application/json",
			body: `{"type":"local","command":"node","args":["x.js"]}`},
		{name: "mcp get", method: "GET", path: "/v1/config/mcp?directory=proj&mcpName=fs"},
		{name: "mcp put invalid", method: "PUT", path: "/v1/config/mcp?directory=proj&mcpName=x", ctype: "application/json",
			body: `{"type":"bogus"}`, diff: "problem+json body instead of text/plain", wantStatus: 422},
		{name: "mcp missing directory", method: "GET", path: "/v1/config/mcp?mcpName=fs",
			diff: "problem+json body instead of text/plain", wantStatus: 400},
		{name: "mcp delete", method: "DELETE", path: "/v1/config/mcp?directory=proj&mcpName=fs"},
		{name: "skills put", method: "PUT", path: "/v1/config/skills?directory=proj&skillName=s", ctype: "application/json",
			body: `{"sources":[{"type":"local","source":"./skills"}]}`},
		{name: "skills get", method: "GET", path: "/v1/config/skills?directory=proj&skillName=s"},
		{name: "skills delete", method: "DELETE", path: "/v1/config/skills?directory=proj&skillName=s"},
		{name: "acp first post without agent", method: "POST", path: "/v1/acp/g1", ctype: "application/json", body: init},
		{name: "acp unknown agent", method: "POST", path: "/v1/acp/g1?agent=bogus", ctype: "application/json", body: init},
		{name: "acp wrong content type", method: "POST", path: "/v1/acp/g1?agent=mock", ctype: "text/plain", body: init},
		{name: "acp invalid json", method: "POST", path: "/v1/acp/g1?agent=mock", ctype: "application/json", body: "{bad"},
		{name: "acp array body", method: "POST", path: "/v1/acp/g1?agent=mock", ctype: "application/json", body: "[1]"},
		{name: "acp initialize", method: "POST", path: "/v1/acp/g1?agent=mock", ctype: "application/json", body: init},
		{name: "acp ext request", method: "POST", path: "/v1/acp/g1", ctype: "application/json",
			body: `{"jsonrpc":"2.0","id":2,"method":"_sandboxagent/session/list","params":{}}`},
		{name: "acp notification", method: "POST", path: "/v1/acp/g1", ctype: "application/json",
			body: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`},
		{name: "acp client response", method: "POST", path: "/v1/acp/g1", ctype: "application/json",
			body: `{"jsonrpc":"2.0","id":99,"result":{}}`},
		{name: "acp agent mismatch", method: "POST", path: "/v1/acp/g1?agent=test", ctype: "application/json", body: init,
			diff: "the 'test' agent does not exist there (400 unsupported_agent); here it does, so the mismatch is seen (409)", wantStatus: 409},
		{name: "acp list", method: "GET", path: "/v1/acp",
			diff: "servers[] also carry status (and uptimeMs/error): the spec asks for process status", wantStatus: 200},
		{name: "acp get unknown", method: "GET", path: "/v1/acp/nope"},
		{name: "acp delete unknown", method: "DELETE", path: "/v1/acp/nope"},
		// Last: sandbox-agent really deletes its whole base directory here.
		{name: "delete root", method: "DELETE", path: "/v1/fs/entry?path=.&recursive=true",
			diff: "sandbox-agent deletes its whole base directory (HOME); refused with 403 here", wantStatus: 403},
	}
	for _, c := range cases {
		theirs, mine := ask(t, saURL, c), ask(t, ours, c)
		if c.diff != "" {
			want := c.wantStatus
			if mine.status != want {
				t.Errorf("%s: ours %d, want %d (%s): %s", c.name, mine.status, want, c.diff, mine.body)
			}
			if mine.status >= 400 && mine.ctype != "application/problem+json" {
				t.Errorf("%s: ours %s, want problem+json", c.name, mine.ctype)
			}
			t.Logf("difference %-28s theirs %d %s | ours %d: %s", c.name, theirs.status, theirs.ctype, mine.status, c.diff)
			continue
		}
		if theirs.status != mine.status || theirs.ctype != mine.ctype || theirs.shape() != mine.shape() {
			t.Errorf("%s:\n theirs %d %s %s\n ours   %d %s %s\n theirs body %.300s\n ours body   %.300s", c.name,
				theirs.status, theirs.ctype, theirs.shape(), mine.status, mine.ctype, mine.shape(), theirs.body, mine.body)
		}
		if c.name == "acp initialize" {
			// sandbox-agent re-encodes the agent's JSON (sorted keys); we
			// forward its bytes unchanged. The values must be equal.
			var a, b any
			json.Unmarshal(theirs.body, &a)
			json.Unmarshal(mine.body, &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("agent response differs:\n theirs %s\n ours   %s", theirs.body, mine.body)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "symup", "lnk")); err == nil {
		t.Error("symlink member extracted")
	}
	if _, err := os.Stat(filepath.Join(root, "partup", "good.txt")); err == nil {
		t.Error("partial archive applied")
	}
	// SSE framing: the same first events (event, id, JSON data) on both.
	theirsSSE, oursSSE := firstSSE(t, saURL+"/v1/acp/g1", 2), firstSSE(t, ours+"/v1/acp/g1", 2)
	if len(theirsSSE) != 2 || len(oursSSE) != 2 {
		t.Fatalf("SSE events: theirs %+v ours %+v", theirsSSE, oursSSE)
	}
	for i := range theirsSSE {
		if theirsSSE[i].event != oursSSE[i].event || theirsSSE[i].id != oursSSE[i].id || !jsonEqual(theirsSSE[i].data, oursSSE[i].data) {
			t.Errorf("SSE event %d:\n theirs %+v\n ours   %+v", i, theirsSSE[i], oursSSE[i])
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "escaped.txt")); err == nil {
		t.Error("tar slip escaped our workspace")
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// firstSSE reads the first n events of an SSE stream.
func firstSSE(t *testing.T, url string, n int) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: content type %q", url, resp.Header.Get("Content-Type"))
	}
	var out []sseEvent
	if n > 0 {
		scanSSE(resp.Body, func(ev sseEvent) bool {
			if ev.event != "" && ev.event != "comment" {
				out = append(out, ev)
			}
			return len(out) < n
		})
	}
	return out
}
