package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
)

// panicLog logs and counts the panics the daemon recovers from, wherever
// they happen (HTTP handlers, SSH connections, sessions and their work,
// MCP tools): a recovered panic is a bug, and it must be seen.
type panicLog struct {
	log *slog.Logger
	n   atomic.Int64
}

// recovered logs v, recovered in where, at Error with the stack of the
// panicking goroutine (call it from the deferred function that recovered)
// and counts it.
func (p *panicLog) recovered(where string, v any) { p.recoveredContext(context.Background(), where, v) }

// recoveredContext is recovered for a panic in the work of the request
// ctx belongs to, whose id the line then carries.
func (p *panicLog) recoveredContext(ctx context.Context, where string, v any) {
	p.n.Add(1)
	p.log.ErrorContext(ctx, "daemon: recovered panic", "where", where, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
}

// RecoveredPanics reports how many panics the server has recovered from
// since New (in HTTP handlers, SSH connections and sessions, and MCP
// tools). Each was logged at Error with its stack; any number above zero is
// a bug worth reporting.
func (s *Server) RecoveredPanics() int64 { return s.panics.n.Load() }
