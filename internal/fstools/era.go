package fstools

import (
	"context"

	"github.com/agentbe/agent-backend/mcp"
)

// modernEra reports whether the call came in the MCP 2026-07-28 era, where
// a few error texts follow the official filesystem server 2.0.1 (which
// serves that era) rather than 2026.8.31 (the reference of the 2025 era).
func modernEra(ctx context.Context) bool { return mcp.RequestInfoFrom(ctx) != nil }
