package watch

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// A Hub shares feeds: every Open of the same directory (the same inode,
// whatever the path or *os.Root it was reached through) with the same
// budget returns a handle on one feed, counted. When the last handle is
// closed the feed lingers (Config.Linger) so that a subscriber that
// reconnects resumes with its cursor, then stops. A Hub's methods are
// safe for concurrent use.
type Hub struct {
	cfg Config

	mu     sync.Mutex
	feeds  map[hubKey]*hubFeed
	closed bool
}

type hubKey struct {
	dev, ino uint64
	budget   *Budget
}

// target is a directory to watch: dir (clean, relative, "." for the
// anchor itself) below anchor, a descriptor of the *os.Root's directory,
// and the identity it had when checked.
type target struct {
	anchor   *os.File
	dir      string
	dev, ino uint64
}

func (t *target) close() { t.anchor.Close() }

type hubFeed struct {
	f     *feed
	timer *time.Timer // linger, while nobody holds the feed
	since time.Time   // when the linger began
}

// NewHub returns a hub whose feeds are bounded by cfg (nil for the
// defaults). cfg.Budget is the default budget of Open.
func NewHub(cfg *Config) *Hub {
	return &Hub{cfg: cfg.withDefaults(), feeds: make(map[hubKey]*hubFeed)}
}

// Open returns a handle on the feed of dir, a slash-separated path inside
// root ("." for root itself), starting one if none runs. Its watches
// count against budget (nil for the hub's Config.Budget). Errors are those
// of the package-level Open, and ErrClosed once the hub is closed.
func (h *Hub) Open(root *os.Root, dir string, budget *Budget) (*Feed, error) {
	if budget == nil {
		budget = h.cfg.Budget
	}
	tg, err := openWatchDir(root, dir)
	if err != nil {
		return nil, err
	}
	key := hubKey{tg.dev, tg.ino, budget}
	if hf := h.lookup(key); hf != nil {
		tg.close()
		return hf, nil
	}
	if err := h.makeRoom(); err != nil {
		tg.close()
		return nil, err
	}
	cfg := h.cfg
	cfg.Budget = budget
	f, err := startFeed(tg, &cfg)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		f.stop()
		return nil, ErrClosed
	}
	if old := h.feeds[key]; old != nil && !old.f.ended() {
		// Started concurrently by another Open: keep that one.
		h.mu.Unlock()
		f.stop()
		if hf := h.lookup(key); hf != nil {
			return hf, nil
		}
		return h.Open(root, dir, budget)
	}
	h.feeds[key] = &hubFeed{f: f}
	f.onIdle = func(f *feed) { h.idle(key, f) }
	hd := f.acquire()
	h.mu.Unlock()
	return hd, nil
}

// makeRoom keeps the hub within MaxFeeds before a feed starts: it stops
// the feed that has lingered longest when the hub is full, and fails with
// ErrWatchLimit when every feed is held. (Two Opens racing may overshoot
// by one each; the kernel's own limit still holds.)
func (h *Hub) makeRoom() error {
	h.mu.Lock()
	if len(h.feeds) < h.cfg.MaxFeeds {
		h.mu.Unlock()
		return nil
	}
	var oldKey hubKey
	var old *hubFeed
	for k, hf := range h.feeds {
		if hf.timer != nil && (old == nil || hf.since.Before(old.since)) {
			oldKey, old = k, hf
		}
	}
	if old == nil {
		h.mu.Unlock()
		return fmt.Errorf("%w: %d feeds running, each held", ErrWatchLimit, len(h.feeds))
	}
	old.timer.Stop()
	delete(h.feeds, oldKey)
	h.mu.Unlock()
	old.f.stop()
	return nil
}

// lookup returns a new handle on the running feed of key, or nil.
func (h *Hub) lookup(key hubKey) *Feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	hf := h.feeds[key]
	if hf == nil || hf.f.ended() || h.closed {
		return nil
	}
	if hf.timer != nil {
		hf.timer.Stop()
		hf.timer = nil
	}
	return hf.f.acquire()
}

// idle runs when nobody holds f any more: it stops f after the linger.
func (h *Hub) idle(key hubKey, f *feed) {
	h.mu.Lock()
	f.mu.Lock()
	taken := f.refs > 0
	f.mu.Unlock()
	if taken { // taken again by lookup meanwhile
		h.mu.Unlock()
		return
	}
	hf := h.feeds[key]
	if hf != nil && hf.f == f && !h.closed && !f.ended() && h.cfg.Linger > 0 {
		hf.timer, hf.since = time.AfterFunc(h.cfg.Linger, func() { h.expire(key, hf) }), time.Now()
		h.mu.Unlock()
		return
	}
	if hf != nil && hf.f == f {
		delete(h.feeds, key)
	}
	h.mu.Unlock()
	f.stop()
}

// expire stops hf at the end of its linger, unless it was taken again.
func (h *Hub) expire(key hubKey, hf *hubFeed) {
	h.mu.Lock()
	hf.f.mu.Lock()
	stop := hf.f.refs == 0 && h.feeds[key] == hf
	hf.f.mu.Unlock()
	if stop {
		delete(h.feeds, key)
	}
	h.mu.Unlock()
	if stop {
		hf.f.stop()
	}
}

// Close stops every feed of the hub (their handles see the feeds end with
// ErrClosed) and refuses further Opens. It waits for the feeds' readers.
func (h *Hub) Close() error {
	h.mu.Lock()
	h.closed = true
	fs := make([]*feed, 0, len(h.feeds))
	for k, hf := range h.feeds {
		if hf.timer != nil {
			hf.timer.Stop()
		}
		fs = append(fs, hf.f)
		delete(h.feeds, k)
	}
	h.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
	return nil
}
