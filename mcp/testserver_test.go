package mcp

import (
	"context"
	"encoding/json"
)

// testTool is a tool of a test Server and the function that serves it.
type testTool struct {
	Tool
	run func(ctx context.Context, args json.RawMessage) (*CallToolResult, error)
}

// testServer returns a Server offering tools, each call served by its
// tool's run (a later tool of the same name replaces an earlier one).
func testServer(info Implementation, opts ServerOptions, tools ...testTool) *Server {
	defs := make([]Tool, len(tools))
	runs := make(map[string]func(context.Context, json.RawMessage) (*CallToolResult, error), len(tools))
	for i, t := range tools {
		defs[i] = t.Tool
		runs[t.Name] = t.run
	}
	return NewServer(info, opts, NewToolSet(defs...), func(ctx context.Context, c ToolCall) (*CallToolResult, error) {
		return runs[c.Name](ctx, c.Arguments)
	})
}
