package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/acp"
	"github.com/agentbe/agent-backend/internal/metrics"
)

// opObserver receives every modifying operation and every command the
// workspace backend (and its scopes) performs: it counts commands in the
// metrics and writes the audit records of operations (with the request id
// of the request that caused them, read from the operation's context).
type opObserver struct{ s *Server }

var _ agentbe.ContextOpLogger = (*opObserver)(nil)

// LogOp implements agentbe.OpLogger for an operation without a context.
func (o *opObserver) LogOp(e agentbe.OpEntry) { o.LogOpContext(context.Background(), e) }

// LogOpContext implements agentbe.ContextOpLogger.
func (o *opObserver) LogOpContext(ctx context.Context, e agentbe.OpEntry) {
	s := o.s
	if s == nil || isInternal(ctx) {
		return
	}
	if e.Op == "exec" {
		res := classifyExec(e.Err)
		s.metrics.execDone(requestInfoFrom(ctx).tenantName(), res, e.Duration)
		r := s.auditStart(ctx, "exec", e.Time, e.Duration, e.Err == nil, &e.Scope)
		if r == nil {
			return
		}
		code := int64(0)
		var xe *agentbe.ExitError
		if errors.As(e.Err, &xe) {
			code = int64(xe.ExitCode)
		} else if e.Err != nil {
			code = -1
		}
		r.str("command", e.Command).num("exit_code", code).str("result", execResultNames[res]).
			flag("limit_exceeded", res == execLimit)
		if e.Err != nil && xe == nil {
			r.str("error", e.Err.Error())
		}
		s.auditEnd(r)
		return
	}
	op := e.Op
	if op == "create" { // a streamed write, committed at Close
		op = "write"
	}
	r := s.auditStart(ctx, op, e.Time, e.Duration, e.Err == nil, &e.Scope)
	if r == nil {
		return
	}
	r.str("path", s.shownPath(e.Scope, e.Path))
	if e.Path2 != "" {
		r.str("path2", s.shownPath(e.Scope, e.Path2))
	}
	if e.Err != nil {
		r.str("error", e.Err.Error())
	}
	s.auditEnd(r)
}

// toolCalled is the MCP servers' OnToolCall: it counts the call and
// writes its audit record.
func (s *Server) toolCalled(ctx context.Context, tool string, isError bool, d time.Duration) {
	s.metrics.toolCall(tool, isError)
	if r := s.auditStart(ctx, "mcp.tool", time.Now().Add(-d), d, !isError, nil); r != nil {
		s.auditEnd(r.str("tool", tool))
	}
}

// authRefused counts, logs at Info (as msg) and audits a request refused
// for a missing or invalid credential.
func (s *Server) authRefused(r *http.Request, msg, reason string) {
	info := requestInfoFrom(r.Context())
	rt := routeOf(r.URL.Path)
	if info != nil {
		rt = info.Route
	}
	s.metrics.refused.With(rt.String()).Inc()
	s.metrics.tenant(info.tenantName()).refused.Inc()
	s.cfg.Logger.InfoContext(r.Context(), msg, "reason", reason, "remote", r.RemoteAddr)
	if rec := s.auditStart(r.Context(), "auth.refused", time.Now(), 0, false, nil); rec != nil {
		s.auditEnd(rec.str("reason", reason))
	}
}

// contextHandler adds, to every record logged with the context of a
// request, its request_id and (when the client sent a traceparent) its
// trace_id.
type contextHandler struct{ h slog.Handler }

func (c contextHandler) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }

func (c contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if info := requestInfoFrom(ctx); info != nil {
		r.AddAttrs(slog.String("request_id", info.ID))
		if info.TraceID != "" {
			r.AddAttrs(slog.String("trace_id", info.TraceID))
		}
	}
	return c.h.Handle(ctx, r)
}

func (c contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{c.h.WithAttrs(as)}
}

func (c contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{c.h.WithGroup(name)}
}

// withRequestIDs returns l logging through contextHandler (l itself when
// it does already).
func withRequestIDs(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(contextHandler); ok {
		return l
	}
	return slog.New(contextHandler{l.Handler()})
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// countingConn counts an SSH connection's bytes into the daemon's
// totals.
type countingConn struct {
	net.Conn
	in, out *metrics.Counter
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.Add(uint64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.Add(uint64(n))
	return n, err
}

// initObservability makes the server's metrics and, with Config.AuditLog,
// its audit log, and binds obs (the workspace's operation logger) to s.
func (s *Server) initObservability(obs *opObserver) {
	var tools []string
	for _, t := range agentbe.NewMCPServer(s.local).Tools() {
		tools = append(tools, t.Name)
	}
	build := s.healthBody().Build
	s.metrics = newServerMetrics(tools, s.cfg.Version, build.Revision,
		func() int {
			if s.acp == nil {
				return 0
			}
			return len(s.acp.Proxy().List())
		},
		s.panics.n.Load)
	if s.cfg.AuditLog != nil {
		s.audit = newAuditLog(s.cfg.AuditLog, s.cfg.Logger, s.metrics)
	}
	s.onToolCall = s.toolCalled
	obs.s = s
}

// acpEvent audits an ACP instance's start or end.
func (s *Server) acpEvent(ctx context.Context, ev acp.InstanceEvent) {
	op, start, d := "acp.start", time.Now(), time.Duration(0)
	if !ev.Started {
		op, d = "acp.stop", ev.Lifetime
		start = start.Add(-d)
	}
	r := s.auditStart(ctx, op, start, d, true, nil)
	if r == nil {
		return
	}
	r.str("server_id", ev.ServerID).str("agent", ev.Agent)
	if !ev.Started {
		r.str("reason", ev.Reason)
	}
	s.auditEnd(r)
}

// shownPath is p, an operation's path as given to the backend (the MCP
// tools give absolute host paths), relative to the root of the scope it
// was given in when it lies beneath it, so that every record names files
// the same way whichever route changed them. It is for the record only:
// nothing is resolved with it.
func (s *Server) shownPath(scope, p string) string {
	root := s.rootDir
	if scope != "" {
		root = path.Join(root, scope)
	}
	if p == root {
		return "."
	}
	if rel, ok := strings.CutPrefix(p, root+"/"); ok && root != "/" {
		return rel
	}
	return p
}
