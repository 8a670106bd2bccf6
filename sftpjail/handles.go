package sftpjail

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// errTooManyHandles is reported when a session reaches its handle bound.
var errTooManyHandles = errors.New("too many open handles")

// handle is an open file or directory of one session.
type handle struct {
	f       *os.File
	dir     bool
	regular bool   // a regular file: READ may splice from it (cleared once splicing it fails)
	append  bool   // writes go to the end, in request order
	name    string // the path as the client gave it, for messages
	rel     string // resolved path relative to the root, at open time

	writable bool         // opened for writing (ServerOptions.OnChange)
	opened   time.Time    // when, for OnChange
	written  atomic.Int64 // bytes written through it, for OnChange
}

// handleTable maps handle strings to open files. Handle strings are never
// reused within a session, so a stale handle cannot reach a newer file.
type handleTable struct {
	mu   sync.Mutex
	max  int
	next uint64
	m    map[string]*handle
}

func newHandleTable(max int) *handleTable {
	return &handleTable{max: max, m: make(map[string]*handle)}
}

func (t *handleTable) add(h *handle) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= t.max {
		return "", errTooManyHandles
	}
	t.next++
	id := strconv.FormatUint(t.next, 10)
	t.m[id] = h
	return id, nil
}

func (t *handleTable) get(id []byte) *handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[string(id)]
}

func (t *handleTable) remove(id []byte) *handle {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.m[string(id)]
	delete(t.m, string(id))
	return h
}

// closeAll closes every handle still open; used when the session ends.
func (t *handleTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, h := range t.m {
		h.f.Close()
		delete(t.m, id)
	}
}
