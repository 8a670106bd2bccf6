package mcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// needExternal skips when an external tool is missing outside CI and
// fails inside CI (CI installs everything).
func needExternal(t *testing.T, what string, err error) {
	t.Helper()
	testenv.Require(t, err == nil, fmt.Sprintf("%s (%v)", what, err))
}

// interopDir is <repo>/interop, where the Node packages the tests drive
// are installed (npm ci --prefix interop).
func interopDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// sdkDir returns the official TypeScript SDK's directory and the node
// binary to run it with.
func sdkDir(t *testing.T) (sdk, node string) {
	t.Helper()
	node, err := exec.LookPath("node")
	needExternal(t, "node", err)
	sdk = filepath.Join(interopDir(t), "node_modules", "@modelcontextprotocol", "sdk")
	_, err = os.Stat(filepath.Join(sdk, "package.json"))
	needExternal(t, "@modelcontextprotocol/sdk (npm ci --prefix interop)", err)
	return sdk, node
}

// buildTestServer builds mcp/internal/testserver into a temp dir.
func buildTestServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testserver")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/testserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build testserver: %v\n%s", err, out)
	}
	return bin
}

// startHTTPTestServer runs the test server on a loopback port and returns
// its /mcp URL; the process is stopped at cleanup.
func startHTTPTestServer(t *testing.T, bin string) string {
	t.Helper()
	cmd := exec.Command(bin, "-http", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("test server did not start: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		t.Fatalf("unexpected first line %q", line)
	}
	return url
}

func runSDKClient(t *testing.T, args ...string) {
	t.Helper()
	sdk, node := sdkDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("testdata", "sdk_client.mjs")}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_SDK_DIR="+sdk)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SDK-INTEROP-OK") {
		t.Fatalf("SDK client: %v\n%s", err, out)
	}
}

// TestSDKInteropStdio drives the Go stdio server with the official
// TypeScript SDK client: initialize, ping, list, call (ok, unknown tool,
// panic, error), -32601 for resources, 20 concurrent calls, and an
// AbortSignal cancellation that must cancel the tool's context.
func TestSDKInteropStdio(t *testing.T) {
	sdkDir(t)
	bin := buildTestServer(t)
	runSDKClient(t, "--stdio", bin, "-stdio")
}

// TestSDKInteropHTTP is TestSDKInteropStdio over Streamable HTTP; there
// the SDK sends notifications/cancelled in a separate POST.
func TestSDKInteropHTTP(t *testing.T) {
	sdkDir(t)
	bin := buildTestServer(t)
	runSDKClient(t, "--http", startHTTPTestServer(t, bin))
}

// TestStreamClientChild drives the test server as a child process with
// the Go stream client and checks Close reaps it.
func TestStreamClientChild(t *testing.T) {
	bin := buildTestServer(t)
	cmd := exec.Command(bin, "-stdio")
	c := NewStreamClient(startChild(t, cmd), ClientOptions{})
	ctx := context.Background()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "echo", map[string]string{"text": "x"})
	if err != nil || res.Content[0].Text != "x" {
		t.Fatalf("%+v %v", res, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	if _, err := c.CallTool(cctx, "slow", nil); err != context.Canceled {
		t.Fatalf("slow: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := c.CallTool(ctx, "stats", nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(res.Content[0].Text, `"cancelled":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow not cancelled: %s", res.Content[0].Text)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if cmd.ProcessState == nil {
		t.Fatal("child not reaped")
	}
}

// childStream is a child's stdio as one stream: Close closes its stdin and
// waits for it to exit.
type childStream struct {
	io.ReadCloser  // the child's stdout
	io.WriteCloser // the child's stdin
	cmd            *exec.Cmd
}

func (c *childStream) Close() error {
	c.WriteCloser.Close()
	err := c.cmd.Wait()
	if _, exited := err.(*exec.ExitError); exited {
		return nil // stopped by the closed stdin, however it reports that
	}
	return err
}

// startChild starts cmd with its stdin and stdout as one stream.
func startChild(t *testing.T, cmd *exec.Cmd) *childStream {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &childStream{ReadCloser: stdout, WriteCloser: stdin, cmd: cmd}
}
