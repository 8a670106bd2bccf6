package daemon

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// terminalToken reports whether r is a request for a process's terminal
// WebSocket (GET /v1/processes/{id}/terminal/ws) carrying the token as
// ?access_token=: a browser's WebSocket cannot send an Authorization
// header, so sandbox-agent and its SDK put the token there.
func (s *Server) terminalToken(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/v1/processes/") ||
		!strings.HasSuffix(r.URL.Path, "/terminal/ws") {
		return false
	}
	t := s.token
	if !t.enabled {
		return true
	}
	vals, ok := r.URL.Query()["access_token"]
	if !ok || len(vals) != 1 {
		return false
	}
	got := sha256.Sum256([]byte(vals[0]))
	return subtle.ConstantTimeCompare(got[:], t.raw[:]) == 1
}
