package acp

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"

	agentbe "github.com/agentbe/agent-backend"
)

// problemError is an error with the HTTP status and problem+json type it
// maps to. Its fields are the RFC 9457 members sandbox-agent sends.
type problemError struct {
	Status int
	Kind   string // the suffix of "urn:sandbox-agent:error:<Kind>"
	Title  string
	Detail string
	Extra  map[string]any // extra members (agent, sessionId, …)
	Err    error
}

func (p *problemError) Error() string { return p.Detail }
func (p *problemError) Unwrap() error { return p.Err }

func problem(status int, kind, title, detail string) *problemError {
	return &problemError{Status: status, Kind: kind, Title: title, Detail: detail}
}

func badRequest(detail string) *problemError {
	return problem(http.StatusBadRequest, "invalid_request", "Invalid Request", "invalid request: "+detail)
}

func notFound(detail string) *problemError {
	return problem(http.StatusNotFound, "not_found", "Not Found", "not found: "+detail)
}

func conflict(detail string) *problemError {
	return withDetails(problem(http.StatusConflict, "conflict", "Conflict", "conflict: "+detail), detail)
}

// agentConflict is the 409 for a server id bound to another agent.
func agentConflict(serverID, bound, requested string) *problemError {
	return conflict("server '" + serverID + "' already exists for agent '" + bound + "'; requested '" + requested + "'")
}

func streamError(status int, detail string) *problemError {
	return withDetails(problem(status, "stream_error", "Stream Error", "stream error: "+detail), detail)
}

func unsupportedMedia(detail string) *problemError {
	return withDetails(problem(http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported Media Type",
		"unsupported media type: "+detail), detail)
}

// unsupportedAgent is the problem for an agent id the registry does not
// know: 400 on an ACP bootstrap, 404 on /v1/agents/{agent}.
func unsupportedAgent(status int, id string) *problemError {
	p := problem(status, "unsupported_agent", "Unsupported Agent", "unsupported agent: "+id)
	p.Extra = map[string]any{"agent": id}
	return p
}

func tooLarge(detail string) *problemError {
	return problem(http.StatusRequestEntityTooLarge, "too_large", "Payload Too Large", detail)
}

// withDetails adds sandbox-agent's {"details":{"message":…}} member.
func withDetails(p *problemError, message string) *problemError {
	p.Extra = map[string]any{"details": map[string]string{"message": message}}
	return p
}

// writeProblem sends err as application/problem+json. Errors that are not
// a *problemError become 500 with a generic detail: their text may carry
// information (host paths) the client must not see.
func writeProblem(w http.ResponseWriter, err error) {
	var p *problemError
	if !errors.As(err, &p) {
		p = problem(http.StatusInternalServerError, "internal", "Internal Error", "internal error")
	}
	body := map[string]any{
		"type":   "urn:sandbox-agent:error:" + p.Kind,
		"title":  p.Title,
		"status": p.Status,
		"detail": p.Detail,
	}
	for k, v := range p.Extra {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	if p.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(body)
}

// writeJSON sends v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fsProblem maps a backend error on the path p (as the client gave it) to a
// problem. The detail names only p, never a host path.
func fsProblem(err error, p string) *problemError {
	var pe *problemError
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, agentbe.ErrPathEscape):
		return problem(http.StatusForbidden, "path_escape", "Path Escape",
			"path escapes the workspace: "+p)
	case errors.Is(err, fs.ErrNotExist):
		return problem(http.StatusNotFound, "not_found", "Not Found", "path not found: "+p)
	case errors.Is(err, fs.ErrExist):
		return conflict("path already exists: " + p)
	case errors.Is(err, agentbe.ErrTooLarge):
		return tooLarge("too large: " + p)
	case errors.Is(err, agentbe.ErrDestroyed):
		return problem(http.StatusServiceUnavailable, "unavailable", "Service Unavailable", "workspace closed")
	case errors.Is(err, fs.ErrPermission):
		return problem(http.StatusForbidden, "permission_denied", "Permission Denied", "permission denied: "+p)
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "not a directory"):
		return badRequest("not a directory: " + p)
	case strings.Contains(msg, "is a directory"):
		return badRequest("is a directory: " + p)
	case strings.Contains(msg, "directory not empty"):
		return conflict("directory not empty: " + p)
	}
	return problem(http.StatusInternalServerError, "io_error", "I/O Error", "cannot access: "+p)
}
