package agentbe

import (
	"io"
	"sync"
)

// Status is the connection state of a backend.
type Status int32

// Status values. Local and Memory backends are StatusConnected from creation
// until Destroy moves them to StatusDestroyed.
const (
	StatusConnected Status = iota
	StatusConnecting
	StatusDisconnected
	StatusReconnecting
	StatusDestroyed
)

// String returns the spec's name of the status ("connected", …).
func (s Status) String() string {
	switch s {
	case StatusConnected:
		return "connected"
	case StatusConnecting:
		return "connecting"
	case StatusDisconnected:
		return "disconnected"
	case StatusReconnecting:
		return "reconnecting"
	case StatusDestroyed:
		return "destroyed"
	}
	return "unknown"
}

// lifecycle holds what every root backend shares: its status, the status
// subscribers and the tracked closers.
type lifecycle struct {
	mu      sync.Mutex
	status  Status
	closing bool // destroy has started: new closers are closed at once
	nextID  int
	subs    map[int]func(old, new Status)
	nextC   int
	closers map[int]io.Closer

	// async delivers transitions on a goroutine of the lifecycle, one at a
	// time and in order, instead of in the goroutine that made them: a
	// Remote changes status while holding its own lock, and its subscribers
	// may call it back.
	async      bool
	queue      []statusEvent
	delivering bool
}

// statusEvent is one transition waiting for async delivery.
type statusEvent struct {
	old, new Status
	fns      []func(old, new Status)
}

func newLifecycle(initial Status) *lifecycle {
	return &lifecycle{status: initial, subs: map[int]func(old, new Status){}, closers: map[int]io.Closer{}}
}

func (l *lifecycle) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.status
}

func (l *lifecycle) OnStatusChange(fn func(old, new Status)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.nextID
	l.nextID++
	l.subs[id] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs, id)
	}
}

// setStatus moves to s and calls every subscriber (outside the lock, in
// registration order; with async, on the delivery goroutine) if the status
// changed. StatusDestroyed is final. It reports whether the status changed.
func (l *lifecycle) setStatus(s Status) bool {
	l.mu.Lock()
	old := l.status
	if old == s || old == StatusDestroyed {
		l.mu.Unlock()
		return false
	}
	l.status = s
	fns := make([]func(old, new Status), 0, len(l.subs))
	for id := 0; id < l.nextID; id++ {
		if fn, ok := l.subs[id]; ok {
			fns = append(fns, fn)
		}
	}
	if l.async {
		if len(fns) > 0 {
			l.queue = append(l.queue, statusEvent{old: old, new: s, fns: fns})
			if !l.delivering {
				l.delivering = true
				go l.deliver()
			}
		}
		l.mu.Unlock()
		return true
	}
	l.mu.Unlock()
	for _, fn := range fns {
		fn(old, s)
	}
	return true
}

// deliver runs queued transitions until the queue is empty.
func (l *lifecycle) deliver() {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.delivering = false
			l.mu.Unlock()
			return
		}
		ev := l.queue[0]
		l.queue = l.queue[1:]
		l.mu.Unlock()
		for _, fn := range ev.fns {
			fn(ev.old, ev.new)
		}
	}
}

// dead reports whether destroy has started.
func (l *lifecycle) dead() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closing
}

// track registers c for closing on destroy and returns a function that
// unregisters it (for resources released earlier). Tracking once destroy
// has started closes c at once, so nothing registered late leaks.
func (l *lifecycle) track(c io.Closer) (untrack func()) {
	if c == nil {
		return func() {}
	}
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		_ = c.Close()
		return func() {}
	}
	id := l.nextC
	l.nextC++
	l.closers[id] = c
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.closers, id)
		l.mu.Unlock()
	}
}

// destroy closes every tracked closer (last registered first) and moves to
// StatusDestroyed. Only the first call does anything; it returns the first
// close error.
func (l *lifecycle) destroy() error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true
	closers := l.closers
	l.closers = map[int]io.Closer{}
	last := l.nextC
	l.mu.Unlock()
	var first error
	for id := last - 1; id >= 0; id-- {
		if c, ok := closers[id]; ok {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	l.setStatus(StatusDestroyed)
	return first
}
