package watch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// ring is a feed's published events: the most recent ones, bounded in
// number and bytes, and the state subscribers wait on. Its methods are
// safe for concurrent use; publish and end are called by the feed's
// reader only.
type ring struct {
	maxN, maxBytes int

	mu    sync.Mutex
	buf   []Event // circular, len(buf) == maxN once full
	start int     // index of the oldest event
	n     int     // events held
	bytes int
	last  uint64        // sequence number of the newest event, 0 before any
	wake  chan struct{} // closed and replaced whenever events arrive or the feed ends
	err   error         // why the feed ended; nil while it runs
}

func newRing(maxN, maxBytes int) *ring {
	return &ring{maxN: maxN, maxBytes: maxBytes, wake: make(chan struct{})}
}

// publish numbers evs, stamps them with now and appends them, dropping the
// oldest events beyond the bounds (the newest is always kept).
func (r *ring) publish(now time.Time, evs []Event) {
	if len(evs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	for i := range evs {
		r.last++
		evs[i].Seq = r.last
		evs[i].Time = now
		r.push(evs[i])
	}
	close(r.wake)
	r.wake = make(chan struct{})
}

func (r *ring) push(e Event) {
	if r.n == r.maxN {
		r.dropOldest()
	}
	if r.n == len(r.buf) { // full below maxN: grow, oldest first
		nb := make([]Event, min(max(2*len(r.buf), 16), r.maxN))
		for i := 0; i < r.n; i++ {
			nb[i] = r.buf[(r.start+i)%len(r.buf)]
		}
		r.buf, r.start = nb, 0
	}
	r.buf[(r.start+r.n)%len(r.buf)] = e
	r.n++
	r.bytes += e.size()
	for r.bytes > r.maxBytes && r.n > 1 {
		r.dropOldest()
	}
}

func (r *ring) dropOldest() {
	r.bytes -= r.buf[r.start].size()
	r.buf[r.start] = Event{}
	r.start = (r.start + 1) % len(r.buf)
	r.n--
}

// end publishes the final event ev (unless the ring already ended) and
// records err as the reason.
func (r *ring) end(now time.Time, ev Event, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	r.last++
	ev.Seq = r.last
	ev.Time = now
	r.push(ev)
	r.err = err
	close(r.wake)
}

// oldest returns the sequence number of the oldest event held (last+1 when
// none is).
func (r *ring) oldest() uint64 { return r.last - uint64(r.n) + 1 }

// sinceLocked returns up to limit events after seq (all when limit <= 0).
func (r *ring) sinceLocked(after uint64, limit int) ([]Event, error) {
	if after > r.last {
		return nil, fmt.Errorf("%w: cursor %d is ahead of the feed (at %d)", ErrCursorTooOld, after, r.last)
	}
	if after+1 < r.oldest() {
		return nil, fmt.Errorf("%w: cursor %d, oldest event kept is %d", ErrCursorTooOld, after, r.oldest())
	}
	k := int(r.last - after)
	if limit > 0 && k > limit {
		k = limit
	}
	if k == 0 {
		return nil, nil
	}
	out := make([]Event, k)
	first := r.n - int(r.last-after)
	for i := range out {
		out[i] = r.buf[(r.start+first+i)%len(r.buf)]
	}
	return out, nil
}

// since is sinceLocked under the lock.
func (r *ring) since(after uint64, limit int) ([]Event, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sinceLocked(after, limit)
}

// wait blocks until there are events after seq, the feed has ended, done
// is closed or ctx is done. It returns up to limit events (all when limit
// <= 0); with none left after an ended feed, the reason it ended.
func (r *ring) wait(ctx context.Context, done <-chan struct{}, after uint64, limit int) ([]Event, error) {
	for {
		r.mu.Lock()
		evs, err := r.sinceLocked(after, limit)
		ended, wake := r.err, r.wake
		r.mu.Unlock()
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		if ended != nil {
			return nil, ended
		}
		select {
		case <-wake:
		case <-done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
