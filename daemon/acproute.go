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
		Agents:    reg,
		Resolve:   s.acpBackend,
		Partition: s.acpPartition,
		Proxy: acp.ProxyConfig{
			SecretEnv:    []string{"AUTH_TOKEN", "AGENTBE_AUTH_TOKEN", "SSH_USERS"},
			MaxInstances: s.cfg.MaxACPInstances,
			Logger:       s.cfg.Logger,
			OnInstance:   s.acpEvent,
		},
		Logger: s.cfg.Logger,
	})
}

// acpBackend is requestBackend for /v1, its refusals worded as problem
// details. The scope is released by the acp package: at the end of the
// request, or when the ACP instance started on it ends.
func (s *Server) acpBackend(r *http.Request) (agentbe.Backend, func(), error) {
	p, ok := s.requestPrincipal(r)
	if !ok {
		return nil, nil, &acp.StatusError{Status: http.StatusUnauthorized, Detail: "Invalid or missing authentication token"}
	}
	b, release, err := s.requestBackend(r.Context(), p, r.Header.Get("X-Scope-Path"))
	var refused *scopeRefusal
	switch {
	case errors.As(err, &refused):
		return nil, nil, &acp.StatusError{Status: refused.status(), Detail: refused.detail}
	case err != nil:
		return nil, nil, &acp.StatusError{Status: http.StatusInternalServerError, Detail: "the scope could not be opened"}
	}
	return b, release, nil
}

// acpPartition puts each tenant's ACP server ids apart from every other
// tenant's and the operator's, with the tenant's cap on its instances.
func (s *Server) acpPartition(r *http.Request) acp.Partition {
	p, _ := s.requestPrincipal(r)
	if p.tenant == nil {
		return acp.Partition{}
	}
	return acp.Partition{Key: acpPartitionKey(p.tenant), MaxInstances: p.tenant.limits.ACPInstances}
}

// acpPartitionKey is the ACP partition of t's server ids.
func acpPartitionKey(t *Tenant) string { return "tenant:" + t.name }

// requireBearer authenticates every /v1/* request (the bearer header or
// ?token=), answering 401 to one without a valid token, and holds one of
// the tenant's in-flight requests while it runs (429 at the tenant's
// cap). Requests from a foreign Host or Origin were refused before
// (hostGuard).
func (s *Server) requireBearer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.authenticate(r)
		if !ok {
			s.authRefused(r, "daemon: /v1 refused", "invalid or missing token")
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("WWW-Authenticate", "Bearer")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"type":"urn:sandbox-agent:error:unauthorized","title":"Unauthorized","status":401,"detail":"Invalid or missing authentication token"}`+"\n")
			return
		}
		release, ok := s.shares.acquire(p.tenant, shareInFlight)
		if !ok {
			s.writeTenantFullProblem(w, r, p.tenant, shareInFlight)
			return
		}
		defer release()
		h.ServeHTTP(w, withPrincipal(r, p, true))
	})
}

// limitUploads bounds the /v1 uploads (PUT /v1/fs/file, POST
// /v1/fs/upload-batch) in flight: MaxUploads for all (503 "daemon full"
// beyond), and each tenant's uploadsInFlight (429 beyond).
func (s *Server) limitUploads(h http.Handler) http.Handler {
	global := newLimiter(s.cfg.MaxUploads, s.cfg.Logger).wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := s.requestPrincipal(r)
		release, ok := s.shares.acquire(p.tenant, shareUploads)
		if !ok {
			s.writeTenantFullProblem(w, r, p.tenant, shareUploads)
			return
		}
		defer release()
		h.ServeHTTP(w, r)
	}), "uploads")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isUpload(r) {
			global.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isUpload reports whether r is one of the /v1 upload routes.
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPut && r.URL.Path == "/v1/fs/file" ||
		r.Method == http.MethodPost && r.URL.Path == "/v1/fs/upload-batch"
}
