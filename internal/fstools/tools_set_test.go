package fstools

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/agentbe/agent-backend/mcp"
)

func TestToolsSet(t *testing.T) {
	fs, withExec := Tools(false), Tools(true)
	if fs != Tools(false) || withExec != Tools(true) {
		t.Fatal("Tools is not shared")
	}
	defs := filesystemToolDefinitions()
	if fs.Len() != len(defs) || withExec.Len() != len(defs)+1 || withExec.Tools()[len(defs)].Name != "exec" || fs.Index("exec") != -1 {
		t.Fatalf("sets: %d and %d tools", fs.Len(), withExec.Len())
	}
	for i, d := range defs {
		if fs.Tools()[i].Name != d.Name || withExec.Tools()[i].Name != d.Name {
			t.Fatalf("tool %d: %s / %s, want %s", i, fs.Tools()[i].Name, withExec.Tools()[i].Name, d.Name)
		}
	}
	ws, err := newRootWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	noExec := Handler(ws, nil, Limits{})
	for _, i := range []int{-1, len(defs), len(defs) + 1} {
		if res, err := noExec(context.Background(), mcp.ToolCall{Index: i}); err == nil {
			t.Errorf("index %d without exec: result %+v, no error", i, res)
		}
	}
	run := func(_ context.Context, command string, _ map[string]string, _ io.Writer) (ExecResult, error) {
		return ExecResult{Stdout: []byte("ran " + command)}, nil
	}
	s := mcp.NewServer(mcp.Implementation{Name: "t"}, mcp.ServerOptions{}, withExec, Handler(ws, run, Limits{}))
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"command":"x"}}}`))
	if !strings.Contains(string(out), `"ran x"`) {
		t.Fatalf("exec: %s", out)
	}
	out = s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_allowed_directories"}}`))
	if !strings.Contains(string(out), `"text":"Allowed directories:\n`) {
		t.Fatalf("list_allowed_directories: %s", out)
	}
}
