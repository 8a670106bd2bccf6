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
func byIndex(tag string) ToolHandler {
	return func(_ context.Context, c ToolCall) (*CallToolResult, error) {
		return TextResult(tag + string(rune('0'+c.Index))), nil
	}
}

func TestToolSetServers(t *testing.T) {
	ts := NewToolSet(Tool{Name: "a", Description: "old"}, Tool{Name: "b"}, Tool{Name: "a", Description: "new"})
	if ts.Len() != 2 || ts.Index("a") != 0 || ts.Index("b") != 1 || ts.Index("c") != -1 || ts.Tools()[0].Description != "new" {
		t.Fatalf("set: len %d, tools %+v", ts.Len(), ts.Tools())
	}
	info := Implementation{Name: "t", Version: "1"}
	s1 := NewServer(info, ServerOptions{}, ts, byIndex("x"))
	s2 := NewServer(info, ServerOptions{}, ts, byIndex("y"))
	if got := callText(t, s1, "b") + callText(t, s2, "a"); got != "x1y0" {
		t.Fatalf("handlers: %q", got)
	}
	if got := listNames(t, s1) + ";" + listNames(t, s2); got != "a,b;a,b" {
		t.Fatalf("tools/list: %q", got)
	}
	if !strings.Contains(callText(t, s2, "c"), "not found") {
		t.Fatal("a tool outside the set was served")
	}
	// The handler learns the called tool's name along with its index.
	named := NewServer(info, ServerOptions{}, ts, func(_ context.Context, c ToolCall) (*CallToolResult, error) {
		return TextResult(c.Name + string(c.Arguments)), nil
	})
	out := named.HandleBytes(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"b","arguments":{"x":1}}}`))
	if !strings.Contains(string(out), `"text":"b{\"x\":1}"`) {
		t.Fatalf("tools/call b: %s", out)
	}
}

// TestNewServerWithoutTools: a nil ToolSet offers no tools (and needs no
// handler); tools without a handler panic.
func TestNewServerWithoutTools(t *testing.T) {
	s := NewServer(Implementation{Name: "t", Version: "1"}, ServerOptions{}, nil, nil)
	if got := listNames(t, s); got != "" {
		t.Fatalf("tools/list: %q", got)
	}
	if !strings.Contains(callText(t, s, "a"), "Tool a not found") {
		t.Fatal("a call on a server without tools")
	}
	defer func() {
		if recover() == nil {
			t.Error("NewServer with tools and a nil handler did not panic")
		}
	}()
	NewServer(Implementation{}, ServerOptions{}, NewToolSet(Tool{Name: "a"}), nil)
}
