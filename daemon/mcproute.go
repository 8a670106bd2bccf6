package daemon

import (
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
	if !s.token.header(r) {
		return nil, nil, httpErr(http.StatusUnauthorized, "Unauthorized", "Invalid or missing authentication token")
	}
	if want, ok := r.Header["X-Root-Dir"]; ok && len(want) > 0 && want[0] != "undefined" {
		if !s.rootMatches(want[0]) {
			return nil, nil, httpErr(http.StatusForbidden, "Root directory mismatch",
				"Server is configured for "+s.rootDir+", not "+want[0])
		}
	}
	b, release, err := s.httpBackend(r)
	if err != nil {
		return nil, nil, scopeError(err)
	}
	opts := s.mcpOptions()
	opts.TaskOwner = s.mcpTaskOwner(r)
	return agentbe.NewMCPServerWith(b, opts), release, nil
}

// mcpOptions are the options of the MCP servers of /mcp: a tool's panic
// is logged and counted like every panic the daemon recovers, and long
// exec calls may become tasks, kept in the daemon's one store.
func (s *Server) mcpOptions() agentbe.MCPServerOptions {
	return agentbe.MCPServerOptions{ServerOptions: mcp.ServerOptions{
		OnPanic: func(tool string, v any) { s.panics.recovered("MCP tool "+tool, v) },
		Tasks:   s.mcpTasks,
	}}
}

// mcpTaskOwner is the key a request's MCP tasks are kept under: its
// scope (normalized, "" for the whole workspace), so that a client
// confined to one scope can neither see nor cancel another scope's tasks.
// The request has passed requestBackend, so its scope is valid.
func (s *Server) mcpTaskOwner(r *http.Request) string {
	scope, _ := s.requestScopePath(r.Header.Get("X-Scope-Path"))
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

// scopeError answers a scope refusal with 400 and its title and detail;
// other failures stay 500.
func scopeError(err error) error {
	var refused *scopeRefusal
	if errors.As(err, &refused) {
		return httpErr(http.StatusBadRequest, refused.title, refused.detail)
	}
	return err
}

func httpErr(status int, e, msg string) error {
	b, _ := json.Marshal(errorBody{e, msg})
	return &mcp.HTTPError{Status: status, Body: json.RawMessage(b)}
}
