package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/internal/testenv"
	"github.com/agentbe/agent-backend/mcp"
)

// These tests drive the real CLI binary with Node: the conformance replay of
// the official filesystem server's golden data (capture.mjs) and a full
// round with the official MCP SDK client. The binary is $AGENTBE_BIN when
// set, else built into a temp dir. Node, the SDK (interop/node_modules) and
// the conformance pack ($AGENTBE_CONFORMANCE_DIR, else the copy in
// interop/testdata/conformance) are required when $CI is set; otherwise a missing
// one skips the test.

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// need skips (or, under CI, fails) when a prerequisite is missing.
var need = testenv.Require

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// cliBinary returns the agent-backend binary to test.
func cliBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("AGENTBE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "agent-backend")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// nodeSetup returns the node binary and the interop directory holding the
// SDK.
func nodeSetup(t *testing.T) (node, interop string) {
	t.Helper()
	node, err := exec.LookPath("node")
	need(t, err == nil, "node")
	interop = filepath.Join(repoRoot(t), "interop")
	need(t, exists(filepath.Join(interop, "node_modules/@modelcontextprotocol/sdk/package.json")),
		"the MCP SDK (npm ci --prefix interop)")
	return node, interop
}

func runNode(t *testing.T, timeout time.Duration, dir string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	node, _ := exec.LookPath("node")
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// conformancePack returns the directory of capture.mjs and golden.json.
func conformancePack(t *testing.T) string {
	t.Helper()
	pack := os.Getenv("AGENTBE_CONFORMANCE_DIR")
	if pack == "" {
		pack = filepath.Join(repoRoot(t), "interop", "testdata", "conformance")
	}
	need(t, exists(filepath.Join(pack, "capture.mjs")), "the conformance pack ("+pack+")")
	return pack
}

// checkSummary fails unless capture.mjs reported no mismatch and no
// workspace failure.
func checkSummary(t *testing.T, out string, err error) {
	t.Helper()
	summary := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "summary:") {
			summary = l
		}
	}
	t.Log(summary)
	if err != nil || !strings.Contains(summary, " 0 mismatched,") || !strings.Contains(summary, " 0 workspace FAIL") {
		t.Fatalf("conformance replay failed (%v):\n%s", err, out)
	}
}

// TestConformanceHTTP replays the golden data over Streamable HTTP against
// the tools served by mcp.NewHTTPHandler with agentbe.NewMCPServer, the way
// the full daemon will serve them (stateless, one server per request).
func TestConformanceHTTP(t *testing.T) {
	_, interop := nodeSetup(t)
	pack := conformancePack(t)
	old := syscall.Umask(0o022) // the pack expects new files to show 644
	defer syscall.Umask(old)
	base := t.TempDir()
	root := filepath.Join(base, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	local, err := agentbe.NewLocal(agentbe.LocalConfig{RootDir: root, Isolation: agentbe.IsolationNone, AllowDangerous: true})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Destroy(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewHTTPHandler(func(*http.Request) (*mcp.Server, func(), error) {
		return agentbe.NewMCPServer(local), nil, nil
	}, mcp.HTTPOptions{}))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	out, err := runNode(t, 5*time.Minute, interop, nil, filepath.Join(pack, "capture.mjs"),
		"--profile", "agentbe", "--compare", filepath.Join(pack, "golden.json"),
		"--http", "http://"+ln.Addr().String()+"/mcp", "--base", base)
	checkSummary(t, out, err)
}

// TestConformanceStdio replays the golden data of the official filesystem
// server against `agent-backend daemon --local-only` with the agentbe
// profile: it must report 0 mismatches and 0 workspace failures.
func TestConformanceStdio(t *testing.T) {
	_, interop := nodeSetup(t)
	pack := conformancePack(t)
	bin := cliBinary(t)
	out, err := runNode(t, 5*time.Minute, interop, nil, filepath.Join(pack, "capture.mjs"),
		"--profile", "agentbe", "--compare", filepath.Join(pack, "golden.json"),
		"--stdio", bin+" daemon --local-only --rootDir {ROOT}")
	checkSummary(t, out, err)
}

// TestSDKToolsInterop runs every tool through the official SDK client over
// stdio, and cancels a long exec whose process must then disappear.
func TestSDKToolsInterop(t *testing.T) {
	_, interop := nodeSetup(t)
	bin := cliBinary(t)
	script := filepath.Join(repoRoot(t), "cmd/agent-backend/testdata/sdk_tools_interop.mjs")
	sdk := "MCP_SDK_DIR=" + filepath.Join(interop, "node_modules/@modelcontextprotocol/sdk")
	for _, isolation := range []string{"auto", "none"} {
		t.Run(isolation, func(t *testing.T) {
			out, err := runNode(t, 2*time.Minute, interop, []string{sdk}, script, bin, t.TempDir(), "--isolation", isolation)
			if err != nil || !strings.Contains(out, "TOOLS-INTEROP-OK") {
				t.Fatalf("interop failed (%v):\n%s", err, out)
			}
		})
	}
}
