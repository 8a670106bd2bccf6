package agentbe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/mcp"
)

func toolNames(t *testing.T, c *mcp.Client) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tools, err := c.ListTools(ctx)
	mustOK(t, err)
	names := map[string]bool{}
	for _, tl := range tools {
		names[tl.Name] = true
	}
	return names
}

func callText(t *testing.T, c *mcp.Client, tool string, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, tool, args)
	mustOK(t, err)
	var b strings.Builder
	for _, it := range res.Content {
		b.WriteString(it.Text)
	}
	return b.String(), res.IsError
}

func TestMCPClientMemoryInProcess(t *testing.T) {
	ctx := context.Background()
	m, err := NewMemory(MemoryConfig{Initial: map[string][]byte{"notes/a.txt": []byte("from memory\n")}})
	mustOK(t, err)
	c, err := MCPClient(ctx, m, MCPOptions{})
	mustOK(t, err)
	names := toolNames(t, c)
	if len(names) != 14 || names["exec"] || !names["read_text_file"] {
		t.Fatalf("memory tools = %v", names)
	}
	if text, isErr := callText(t, c, "read_text_file", map[string]any{"path": "notes/a.txt"}); isErr || text != "from memory\n" {
		t.Fatalf("read_text_file = %q (isError %v)", text, isErr)
	}
	// A scope of the memory backend restricts the server.
	sc, err := MCPClient(ctx, m, MCPOptions{ScopePath: "notes"})
	mustOK(t, err)
	if text, isErr := callText(t, sc, "read_text_file", map[string]any{"path": "a.txt"}); isErr || text != "from memory\n" {
		t.Fatalf("scoped read = %q (isError %v)", text, isErr)
	}
	if _, isErr := callText(t, sc, "read_text_file", map[string]any{"path": "../notes/a.txt"}); !isErr {
		t.Fatal("scoped server read outside its scope")
	}
	mustOK(t, m.Destroy(ctx))
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.ListTools(cctx); err == nil {
		t.Fatal("client still works after Destroy")
	}
}

func TestMCPServerLocalExec(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{})
	c, err := MCPClient(ctx, l, MCPOptions{})
	mustOK(t, err)
	if names := toolNames(t, c); len(names) != 16 || !names["exec"] || !names["grep"] {
		t.Fatalf("local tools = %v", names)
	}
	if text, isErr := callText(t, c, "exec", map[string]any{"command": "echo $GREETING", "env": map[string]string{"GREETING": "hi"}}); isErr || !strings.Contains(text, "hi") {
		t.Fatalf("exec = %q (isError %v)", text, isErr)
	}
	// The backend's safety check applies to the exec tool.
	if text, isErr := callText(t, c, "exec", map[string]any{"command": "sudo ls"}); !isErr {
		t.Fatalf("dangerous command ran through MCP: %q", text)
	}
}

// TestMCPClientLocalSpawn drives the real CLI, as the TypeScript client does.
func TestMCPClientLocalSpawn(t *testing.T) {
	bin := buildCLI(t)
	ctx := context.Background()
	root := t.TempDir()
	l := newExecLocal(t, LocalConfig{RootDir: root})
	mustOK(t, l.Write(ctx, "t1/hello.txt", []byte("spawned\n")))
	c, err := MCPClient(ctx, l, MCPOptions{Subprocess: true, Binary: bin, ScopePath: "t1"})
	mustOK(t, err)
	if text, isErr := callText(t, c, "read_text_file", map[string]any{"path": "hello.txt"}); isErr || text != "spawned\n" {
		t.Fatalf("read through spawned CLI = %q (isError %v)", text, isErr)
	}
	if text, _ := callText(t, c, "exec", map[string]any{"command": "pwd"}); !strings.Contains(text, filepath.Join("t1")) {
		t.Fatalf("spawned exec pwd = %q", text)
	}
	mustOK(t, l.Destroy(ctx))
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := c.ListTools(cctx); err == nil {
		t.Fatal("client still works after Destroy")
	}
}

// buildCLI returns the agent-backend binary: $AGENTBE_BIN when set, else one
// built into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("AGENTBE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "agent-backend")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/agent-backend").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestMCPExecOutputBounded: a command printing far more than an MCP
// message may carry gets the first part of its output with a note giving
// the full length (as the backend counted it), within the server's exec
// limit; a failing one gets its exit code, stderr and stdout.
func TestMCPExecOutputBounded(t *testing.T) {
	ctx := context.Background()
	l := newExecLocal(t, LocalConfig{})
	c, err := MCPClient(ctx, l, MCPOptions{Server: MCPServerOptions{MaxExecOutputBytes: 64 << 10}})
	mustOK(t, err)
	text, isErr := callText(t, c, "exec", map[string]any{"command": "head -c 30000000 /dev/zero"})
	if isErr || len(text) > 64<<10 || !strings.HasSuffix(text, "... [Output truncated. Full output was 30000000 bytes, showing first "+
		strconv.Itoa(strings.Count(text, "\x00"))+"]") {
		t.Fatalf("exec: error %v, %d bytes, ends %q", isErr, len(text), text[max(0, len(text)-100):])
	}
	text, isErr = callText(t, c, "exec", map[string]any{"command": "echo out; echo err >&2; exit 3"})
	if want := "Command execution failed with exit code 3: err\n\nstdout:\nout"; !isErr || text != want {
		t.Fatalf("failing exec = %q, want %q", text, want)
	}
}
