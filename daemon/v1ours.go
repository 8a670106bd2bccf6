package daemon

import (
	"encoding/json"
	"errors"
	"net/http"

	agentbe "github.com/agentbe/agent-backend"
)

// Helpers of the /v1 routes that are ours (not sandbox-agent's, which the
// acp package serves): GET /v1/fs/watch, POST /v1/fs/grep.

// v1Problem answers a /v1 route of ours with application/problem+json:
// the status, a title, the detail and, when known, the agentbe error code.
func v1Problem(w http.ResponseWriter, status int, title, detail, code string, extra map[string]any) {
	body := map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail}
	if code != "" {
		body["code"] = code
	}
	for k, v := range extra {
		body[k] = v
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// v1Backend checks X-Root-Dir as /mcp does and returns the request's
// backend (requestBackend), or answers the refusal itself.
func (s *Server) v1Backend(w http.ResponseWriter, r *http.Request) (agentbe.Backend, string, func(), bool) {
	p, _ := s.requestPrincipal(r) // requireBearer let it in
	if want, ok := r.Header["X-Root-Dir"]; ok && len(want) > 0 && want[0] != "undefined" && !s.rootMatches(want[0]) {
		detail := "Server is configured for " + s.rootDir + ", not " + want[0]
		if p.tenant != nil { // the root is outside what a tenant may know
			detail = "Server is not configured for " + want[0]
		}
		v1Problem(w, http.StatusForbidden, "Root directory mismatch", detail, "", nil)
		return nil, "", nil, false
	}
	scope, refused := s.narrowScope(p, r.Header.Get("X-Scope-Path"))
	if refused != nil {
		v1Problem(w, refused.status(), refused.title, refused.detail, "", nil)
		return nil, "", nil, false
	}
	b, release, err := s.scopeBackend(r.Context(), p, scope)
	var openRefused *scopeRefusal
	switch {
	case errors.As(err, &openRefused):
		v1Problem(w, openRefused.status(), openRefused.title, openRefused.detail, "", nil)
		return nil, "", nil, false
	case err != nil:
		v1Problem(w, http.StatusInternalServerError, "Internal Server Error", "the scope could not be opened", "", nil)
		return nil, "", nil, false
	}
	return b, scope, release, true
}
