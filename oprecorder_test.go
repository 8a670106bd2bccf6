package agentbe

import "sync"

// OpRecorder keeps entries in memory, for the tests.
type OpRecorder struct {
	mu      sync.Mutex
	entries []OpEntry
}

// LogOp implements OpLogger.
func (r *OpRecorder) LogOp(e OpEntry) {
	r.mu.Lock()
	r.entries = append(r.entries, e)
	r.mu.Unlock()
}

// Entries returns a copy of the entries recorded so far.
func (r *OpRecorder) Entries() []OpEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]OpEntry(nil), r.entries...)
}
