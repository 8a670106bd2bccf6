package daemon

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentbe/agent-backend/internal/hostcheck"
)

// hostGuard refuses, with 403 and before any route runs (so before any
// WebSocket upgrade), a request that a web page may have sent: it is the
// one Host/Origin rule of every route, /health included. It applies only
// when no AuthToken is set: a page does not hold the token, and a client
// behind a local reverse proxy that forwards another Host must keep
// working.
//
//   - On a loopback connection, Host and Origin (when present) must name a
//     loopback host or one of Config.AllowedHosts (hostcheck.Rebinding, the
//     check of the official MCP SDK): a page whose name an attacker rebound
//     to 127.0.0.1 sends its own name in both, and must not reach /ssh (a
//     shell), /mcp or /v1.
//   - On any other connection, an Origin, when present, must name the host
//     the request was sent to: a browser's cross-site request. WebSockets
//     have no CORS preflight, so nothing else would stop a page from opening
//     /ssh.
//
// /health is not exempt: it tells a page that a daemon is there, its
// version and its workspace's host path, and none of its legitimate callers
// (a container health check on localhost, an orchestrator's probe on the
// pod's address, a client with the daemon's own name) is refused.
func (s *Server) hostGuard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := s.foreignRequest(r); msg != "" {
			logRefused(s.cfg.Logger, r, msg)
			writeForbidden(w, r, msg)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// foreignRequest reports why hostGuard refuses r, or "".
func (s *Server) foreignRequest(r *http.Request) string {
	if s.authEnabled() {
		return ""
	}
	if hostcheck.OnLoopback(r) {
		return hostcheck.Rebinding(r, s.allowedHosts)
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "Invalid Origin header: " + o
		}
	}
	return ""
}

// writeForbidden answers 403 in the error format of the route r was sent
// to: a JSON-RPC error on /mcp (as the official MCP SDK words it), a
// problem document on the ACP routes, {"error","message"} elsewhere.
func writeForbidden(w http.ResponseWriter, r *http.Request, msg string) {
	switch p := r.URL.Path; {
	case p == "/mcp":
		b, _ := json.Marshal(struct {
			JSONRPC string `json:"jsonrpc"`
			ID      any    `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}{JSONRPC: "2.0", Error: struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{-32000, msg}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		w.Write(b)
	case p == "/" || strings.HasPrefix(p, "/v1/"):
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"type":"urn:sandbox-agent:error:forbidden","title":"Forbidden","status":403,"detail":"Invalid Host or Origin header"}`+"\n")
	default:
		writeJSON(w, http.StatusForbidden, errorBody{"Forbidden", msg})
	}
}

// logRefused logs, at Info, a request refused before its route ran, with
// the client's address (the access line says only the status).
func logRefused(log *slog.Logger, r *http.Request, reason string) {
	log.InfoContext(r.Context(), "daemon: request refused", "reason", reason, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
}
