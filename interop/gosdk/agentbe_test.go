package gosdk

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// agentbeBinary builds the agent-backend CLI of the enclosing repository.
func agentbeBinary(t *testing.T) string {
	t.Helper()
	_, err := exec.LookPath("go")
	need(t, err == nil, "go")
	bin := filepath.Join(t.TempDir(), "agent-backend")
	cmd := exec.Command("go", "build", "-C", filepath.Join("..", ".."), "-o", bin, "./cmd/agent-backend")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// toolCalls calls every tool of agentbe once, in an order where each
// finds what it needs.
var toolCalls = []struct {
	name string
	args map[string]any
	want string // a substring of the text result
}{
	{"write_file", map[string]any{"path": "w.txt", "content": "one\ntwo\n"}, "Successfully wrote"},
	{"read_text_file", map[string]any{"path": "w.txt"}, "one\ntwo\n"},
	{"read_file", map[string]any{"path": "w.txt", "head": 1}, "one"},
	{"read_multiple_files", map[string]any{"paths": []string{"w.txt", "a.txt"}}, "hello from the go sdk"},
	{"edit_file", map[string]any{"path": "w.txt", "edits": []map[string]any{{"oldText": "two", "newText": "three"}}}, "+three"},
	{"create_directory", map[string]any{"path": "d/e"}, "Successfully created"},
	{"list_directory", map[string]any{"path": "."}, "[FILE] w.txt"},
	{"list_directory_with_sizes", map[string]any{"path": "."}, "w.txt"},
	{"directory_tree", map[string]any{"path": "."}, `"name": "d"`},
	{"move_file", map[string]any{"source": "w.txt", "destination": "d/w.txt"}, "Successfully moved"},
	{"search_files", map[string]any{"path": ".", "pattern": "**/w.txt"}, "w.txt"},
	{"get_file_info", map[string]any{"path": "d/w.txt"}, "size:"},
	{"list_allowed_directories", map[string]any{}, "Allowed directories"},
	{"read_media_file", map[string]any{"path": "a.txt"}, ""},
	{"exec", map[string]any{"command": "echo via-exec"}, "via-exec"},
	{"grep", map[string]any{"pattern": "th+ree", "outputMode": "content"}, "d/w.txt:three"},
}

// driveAgentbe connects with the SDK, checks the negotiated version and
// calls every tool, a large read and a cancelled exec.
func driveAgentbe(t *testing.T, tr func() mcp.Transport, dir, ask, want string) {
	os.RemoveAll(filepath.Join(dir, "d")) // a workspace may be driven twice
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "agentbe-gosdk-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, tr(), &mcp.ClientSessionOptions{ProtocolVersion: ask})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Fatalf("negotiated %q, want %q", got, want)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The official server's 14, exec and grep.
	if len(list.Tools) != 16 || !slices.ContainsFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == "grep" }) {
		t.Fatalf("%d tools", len(list.Tools))
	}
	if want == "2026-07-28" && list.CacheScope != "private" {
		t.Errorf("tools/list cacheScope %q", list.CacheScope)
	}
	if want == "2026-07-28" {
		// The SDK's Subscribe opens a subscriptions/listen in this era (a
		// resource subscription, which we do not honour: the daemon
		// acknowledges nothing and ends the listen with its result). The
		// session goes on undisturbed, and Unsubscribe is a no-op after it.
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "file:///w.txt"}); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "file:///w.txt"}); err != nil {
			t.Fatalf("Unsubscribe: %v", err)
		}
	}
	called := map[string]bool{}
	for _, c := range toolCalls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		text := ""
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%s: isError %v, text %q, want %q in it", c.name, res.IsError, text, c.want)
		}
		called[c.name] = true
	}
	for _, tool := range list.Tools {
		if !called[tool.Name] {
			t.Errorf("tool %s not exercised", tool.Name)
		}
	}
	// A large result: a 3 MiB file read whole (6 MiB of text in the
	// message: content and structuredContent).
	big := strings.Repeat("0123456789abcdef", 3<<20/16)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "big.txt"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != big {
		t.Fatalf("large read: %v (isError %v)", err, res != nil && res.IsError)
	}
	// A cancelled exec: its process must go away.
	pidFile := filepath.Join(dir, "pid-"+strconv.Itoa(len(want)))
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "exec",
			Arguments: map[string]any{"command": "echo $$ > " + filepath.Base(pidFile) + "; exec sleep 60"}})
		done <- err
	}()
	pid := 0
	for deadline := time.Now().Add(30 * time.Second); pid == 0; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("exec did not start")
		}
	}
	ccancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled exec returned %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			break
		}
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled exec's process %d is still running", pid)
		}
	}
}

// TestAgentbeStdio drives `agent-backend daemon --local-only` over stdio
// with the Go SDK v1.8.0 in both eras: by default it discovers 2026-07-28;
// asking for 2025-11-25 it initializes.
func TestAgentbeStdio(t *testing.T) {
	bin := agentbeBinary(t)
	for _, tc := range []struct{ ask, want string }{{"", "2026-07-28"}, {"2025-11-25", "2025-11-25"}} {
		t.Run("ask="+tc.ask, func(t *testing.T) {
			dir := workspace(t)
			driveAgentbe(t, func() mcp.Transport {
				cmd := exec.Command(bin, "daemon", "--local-only", "--rootDir", dir, "--isolation", "none")
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
				return &mcp.CommandTransport{Command: cmd}
			}, dir, tc.ask, tc.want)
		})
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAgentbeHTTP drives the full daemon's /mcp with the Go SDK v1.8.0 in
// both eras.
func TestAgentbeHTTP(t *testing.T) {
	bin := agentbeBinary(t)
	dir := workspace(t)
	const token = "go-sdk-interop-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	port := freePort(t)
	cmd := exec.Command(bin, "daemon", "--rootDir", dir, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--auth-token-file", tokenFile, "--ssh-host-key", filepath.Join(t.TempDir(), "k"), "--isolation", "none")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(base + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("daemon did not become healthy")
		}
	}
	for _, tc := range []struct{ ask, want string }{{"", "2026-07-28"}, {"2025-11-25", "2025-11-25"}} {
		t.Run("ask="+tc.ask, func(t *testing.T) {
			driveAgentbe(t, func() mcp.Transport {
				return &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1,
					HTTPClient: &http.Client{Transport: bearer{token}}}
			}, dir, tc.ask, tc.want)
		})
	}
}

// freePort returns a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
