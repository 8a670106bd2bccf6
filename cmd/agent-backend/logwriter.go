package main

import (
	"bufio"
	"bytes"
	"io"
	"sync"
	"time"
)

// logFlushDelay bounds how long an access-log line may wait in the buffer.
const logFlushDelay = 100 * time.Millisecond

// bufferedLog batches log lines into few writes: the daemon logs one line
// per request, and a write system call per line cost a measurable share of
// the MCP throughput. A line of level WARN or ERROR is written at once, the
// others within logFlushDelay. Close flushes.
type bufferedLog struct {
	mu        sync.Mutex
	w         *bufio.Writer
	scheduled bool
	closed    bool
}

func newBufferedLog(w io.Writer) *bufferedLog {
	return &bufferedLog{w: bufio.NewWriterSize(w, 64<<10)}
}

func (b *bufferedLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.w.Write(p)
	if err != nil {
		return n, err
	}
	if b.closed || urgent(p) {
		return n, b.w.Flush()
	}
	if !b.scheduled {
		b.scheduled = true
		time.AfterFunc(logFlushDelay, b.flush)
	}
	return n, nil
}

func (b *bufferedLog) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scheduled = false
	b.w.Flush()
}

// Close flushes what is buffered; later writes go straight through.
func (b *bufferedLog) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.w.Flush()
}

// urgent reports whether the line p is at level WARN or ERROR, in the
// text or the JSON format.
func urgent(p []byte) bool {
	return bytes.Contains(p, []byte("level=WARN")) || bytes.Contains(p, []byte("level=ERROR")) ||
		bytes.Contains(p, []byte(`"level":"WARN"`)) || bytes.Contains(p, []byte(`"level":"ERROR"`))
}
