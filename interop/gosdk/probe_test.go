package gosdk

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// need returns when ok; otherwise it fails under CI=true (CI installs every
// prerequisite) and skips elsewhere, like the library's internal/testenv.
func need(t *testing.T, ok bool, what string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing (required when CI is set)", what)
	}
	t.Skipf("%s is missing; run npm ci --prefix interop", what)
}

// fsServer returns node and the entry point of the official filesystem
// server pinned in interop/package.json under alias ("server-filesystem-2026"
// is 2.0.1, which serves 2026-07-28 and the 2025 versions; "-2025" is
// 2026.8.31, 2025 versions only).
func fsServer(t *testing.T, alias string) (node, entry string) {
	t.Helper()
	node, err := exec.LookPath("node")
	need(t, err == nil, "node")
	entry, err = filepath.Abs(filepath.Join("..", "node_modules", alias, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = os.Stat(entry)
	need(t, err == nil, alias+" (npm ci --prefix interop)")
	return node, entry
}

// workspace returns a fresh directory holding a.txt.
func workspace(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello from the go sdk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func stdioTransport(node, entry, dir string) mcp.Transport {
	cmd := exec.Command(node, entry, dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}
	return &mcp.CommandTransport{Command: cmd}
}

func checkReport(t *testing.T, rep *Report, wantVersion string) {
	t.Helper()
	if rep.ProtocolVersion != wantVersion {
		t.Errorf("negotiated %q, want %q", rep.ProtocolVersion, wantVersion)
	}
	if len(rep.Tools) != 14 || !slices.Contains(rep.Tools, "read_text_file") {
		t.Errorf("tools = %v, want the filesystem server's 14", rep.Tools)
	}
	if got := rep.CallText(); got != "hello from the go sdk\n" {
		t.Errorf("read_text_file = %q (isError %v)", got, rep.Call != nil && rep.Call.IsError)
	}
}

var readA = func(dir string) Options {
	return Options{Tool: "read_text_file", Args: map[string]any{"path": filepath.Join(dir, "a.txt")}}
}

// TestStdio2026 drives server-filesystem 2.0.1 over stdio: the SDK's
// server/discover succeeds and the session is in the 2026-07-28 era, with
// the cache hints the reference puts on tools/list.
func TestStdio2026(t *testing.T) {
	node, entry := fsServer(t, "server-filesystem-2026")
	dir := workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Probe(ctx, stdioTransport(node, entry, dir), readA(dir))
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, "2026-07-28")
	if rep.Server == nil || rep.Server.Name != "secure-filesystem-server" {
		t.Errorf("server info = %+v", rep.Server)
	}
	if rep.ListCacheScope != "private" || rep.ListTTLMs != 0 {
		t.Errorf("tools/list cache hints = ttlMs %d, cacheScope %q; the reference sends 0, private", rep.ListTTLMs, rep.ListCacheScope)
	}
}

// TestStdioFallback2025 drives server-filesystem 2026.8.31, which knows no
// server/discover: the SDK falls back to initialize without an error, so
// only the negotiated version tells the eras apart.
func TestStdioFallback2025(t *testing.T) {
	node, entry := fsServer(t, "server-filesystem-2025")
	dir := workspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Probe(ctx, stdioTransport(node, entry, dir), readA(dir))
	if err != nil {
		t.Fatal(err)
	}
	checkReport(t, rep, "2025-11-25")
}

// TestHTTP drives server-filesystem 2.0.1 behind its SDK's Streamable HTTP
// entry (interop/testdata/conformance-2026/fs-http.mjs) in both eras: the
// default client negotiates 2026-07-28, one that asks for 2025-11-25 gets it.
func TestHTTP(t *testing.T) {
	node, entry := fsServer(t, "server-filesystem-2026")
	dir := workspace(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	harness, err := filepath.Abs(filepath.Join("..", "testdata", "conformance-2026", "fs-http.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, harness, "--port", strconv.Itoa(port), "--pkg", filepath.Dir(filepath.Dir(entry)), dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fs-http.mjs did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	url := "http://" + addr + "/mcp"
	for _, tc := range []struct{ ask, want string }{{"", "2026-07-28"}, {"2025-11-25", "2025-11-25"}} {
		t.Run("ask="+tc.ask, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			o := readA(dir)
			o.ProtocolVersion = tc.ask
			rep, err := Probe(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1}, o)
			if err != nil {
				t.Fatal(err)
			}
			checkReport(t, rep, tc.want)
		})
	}
}
