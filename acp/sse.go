package acp

import (
	"errors"
	"strconv"
	"strings"

	"github.com/agentbe/agent-backend/internal/sse"
)

// errBadLastEventID is returned by ParseLastEventID for a value that is not
// a decimal event ID.
var errBadLastEventID = errors.New("Last-Event-ID must be a positive integer")

// ParseLastEventID parses the Last-Event-ID request header: "" means no
// replay position (0); otherwise a decimal uint64 of at most 20 digits,
// surrounding spaces allowed. Anything else is an error.
func ParseLastEventID(v string) (uint64, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil
	}
	// Base 10 takes digits only: no sign, prefix or underscore.
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || len(v) > 20 {
		return 0, errBadLastEventID
	}
	return n, nil
}

// appendSSE appends one SSE event to b. data is a single JSON object
// without raw newlines (agent output is split into lines before it reaches
// the ring), so one data: line carries it.
func appendSSE(b []byte, event string, id uint64, data []byte) []byte {
	return sse.AppendEvent(b, event, sse.ID(id), data)
}
