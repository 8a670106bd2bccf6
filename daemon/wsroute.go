package daemon

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentbe/agent-backend/internal/wsnet"
	"golang.org/x/net/websocket"
)

// hijackRecorder keeps the TCP connection the WebSocket library hijacks, so
// the daemon can close it after its own close frame.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
	rw   *bufio.ReadWriter
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := h.ResponseWriter.(http.Hijacker).Hijack()
	if err == nil {
		h.conn, h.rw = c, rw
		// Clear any deadline the HTTP server left on the connection.
		c.SetDeadline(time.Time{})
	}
	return c, rw, err
}

// sshRoute is WS /ssh. Authentication (?token= or the Authorization
// header) is decided before the upgrade; a client that fails it still gets
// the upgrade and then a close frame 4001 "Unauthorized", which is what the
// TypeScript client expects. An authorized upgrade's scope (the principal's,
// narrowed by X-Scope-Path) confines the whole SSH connection; one the
// daemon refuses is answered 400 or 403 before the upgrade. No Origin is required (CLI clients send none);
// a web page's request (foreign Host or Origin without a token) was refused
// before the upgrade by hostGuard.
func (s *Server) sshRoute() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			writeJSON(w, http.StatusBadRequest, errorBody{"Bad Request", "WebSocket upgrade required"})
			return
		}
		p, authorized := s.authenticate(r)
		var conn *sshConnState
		if !authorized {
			// Refused after the upgrade (close 4001), so the access line
			// says 101: this line is what shows a client with a wrong token.
			s.authRefused(r, "daemon: /ssh refused", "invalid or missing token")
		} else {
			// The connection's scope: the principal's, narrowed by the
			// upgrade's X-Scope-Path; refused before the upgrade, like a
			// full daemon.
			header := r.Header.Get("X-Scope-Path")
			scope, refused := s.narrowScope(p, header)
			if refused != nil {
				logRefused(s.cfg.Logger, r, refused.detail)
				writeJSON(w, refused.status(), errorBody{refused.title, refused.detail})
				return
			}
			release, ok := s.shares.acquire(p.tenant, shareSSH)
			if !ok {
				s.writeTenantFull(w, r, p.tenant, shareSSH)
				return
			}
			defer release()
			conn = &sshConnState{tenant: p.tenant, header: header, scope: scope}
		}
		rec := &hijackRecorder{ResponseWriter: w}
		srv := websocket.Server{
			Handshake: func(cfg *websocket.Config, _ *http.Request) error {
				cfg.Protocol = nil // select no subprotocol
				// The 101 is written by the WebSocket library, not through w.
				cfg.Header = http.Header{"X-Request-Id": {RequestID(r.Context())}}
				return nil
			},
			Handler: func(*websocket.Conn) {
				// The handshake is done; frames are ours from here on.
				c := wsnet.NewServerConn(rec.conn, rec.rw.Reader)
				if !authorized {
					c.CloseWith(wsnet.CloseUnauthorized, "Unauthorized")
					return
				}
				if !s.ws.add(c) {
					c.CloseWith(wsnet.CloseNormal, "Server shutting down")
					return
				}
				defer s.ws.remove(c)
				s.metrics.sshConns.Inc()
				defer s.metrics.sshConns.Dec()
				s.serveSSH(r.Context(), c, conn)
			},
		}
		srv.ServeHTTP(rec, r)
	})
}
