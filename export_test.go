package agentbe

import "github.com/agentbe/agent-backend/internal/wspath"

func wspathResolveForTest(root, p string) (string, error) { return wspath.Resolve(root, p) }

// ScopeSessions reports how many SFTP sessions of scopes r's link holds.
func ScopeSessions(r *Remote) int {
	r.core.mu.Lock()
	l := r.core.link
	r.core.mu.Unlock()
	if l == nil {
		return 0
	}
	l.scopeMu.Lock()
	defer l.scopeMu.Unlock()
	return len(l.scopes)
}
