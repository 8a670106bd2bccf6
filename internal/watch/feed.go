package watch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"sync/atomic"
)

// feed is one running change feed: its reader (platform code behind
// stop), its events and the handles that hold it.
type feed struct {
	id   string
	ring *ring
	stop func()        // ends the feed and waits for its reader; idempotent
	done chan struct{} // closed once the reader exited
	dev  uint64        // the watched directory's identity (a Hub's key)
	ino  uint64

	watches, coalesced, rescans, dropped atomic.Int64

	mu     sync.Mutex
	refs   int
	onIdle func(*feed) // called (outside mu) when the last handle is released
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (f *feed) acquire() *Feed {
	f.mu.Lock()
	f.refs++
	f.mu.Unlock()
	return &Feed{f: f, closed: make(chan struct{})}
}

func (f *feed) release() {
	f.mu.Lock()
	f.refs--
	idle := f.refs == 0
	f.mu.Unlock()
	if idle && f.onIdle != nil {
		f.onIdle(f)
	}
}

// ended reports whether the reader has exited.
func (f *feed) ended() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Open starts a change feed of dir, a slash-separated path inside root
// ("." for root itself), and returns its only handle; the feed stops when
// the handle is closed. dir is reached without following any symbolic
// link (ErrSymlink) and must be a directory (ErrNotDir). Every change made
// after Open returns is reported. cfg may be nil for the defaults.
//
// Open fails with ErrWatchLimit when the tree has more directories than
// the feed may watch, with ErrNotSupported off Linux.
func Open(root *os.Root, dir string, cfg *Config) (*Feed, error) {
	c := cfg.withDefaults()
	tg, err := openWatchDir(root, dir)
	if err != nil {
		return nil, err
	}
	f, err := startFeed(tg, &c)
	if err != nil {
		return nil, err
	}
	f.onIdle = func(f *feed) { f.stop() }
	return f.acquire(), nil
}

// Feed is a handle on a change feed of one directory tree. Several
// handles may share one feed (see Hub); the events and their sequence
// numbers belong to the feed, so a subscriber that comes back with the
// last sequence number it saw resumes where it stopped, as long as that
// number is still within the feed's window. A Feed's methods are safe for
// concurrent use.
type Feed struct {
	f      *feed
	once   sync.Once
	closed chan struct{}
}

// ID identifies the feed: a random string, different for every feed, even
// one of the same directory opened again. A cursor (sequence number) is
// meaningful only with the ID of the feed that issued it.
func (h *Feed) ID() string { return h.f.id }

// Seq returns the sequence number of the newest event, 0 before any. A
// new subscriber interested only in what happens next starts there.
func (h *Feed) Seq() uint64 {
	h.f.ring.mu.Lock()
	defer h.f.ring.mu.Unlock()
	return h.f.ring.last
}

// Since returns the events after sequence number after, oldest first (none
// when the caller is up to date). When the events just after it are no
// longer kept, or it is ahead of the feed, it returns an error wrapping
// ErrCursorTooOld: the caller lists the tree again and continues from
// Seq. On a closed handle it returns ErrClosed.
func (h *Feed) Since(after uint64) ([]Event, error) {
	select {
	case <-h.closed:
		return nil, ErrClosed
	default:
	}
	return h.f.ring.since(after, 0)
}

// Wait is Since, but blocks until there is at least one event after
// after, returning at most limit events (all when limit <= 0). It returns
// ctx's error when ctx is done, ErrClosed once this handle is closed, and
// once the feed has ended and every event was delivered, the reason it
// ended (ErrRootGone, ErrClosed, or a read error).
func (h *Feed) Wait(ctx context.Context, after uint64, limit int) ([]Event, error) {
	select {
	case <-h.closed:
		return nil, ErrClosed
	default:
	}
	return h.f.ring.wait(ctx, h.closed, after, limit)
}

// Done is closed when the feed has ended: its directory went away, it was
// closed, or reading failed. Err then says why.
func (h *Feed) Done() <-chan struct{} { return h.f.done }

// Err returns nil while the feed runs and why it ended afterwards.
func (h *Feed) Err() error {
	h.f.ring.mu.Lock()
	defer h.f.ring.mu.Unlock()
	return h.f.ring.err
}

// Stats describes a feed's current state.
type Stats struct {
	// Watches is the number of directories watched.
	Watches int
	// Seq and Oldest are the newest and oldest sequence numbers kept
	// (Oldest = Seq+1 when none is).
	Seq, Oldest uint64
	// Coalesced counts the changes merged into other events.
	Coalesced int64
	// Dropped counts the changes dropped for a Rescan (floods, queue
	// overflow not included: the kernel does not count those).
	Dropped int64
	// Rescans counts the Rescan events published.
	Rescans int64
}

// Stats returns the feed's counters.
func (h *Feed) Stats() Stats {
	f := h.f
	f.ring.mu.Lock()
	s := Stats{Seq: f.ring.last, Oldest: f.ring.oldest()}
	f.ring.mu.Unlock()
	s.Watches = int(f.watches.Load())
	s.Coalesced = f.coalesced.Load()
	s.Dropped = f.dropped.Load()
	s.Rescans = f.rescans.Load()
	return s
}

// Close releases the handle; it does not wait for blocked Wait calls on
// it, which return ErrClosed. The feed stops when its last handle is
// released (a Hub may keep it a while longer, see Config.Linger). Close is
// idempotent and returns nil.
func (h *Feed) Close() error {
	h.once.Do(func() {
		close(h.closed)
		h.f.release()
	})
	return nil
}

// Subscribe returns a cursor on the feed that starts after sequence
// number after (0 for every event kept, Seq() for only new ones).
func (h *Feed) Subscribe(after uint64) *Subscription {
	return &Subscription{feed: h, cursor: after}
}

// Subscription reads a feed's events one at a time, in order. It is meant
// for one goroutine.
type Subscription struct {
	feed   *Feed
	cursor uint64
	buf    []Event
}

// Next returns the next event, blocking until there is one. Errors are
// those of Feed.Wait: ErrCursorTooOld when the subscriber fell out of the
// window (list the tree again, then Subscribe from Seq), the feed's end
// reason after its last event, ErrClosed, or ctx's error.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	if len(s.buf) == 0 {
		evs, err := s.feed.Wait(ctx, s.cursor, 256)
		if err != nil {
			return Event{}, err
		}
		s.buf = evs
	}
	ev := s.buf[0]
	s.buf = s.buf[1:]
	s.cursor = ev.Seq
	return ev, nil
}

// Cursor returns the sequence number of the last event Next returned (or
// the starting point): the value to resume from.
func (s *Subscription) Cursor() uint64 { return s.cursor }
