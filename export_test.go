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
