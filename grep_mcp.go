package agentbe

import (
	"context"

	"github.com/agentbe/agent-backend/internal/fstools"
)

// grepTool serves the grep MCP tool on b through Grep. The reference
// registers grep only beside exec (its memory backend has neither); so do
// we, though Grep itself needs no command.
func grepTool(b Backend) fstools.GrepFunc {
	return func(ctx context.Context, r fstools.GrepRequest) (string, bool) {
		res, err := Grep(ctx, b, GrepOptions{
			Pattern: r.Pattern, Path: r.Path, Glob: r.Glob, Type: r.Type, OutputMode: r.OutputMode,
			CaseInsensitive: r.CaseInsensitive, Multiline: r.Multiline,
			ContextBefore: r.Before, ContextAfter: r.After, LineNumbers: r.LineNumbers, HeadLimit: r.HeadLimit,
		})
		if err != nil {
			return GrepToolText(err), true
		}
		return res.Text, false
	}
}
