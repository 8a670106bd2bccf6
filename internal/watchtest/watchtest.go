// Package watchtest holds what the change feed's tests share: the root's
// (Local and Scope) and internal/e2e's (Remote against a daemon).
package watchtest

import (
	"context"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// Timeout bounds how long a test waits for an event it expects; it is a
// failure deadline, not a measurement.
const Timeout = 20 * time.Second

// Until reads w's events until pred accepts one, and returns all read; it
// fails t after Timeout.
func Until(t testing.TB, w *agentbe.Watcher, what string, pred func(agentbe.ChangeEvent) bool) []agentbe.ChangeEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	var seen []agentbe.ChangeEvent
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v; seen %v", what, err, seen)
		}
		seen = append(seen, ev)
		if pred(ev) {
			return seen
		}
	}
}

// Changed is a predicate: path p created, written, or renamed to (an
// atomic write is a temporary file renamed over p).
func Changed(p string) func(agentbe.ChangeEvent) bool {
	return func(ev agentbe.ChangeEvent) bool {
		return ev.Path == p && ev.Kind != agentbe.ChangeRemoved && ev.Kind != agentbe.ChangeRescan
	}
}

// Open watches p of b for the rest of the test.
func Open(t testing.TB, b agentbe.Backend, p string, opts agentbe.WatchOptions) *agentbe.Watcher {
	t.Helper()
	w, err := agentbe.Watch(context.Background(), b, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}
