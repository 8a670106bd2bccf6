package agentbe

import (
	"github.com/agentbe/agent-backend/internal/watch"
	"github.com/agentbe/agent-backend/internal/wspath"
)

func wspathResolveForTest(root, p string) (string, error) { return wspath.Resolve(root, p) }

// SetWatchRingForTest makes the feeds of Local backends created from now
// on keep only n events; the returned function restores the default.
func SetWatchRingForTest(n int) (restore func()) {
	watchConfig.Store(&watch.Config{RingSize: n})
	return func() { watchConfig.Store(nil) }
}

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
