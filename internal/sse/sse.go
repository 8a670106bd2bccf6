// Package sse writes server-sent event streams whose every write is
// bounded in time, so that a client that stops reading cannot hold a
// stream's goroutine and connection for ever.
package sse

import (
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultWriteTimeout bounds each write of a stream whose caller names no
// bound: a client that takes nothing, not even a keep-alive, for that
// long is gone or stuck.
const DefaultWriteTimeout = 2 * time.Minute

// ErrClosed is returned by writes to a stream that failed before.
var ErrClosed = errors.New("sse: stream failed earlier")

// Stream is one event stream on an HTTP response. Its methods may be
// called from several goroutines; after one write fails, every later one
// fails too, without touching the connection.
type Stream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	failed  bool
}

// Start answers with status 200 and the headers of an event stream
// (Content-Type, Cache-Control unless the caller set one, and
// X-Accel-Buffering so that a proxy does not hold events back), sends
// them, and returns the stream. Each write must be taken by the client
// within timeout (0 means DefaultWriteTimeout). When sending the headers
// fails, the stream is returned with the error, failed: its writes return
// ErrClosed.
func Start(w http.ResponseWriter, timeout time.Duration) (*Stream, error) {
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	s := &Stream{w: w, rc: http.NewResponseController(w), timeout: timeout}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-cache")
	}
	h.Set("X-Accel-Buffering", "no")
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.rc.SetWriteDeadline(time.Now().Add(timeout))
	w.WriteHeader(http.StatusOK)
	return s, s.flush()
}

// Write sends b, one or more whole events or comments, and flushes it.
func (s *Stream) Write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return ErrClosed
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		s.failed = true
		return err
	}
	return s.flush()
}

// Event sends one event: its type (omitted when empty), its id (omitted
// when empty) and data, which must hold no newline.
func (s *Stream) Event(event, id string, data []byte) error {
	return s.Write(AppendEvent(make([]byte, 0, len(data)+len(event)+len(id)+24), event, id, data))
}

// flush sends what is buffered; the caller holds s.mu.
func (s *Stream) flush() error {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.failed = true
		return err
	}
	return nil
}

// AppendEvent appends one event to b: "event:", "id:" (each only when not
// empty) and one "data:" line, which data must not break with a newline.
func AppendEvent(b []byte, event, id string, data []byte) []byte {
	if event != "" {
		b = append(b, "event: "...)
		b = append(b, event...)
		b = append(b, '\n')
	}
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// ID formats a numeric event id, 0 meaning none.
func ID(n uint64) string {
	if n == 0 {
		return ""
	}
	return strconv.FormatUint(n, 10)
}
