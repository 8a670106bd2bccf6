package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func callText(t *testing.T, s *Server, name string) string {
	t.Helper()
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`"}}`))
	var resp struct {
		Result CallToolResult `json:"result"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.Result.Content) == 0 {
		t.Fatalf("%s: %s", name, out)
	}
	return resp.Result.Content[0].Text
}

func listNames(t *testing.T, s *Server) string {
	t.Helper()
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	var resp struct {
		Result struct {
			Tools []Tool `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("tools/list: %v: %s", err, out)
	}
	names := make([]string, len(resp.Result.Tools))
	for i, tl := range resp.Result.Tools {
		names[i] = tl.Name
	}
	return strings.Join(names, ",")
}

// byIndex serves every tool of a set with the tool's index and a tag.
func byIndex(tag string) SetHandler {
	return func(_ context.Context, i int, _ json.RawMessage) (*CallToolResult, error) {
		return TextResult(tag + string(rune('0'+i))), nil
	}
}

func TestToolSetServers(t *testing.T) {
	ts := NewToolSet(Tool{Name: "a", Description: "old"}, Tool{Name: "b"}, Tool{Name: "a", Description: "new"})
	if ts.Len() != 2 || ts.Index("a") != 0 || ts.Index("b") != 1 || ts.Index("c") != -1 || ts.Tools()[0].Description != "new" {
		t.Fatalf("set: len %d, tools %+v", ts.Len(), ts.Tools())
	}
	info := Implementation{Name: "t", Version: "1"}
	s1 := NewSetServer(info, ServerOptions{}, ts, byIndex("x"))
	s2 := NewSetServer(info, ServerOptions{}, ts, byIndex("y"))
	if got := callText(t, s1, "b") + callText(t, s2, "a"); got != "x1y0" {
		t.Fatalf("handlers: %q", got)
	}
	if got := listNames(t, s1); got != "a,b" {
		t.Fatalf("tools/list: %q", got)
	}

	// AddTool on one Server copies the set: the other Server and the set
	// are unchanged, and the earlier tools keep their handler.
	s1.AddTool(Tool{Name: "c"}, func(context.Context, json.RawMessage) (*CallToolResult, error) { return TextResult("c!"), nil })
	s1.AddTool(Tool{Name: "a", Description: "replaced"}, func(context.Context, json.RawMessage) (*CallToolResult, error) { return TextResult("a!"), nil })
	if got := callText(t, s1, "a") + callText(t, s1, "b") + callText(t, s1, "c"); got != "a!x1c!" {
		t.Fatalf("after AddTool: %q", got)
	}
	if got := listNames(t, s1); got != "a,b,c" {
		t.Fatalf("tools/list after AddTool: %q", got)
	}
	if ts.Len() != 2 || ts.Tools()[0].Description != "new" || listNames(t, s2) != "a,b" {
		t.Fatalf("shared set changed: %+v", ts.Tools())
	}
	if !strings.Contains(callText(t, s2, "c"), "not found") {
		t.Fatal("tool added to one server is visible in another")
	}
}

// TestAddToolAfterToolsList: tools/list reflects tools added after it was
// first served.
func TestAddToolAfterToolsList(t *testing.T) {
	s := NewServer(Implementation{Name: "t", Version: "1"}, ServerOptions{})
	h := func(context.Context, json.RawMessage) (*CallToolResult, error) { return TextResult(""), nil }
	s.AddTool(Tool{Name: "a"}, h)
	if got := listNames(t, s); got != "a" {
		t.Fatal(got)
	}
	s.AddTool(Tool{Name: "b"}, h)
	if got := listNames(t, s); got != "a,b" {
		t.Fatalf("stale tools/list: %q", got)
	}
}

func TestNewSetServerNilPanics(t *testing.T) {
	for _, tc := range []struct {
		ts *ToolSet
		h  SetHandler
	}{{nil, byIndex("x")}, {NewToolSet(), nil}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewSetServer(%v, handler nil %v) did not panic", tc.ts, tc.h == nil)
				}
			}()
			NewSetServer(Implementation{}, ServerOptions{}, tc.ts, tc.h)
		}()
	}
}

func TestWorkspaceToolSet(t *testing.T) {
	fs, withExec := WorkspaceToolSet(false), WorkspaceToolSet(true)
	if fs != WorkspaceToolSet(false) || withExec != WorkspaceToolSet(true) {
		t.Fatal("WorkspaceToolSet is not shared")
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
	noExec := WorkspaceHandler(ws, nil)
	for _, i := range []int{-1, len(defs), len(defs) + 1} {
		if res, err := noExec(context.Background(), i, nil); err == nil {
			t.Errorf("index %d without exec: result %+v, no error", i, res)
		}
	}
	run := func(_ context.Context, command string, _ map[string]string) (ExecResult, error) {
		return ExecResult{Stdout: []byte("ran " + command)}, nil
	}
	s := NewSetServer(Implementation{Name: "t"}, ServerOptions{}, withExec, WorkspaceHandler(ws, run))
	out := s.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exec","arguments":{"command":"x"}}}`))
	if !strings.Contains(string(out), `"ran x"`) {
		t.Fatalf("exec: %s", out)
	}
	if got := callText(t, s, "list_allowed_directories"); !strings.HasPrefix(got, "Allowed directories:\n") {
		t.Fatalf("list_allowed_directories: %q", got)
	}
}
