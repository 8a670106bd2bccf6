package daemon

import (
	"errors"
	"io"
	"net/http"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/acp"
)

// newACPHandler builds the ACP proxy and HTTP file API (/v1/*, GET /) on the
// daemon's workspace. Requests reach it authenticated (requireBearer) and
// scoped (acpBackend).
func (s *Server) newACPHandler() (*acp.Handler, error) {
	reg := acp.DefaultRegistry()
	for _, a := range s.cfg.ACPAgents {
		if err := reg.Set(a); err != nil {
			return nil, err
		}
	}
	return acp.NewHandler(acp.Config{
		Agents:  reg,
		Resolve: s.acpBackend,
		Proxy: acp.ProxyConfig{
			SecretEnv:    []string{"AUTH_TOKEN", "AGENTBE_AUTH_TOKEN", "SSH_USERS"},
			MaxInstances: s.cfg.MaxACPInstances,
			Logger:       s.cfg.Logger,
		},
		Logger: s.cfg.Logger,
	})
}

// acpBackend is requestBackend for /v1, its refusals worded as problem
// details. The scope is released by the acp package: at the end of the
// request, or when the ACP instance started on it ends.
func (s *Server) acpBackend(r *http.Request) (agentbe.Backend, func(), error) {
	b, release, err := s.requestBackend(r.Context(), r.Header.Get("X-Scope-Path"))
	var refused *scopeRefusal
	switch {
	case errors.As(err, &refused):
		return nil, nil, &acp.StatusError{Status: http.StatusBadRequest, Detail: refused.detail}
	case err != nil:
		return nil, nil, &acp.StatusError{Status: http.StatusInternalServerError, Detail: "the scope could not be opened"}
	}
	return b, release, nil
}

// requireBearer answers 401 to a request without "Authorization: Bearer
// <token>" (every /v1/* route). Requests from a foreign Host or Origin were
// refused before (hostGuard).
func (s *Server) requireBearer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.token.header(r) && !s.terminalToken(r) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"urn:sandbox-agent:error:unauthorized","title":"Unauthorized","status":401,"detail":"Invalid or missing authentication token"}`+"\n")
			return
		}
		h.ServeHTTP(w, r)
	})
}
