package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/agentbe/agent-backend/internal/buildinfo"
)

// healthBody is GET /health's response. The first four fields are the
// reference daemon's; the others say what an operator needs to know of a
// running daemon.
type healthBody struct {
	Status     string          `json:"status"`
	Version    string          `json:"version"`
	RootDir    string          `json:"rootDir"`
	Transports healthTransport `json:"transports"`
	// Isolation is the mode commands run in: bwrap, software or none (auto
	// resolved to what it chose).
	Isolation string `json:"isolation"`
	// ResourceLimits reports whether resource limits (memory, processes,
	// CPU, wall time) are in force for commands (see docs/limits.md).
	ResourceLimits bool        `json:"resourceLimits"`
	Build          healthBuild `json:"build"`
	// Checks is only in the readiness answer (GET /health?ready=1).
	Checks *readyChecks `json:"checks,omitempty"`
}

type healthTransport struct {
	MCP   bool `json:"mcp"`
	SSHWS bool `json:"ssh-ws"`
	SSH   bool `json:"ssh"`
}

// healthBuild describes the binary (internal/buildinfo), the revision
// overridable by Config.Revision for builds made without the repository's
// metadata.
type healthBuild = buildinfo.Info

// resourceLimitsEnforced reports whether the daemon limits commands'
// resources: New fails when limits asked for cannot be enforced, so a
// running daemon with limits enforces them.
func resourceLimitsEnforced(c Config, execs *tenantExecs) bool {
	return !c.ExecLimits.IsZero() || execs.anyLimits()
}

// healthBody is /health's answer for s, without the readiness checks.
func (s *Server) healthBody() healthBody {
	build := buildinfo.Read()
	if s.cfg.Revision != "" {
		build.Revision, build.Time, build.Modified = s.cfg.Revision, "", false
	}
	return healthBody{
		Status: "ok", Version: s.cfg.Version, RootDir: s.rootDir,
		Transports:     healthTransport{MCP: true, SSHWS: !s.cfg.DisableSSHWS, SSH: s.cfg.Conventional != nil},
		Isolation:      string(s.local.Isolation()),
		ResourceLimits: resourceLimitsEnforced(s.cfg, &s.execs),
		Build:          build,
	}
}

// healthHandler answers GET (and HEAD) /health without authentication.
// The liveness answer is computed once, since nothing in it changes while
// serving. With ?ready=1 it is the readiness answer instead (see
// readiness): 200 when the workspace and the isolation work, else 503 with
// "status":"unavailable"; both carry "checks".
func (s *Server) healthHandler() http.Handler {
	live := s.healthBody()
	b, _ := json.Marshal(live)
	clen := strconv.Itoa(len(b))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{"Method Not Allowed", "Use GET /health"})
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Query().Has("ready") {
			body, status := live, http.StatusOK
			checks := s.ready.check(r.Context())
			body.Checks = &checks
			if !checks.ok() {
				body.Status, status = "unavailable", http.StatusServiceUnavailable
			}
			rb, _ := json.Marshal(body)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(rb)))
			w.WriteHeader(status)
			if r.Method == http.MethodGet {
				w.Write(rb)
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", clen)
		if r.Method == http.MethodGet {
			w.Write(b)
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
