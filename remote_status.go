package agentbe

import "sync"

// statusHub holds a Remote's status and delivers transitions to its
// subscribers one at a time, in order, on a goroutine that lives only while
// there are transitions to deliver: a callback may call the Remote (even
// Destroy) without deadlock, and a transition made while a lock is held
// never waits for a callback.
type statusHub struct {
	mu      sync.Mutex
	status  Status
	subs    map[int]func(old, new Status)
	next    int
	queue   []statusEvent
	running bool
}

type statusEvent struct {
	old, new Status
	fns      []func(old, new Status)
}

func newStatusHub(initial Status) *statusHub {
	return &statusHub{status: initial, subs: map[int]func(old, new Status){}}
}

func (h *statusHub) get() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.status
}

func (h *statusHub) subscribe(fn func(old, new Status)) func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.subs[id] = fn
	return func() {
		h.mu.Lock()
		delete(h.subs, id)
		h.mu.Unlock()
	}
}

// set moves to s and queues one event for the subscribers registered now;
// it does nothing when s is the current status or the hub reached
// StatusDestroyed. It reports whether the status changed.
func (h *statusHub) set(s Status) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.status == s || h.status == StatusDestroyed {
		return false
	}
	ev := statusEvent{old: h.status, new: s}
	h.status = s
	for id := 0; id < h.next; id++ {
		if fn, ok := h.subs[id]; ok {
			ev.fns = append(ev.fns, fn)
		}
	}
	if len(ev.fns) == 0 {
		return true
	}
	h.queue = append(h.queue, ev)
	if !h.running {
		h.running = true
		go h.deliver()
	}
	return true
}

func (h *statusHub) deliver() {
	for {
		h.mu.Lock()
		if len(h.queue) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		ev := h.queue[0]
		h.queue = h.queue[1:]
		h.mu.Unlock()
		for _, fn := range ev.fns {
			fn(ev.old, ev.new)
		}
	}
}
