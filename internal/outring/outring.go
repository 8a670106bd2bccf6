// Package outring keeps the latest output of a background process: entries
// numbered from 1 across its streams, at most a byte budget of data, the
// oldest dropped first. A reader re-attaches from any sequence number,
// learns how many entries it missed (Dropped), and may follow new ones
// until the output ends.
package outring

import (
	"context"
	"sync"
	"time"
)

// Entry is a piece of output (agentbe.OutputEntry).
type Entry struct {
	Seq     uint64
	Stream  string
	Time    time.Time
	Data    []byte
	Dropped uint64 // entries before this one the reader missed
}

// Ring keeps the latest output of a process, at most max bytes of data;
// entries are numbered from 1 and the oldest are dropped first.
type Ring struct {
	mu      sync.Mutex
	entries []Entry // kept, oldest first; entries[0].Seq == first
	bytes   int
	max     int
	next    uint64        // the sequence of the next entry
	closed  bool          // no entry will follow
	changed chan struct{} // closed (and replaced) whenever entries or closed change
}

// New returns an empty ring keeping at most max bytes (max > 0).
func New(max int) *Ring {
	return &Ring{max: max, next: 1, changed: make(chan struct{})}
}

// Add appends a copy of data as one entry (cut to the ring's size).
func (r *Ring) Add(s string, data []byte) {
	if len(data) == 0 {
		return
	}
	if len(data) > r.max {
		data = data[len(data)-r.max:]
	}
	e := Entry{Stream: s, Time: time.Now(), Data: append([]byte(nil), data...)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	e.Seq = r.next
	r.next++
	r.entries = append(r.entries, e)
	r.bytes += len(e.Data)
	drop := 0
	for r.bytes > r.max {
		r.bytes -= len(r.entries[drop].Data)
		r.entries[drop] = Entry{}
		drop++
	}
	if drop > 0 {
		r.entries = r.entries[drop:]
		if cap(r.entries) > 4*len(r.entries)+64 {
			r.entries = append([]Entry(nil), r.entries...)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Close marks the end of the output.
func (r *Ring) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.changed)
		r.changed = make(chan struct{})
	}
}

// after returns the kept entries after sequence since, the first one's
// Dropped set, whether the output has ended, and a channel closed at the
// next change.
func (r *Ring) after(since uint64) ([]Entry, bool, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Entry
	first := r.next
	if len(r.entries) > 0 {
		first = r.entries[0].Seq
	}
	i := 0
	if since >= first {
		i = int(since - first + 1)
	}
	if i < len(r.entries) {
		out = append(out, r.entries[i:]...)
		if since+1 < out[0].Seq {
			out[0].Dropped = out[0].Seq - since - 1
		}
	}
	return out, r.closed, r.changed
}

// Read delivers the entries after since to fn; with follow, it waits for
// more until the output has ended and all of it was delivered.
func (r *Ring) Read(ctx context.Context, since uint64, follow bool, fn func(Entry) error) error {
	for {
		es, closed, changed := r.after(since)
		for _, e := range es {
			if err := fn(e); err != nil {
				return err
			}
			since = e.Seq
		}
		if !follow || closed && len(es) == 0 {
			return nil
		}
		if len(es) > 0 {
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
