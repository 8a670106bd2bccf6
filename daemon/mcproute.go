package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/mcp"
)

// mcpRoute returns the /mcp handler: the mcp package's stateless Streamable
// HTTP transport with a fresh Server per request, built by newMCPServer.
func (s *Server) mcpRoute() http.Handler {
	h := mcp.NewHTTPHandler(s.newMCPServer, mcp.HTTPOptions{
		MaxBodyBytes: s.cfg.MaxBodyBytes,
		Logger:       s.cfg.Logger,
		// hostGuard has applied the daemon's Host/Origin rule (which, with
		// a token, lets a client behind a local reverse proxy forwarding
		// another Host through).
		DisableHostCheck: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Authenticated here (the factory refuses a request that failed),
		// so that a tenant at its cap is answered 429 with Retry-After.
		p, ok := s.authenticate(r)
		if ok {
			release, free := s.shares.acquire(p.tenant, shareInFlight)
			if !free {
				s.writeTenantFull(w, r, p.tenant, shareInFlight)
				return
			}
			defer release()
		}
		r = withPrincipal(r, p, ok)
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)) == nil {
			r.Body = &bodyDeadline{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
		}
		h.ServeHTTP(w, r)
	})
}

// bodyDeadline lifts the body's read deadline once the whole body has been
// read (the HTTP server's background read must not inherit it: its timeout
// would cancel the running request's context). A body that fails keeps the
// deadline, so the server's drain of it cannot hang either.
type bodyDeadline struct {
	io.ReadCloser
	lift func()
	done bool
}

func (b *bodyDeadline) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		b.lift()
	}
	return n, err
}

// newMCPServer authenticates and validates one request and returns the MCP
// server for it, on the backend requestBackend gives it (the workspace, or
// a scope of it made for this request only, which release destroys once
// the handler has answered: nothing is kept between requests).
func (s *Server) newMCPServer(r *http.Request) (*mcp.Server, func(), error) {
	p, ok := s.requestPrincipal(r)
	if !ok {
		s.authRefused(r, "daemon: /mcp refused", "invalid or missing token")
		return nil, nil, httpErr(http.StatusUnauthorized, "Unauthorized", "Invalid or missing authentication token")
	}
	if want, ok := r.Header["X-Root-Dir"]; ok && len(want) > 0 && want[0] != "undefined" {
		if !s.rootMatches(want[0]) {
			if p.tenant != nil { // the root is outside what a tenant may know
				return nil, nil, httpErr(http.StatusForbidden, "Root directory mismatch",
					"Server is not configured for "+want[0])
			}
			return nil, nil, httpErr(http.StatusForbidden, "Root directory mismatch",
				"Server is configured for "+s.rootDir+", not "+want[0])
		}
	}
	b, release, err := s.requestBackend(r.Context(), p, r.Header.Get("X-Scope-Path"))
	if err != nil {
		return nil, nil, scopeError(err)
	}
	opts := s.mcpOptionsFor(r.Context())
	opts.TaskOwner = s.mcpTaskOwner(p, r.Header.Get("X-Scope-Path"))
	return agentbe.NewMCPServerWith(b, opts), release, nil
}

// mcpOptions are the options of the MCP servers of /mcp: a tool's panic
// is logged and counted like every panic the daemon recovers, every call
// is counted and audited, and long exec calls may become tasks, kept in
// the daemon's one store.
func (s *Server) mcpOptions() agentbe.MCPServerOptions { return s.mcpOptionsFor(context.Background()) }

// mcpOptionsFor is mcpOptions for the request ctx belongs to, whose id a
// tool's panic is logged with.
func (s *Server) mcpOptionsFor(ctx context.Context) agentbe.MCPServerOptions {
	return agentbe.MCPServerOptions{ServerOptions: mcp.ServerOptions{
		OnPanic: func(tool string, v any) { s.panics.recoveredContext(ctx, "MCP tool "+tool, v) },
		Tasks:   s.mcpTasks,
	}, OnToolCall: s.onToolCall}
}

// mcpTaskOwner is the key a request's MCP tasks are kept under: its
// principal (the tenant, or the operator) and scope (normalized, "" for
// the whole workspace), so that a client can neither see nor cancel
// another tenant's or another scope's tasks. The request has passed
// requestBackend, so its principal p and its X-Scope-Path are valid.
func (s *Server) mcpTaskOwner(p principal, scopeHeader string) string {
	scope, _ := s.narrowScope(p, scopeHeader)
	if p.tenant != nil {
		return "tenant\x00" + p.tenant.name + "\x00" + scope
	}
	return "scope\x00" + scope
}

// rootMatches compares an X-Root-Dir value with the configured root;
// trailing slashes do not matter.
func (s *Server) rootMatches(v string) bool {
	v = trimSlashes(v)
	return v == trimSlashes(s.rootDir) || v == trimSlashes(s.cfg.RootDir)
}

func trimSlashes(p string) string {
	t := strings.TrimRight(p, "/")
	if t == "" && p != "" {
		return "/"
	}
	return t
}

// scopeError answers a scope refusal with its status (400, or 403 for a
// scope outside the tenant's), title and detail; other failures stay 500.
func scopeError(err error) error {
	var refused *scopeRefusal
	if errors.As(err, &refused) {
		return httpErr(refused.status(), refused.title, refused.detail)
	}
	return err
}

func httpErr(status int, e, msg string) error {
	b, _ := json.Marshal(errorBody{e, msg})
	return &mcp.HTTPError{Status: status, Body: json.RawMessage(b)}
}
