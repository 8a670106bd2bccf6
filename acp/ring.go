package acp

import "sync"

// Event is one agent->client message kept for SSE replay.
type Event struct {
	ID   uint64 // monotonic per instance, starting at 1
	Data []byte // one JSON-RPC object, no trailing newline
}

// Ring is a bounded, in-memory replay buffer of Events. Appends never
// block: when the ring holds more than maxEvents events or maxBytes bytes,
// the oldest are evicted. Readers wait on the channel Since returns.
type Ring struct {
	mu        sync.Mutex
	events    []Event // oldest first
	bytes     int
	next      uint64 // ID of the next event
	maxEvents int
	maxBytes  int
	wake      chan struct{} // closed and replaced on every append and on Close
	closed    bool
}

// NewRing returns a ring keeping at most maxEvents events and maxBytes
// bytes of data (at least one event is always kept).
func NewRing(maxEvents, maxBytes int) *Ring {
	return &Ring{next: 1, maxEvents: maxEvents, maxBytes: maxBytes, wake: make(chan struct{})}
}

// Append stores data (which the ring now owns) and returns its event ID.
// After Close it does nothing and returns 0.
func (r *Ring) Append(data []byte) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0
	}
	id := r.next
	r.next++
	r.events = append(r.events, Event{ID: id, Data: data})
	r.bytes += len(data)
	drop := 0
	for len(r.events)-drop > 1 && (len(r.events)-drop > r.maxEvents || r.bytes > r.maxBytes) {
		r.bytes -= len(r.events[drop].Data)
		drop++
	}
	// Reslicing is amortised O(1): append moves the live events to a new
	// array, sized by their number, once the old one is full. Clearing the
	// dropped slots lets their data be collected meanwhile.
	clear(r.events[:drop])
	r.events = r.events[drop:]
	close(r.wake)
	r.wake = make(chan struct{})
	return id
}

// Close wakes every reader for the last time; Since then reports closed.
func (r *Ring) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.wake)
	}
}

// Snapshot is what Since saw.
type Snapshot struct {
	Events []Event // events with ID > after, oldest first
	// Gap is true when events after the asked ID were evicted (or the ID
	// is newer than any event this ring produced, e.g. it came from a
	// previous instance); Events then start at the oldest one kept.
	Gap    bool
	Oldest uint64 // ID of the oldest event kept (0 when empty)
	Last   uint64 // ID of the newest event produced so far (0 when none)
	Closed bool
	Wake   <-chan struct{} // closed on the next Append or Close
}

// Since returns the events after the ID after (0: everything kept).
func (r *Ring) Since(after uint64) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{Last: r.next - 1, Closed: r.closed, Wake: r.wake}
	if len(r.events) > 0 {
		s.Oldest = r.events[0].ID
	}
	switch {
	case after > s.Last:
		s.Gap = true
		after = 0
	case after != 0 && s.Oldest != 0 && after+1 < s.Oldest:
		s.Gap = true
	}
	i := 0 // IDs are consecutive: the events after "after" start here
	if after >= s.Oldest && s.Oldest != 0 {
		i = int(after - s.Oldest + 1)
	}
	s.Events = append([]Event(nil), r.events[i:]...)
	return s
}
