package mcp_test

import (
	"context"
	"encoding/json"

	"github.com/agentbe/agent-backend/mcp"
)

// extTool is one file tool bound to a workspace, built through the public
// API (WorkspaceToolSet and WorkspaceHandler) as a user of the package would.
type extTool struct {
	Tool    mcp.Tool
	Handler toolFunc
}

// toolFunc runs one tool on its raw arguments.
type toolFunc func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error)

// workspaceTools returns the 14 file tools bound to ws.
func workspaceTools(ws mcp.Workspace) []extTool {
	set := mcp.WorkspaceToolSet(false)
	h := mcp.WorkspaceHandler(ws, nil)
	var out []extTool
	for i, t := range set.Tools() {
		out = append(out, extTool{Tool: t, Handler: func(ctx context.Context, raw json.RawMessage) (*mcp.CallToolResult, error) {
			return h(ctx, mcp.ToolCall{Index: i, Name: t.Name, Arguments: raw})
		}})
	}
	return out
}
