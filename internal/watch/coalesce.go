package watch

import (
	"fmt"
	"strings"
	"time"
)

// coalescer turns the changes the reader sees into the events a feed
// publishes: writes to one file are merged within a window, and the
// publication rate is bounded, with a Rescan replacing whatever cannot
// wait in bounded memory. It is driven by one goroutine, with the time
// passed in (monotonic, never decreasing), so tests can replay a script.
//
// The invariant: every change is described by an event published after
// it happened (or by a Rescan covering its path), in the order the
// changes happened for any one path.
type coalescer struct {
	window   time.Duration
	rate     float64 // events per second
	burst    float64
	maxTable int

	tokens   float64
	refilled time.Time

	// recent holds the files for which a Created or Written was published
	// (or a modification seen) less than a window ago.
	recent map[string]*recentFile
	expiry []expiryRec // in the order of at: when each entry is due

	// backlog holds events waiting for the rate limit; pending maps a
	// path to the absolute index (base + i) of the newest backlog event
	// naming it.
	backlog []Event
	base    int
	pending map[string]int

	// overflow: events were dropped since overflowAt (lastIn is the
	// latest); a Rescan of the whole tree is due.
	overflow           bool
	overflowAt, lastIn time.Time
	dropped            uint64
	droppedTotal       uint64

	coalesced uint64
	out       []Event // ready to publish
}

type recentFile struct {
	at      time.Time // last Written or Created emitted, or first unreported modification
	emitted bool      // an event was emitted at at
	dirty   bool      // modified since at, not reported yet
	gen     uint64
}

type expiryRec struct {
	path string
	at   time.Time // entry due at at+window
	gen  uint64
}

func newCoalescer(cfg *Config, now time.Time) *coalescer {
	return &coalescer{
		window:   cfg.Window,
		rate:     float64(cfg.Rate),
		burst:    float64(cfg.Rate),
		maxTable: cfg.MaxTable,
		tokens:   float64(cfg.Rate),
		refilled: now,
		recent:   make(map[string]*recentFile),
		pending:  make(map[string]int),
	}
}

// take returns the events ready to publish and forgets them.
func (c *coalescer) take() []Event {
	out := c.out
	c.out = nil
	return out
}

// created reports a new entry. A file reported created is remembered for
// a window, so that its first writes merge into one Written at the
// window's end and a second report of the same creation (a directory
// scanned while its own events arrive) is dropped.
func (c *coalescer) created(now time.Time, p string, k Kind) {
	if k != KindDir {
		if c.recent[p] != nil {
			c.coalesced++
			return
		}
		c.remember(now, p, &recentFile{at: now, emitted: true})
	}
	c.emit(now, Event{Op: Created, Path: p, Kind: k})
}

// written reports a modification of the file p; closed is true when the
// writer closed it (IN_CLOSE_WRITE), false for a write in progress
// (IN_MODIFY). A closed write is published at once unless p was reported
// less than a window ago; a write in progress waits for the close or the
// window's end.
func (c *coalescer) written(now time.Time, p string, closed bool) {
	e := c.recent[p]
	switch {
	case e != nil && closed && !e.emitted:
		e.at, e.emitted, e.dirty = now, true, false
		c.arm(p, e)
		c.emit(now, Event{Op: Written, Path: p, Kind: KindFile})
	case e != nil:
		e.dirty = true
		c.coalesced++
	case closed:
		c.remember(now, p, &recentFile{at: now, emitted: true})
		c.emit(now, Event{Op: Written, Path: p, Kind: KindFile})
	default:
		if !c.remember(now, p, &recentFile{at: now, dirty: true}) {
			c.emit(now, Event{Op: Written, Path: p, Kind: KindFile})
		}
	}
}

// removed reports that p is gone. A directory's files are forgotten with
// it (a directory moved out of the tree goes with its contents).
func (c *coalescer) removed(now time.Time, p string, k Kind) {
	delete(c.recent, p)
	if k == KindDir {
		prefix := p + "/"
		for q := range c.recent {
			if strings.HasPrefix(q, prefix) {
				delete(c.recent, q)
			}
		}
	}
	c.emit(now, Event{Op: Removed, Path: p, Kind: k})
}

// renamed reports that old is now new. Writes to old not reported yet are
// reported under old first (before a directory's rename, every pending
// write is), so that the rename applies after them.
func (c *coalescer) renamed(now time.Time, old, new string, k Kind) {
	if k == KindDir {
		c.flushAll(now)
	} else {
		if e := c.recent[old]; e != nil && e.dirty {
			c.emit(now, Event{Op: Written, Path: old, Kind: KindFile})
		}
		delete(c.recent, old)
		delete(c.recent, new)
	}
	c.emit(now, Event{Op: Renamed, Path: new, OldPath: old, Kind: k})
}

// rescan reports that the subtree p could not be followed.
func (c *coalescer) rescan(now time.Time, p, note string) {
	c.emit(now, Event{Op: Rescan, Path: p, Note: note})
}

// reset forgets everything waiting, for a caller about to report a Rescan
// of the whole tree (after the kernel dropped events).
func (c *coalescer) reset() {
	clear(c.recent)
	c.expiry = nil
	c.base += len(c.backlog)
	c.backlog = nil
	clear(c.pending)
	c.overflow = false
}

// flushAll reports every write not reported yet and forgets all recent
// files.
func (c *coalescer) flushAll(now time.Time) {
	for p, e := range c.recent {
		if e.dirty {
			c.emit(now, Event{Op: Written, Path: p, Kind: KindFile})
		}
	}
	clear(c.recent)
	c.expiry = nil
}

// remember records e for p, reporting false when the table is full.
func (c *coalescer) remember(now time.Time, p string, e *recentFile) bool {
	if len(c.recent) >= c.maxTable {
		return false
	}
	c.recent[p] = e
	c.arm(p, e)
	return true
}

// arm schedules e (at e.at + window), invalidating earlier schedules.
func (c *coalescer) arm(p string, e *recentFile) {
	e.gen++
	c.expiry = append(c.expiry, expiryRec{path: p, at: e.at, gen: e.gen})
	if len(c.expiry) > 4*c.maxTable {
		live := c.expiry[:0]
		for _, r := range c.expiry {
			if x := c.recent[r.path]; x != nil && x.gen == r.gen {
				live = append(live, r)
			}
		}
		clear(c.expiry[len(live):])
		c.expiry = live
	}
}

func (c *coalescer) refill(now time.Time) {
	if d := now.Sub(c.refilled); d > 0 {
		c.tokens = min(c.burst, c.tokens+d.Seconds()*c.rate)
		c.refilled = now
	}
}

// emit publishes ev when the rate allows and nothing waits before it, and
// otherwise queues it (a write merging into a queued Created or Written of
// the same path). A full queue is dropped for a Rescan.
func (c *coalescer) emit(now time.Time, ev Event) {
	if c.overflow {
		c.dropped++
		c.droppedTotal++
		c.lastIn = now
		return
	}
	c.refill(now)
	if len(c.backlog) == 0 && c.tokens >= 1 {
		c.tokens--
		c.out = append(c.out, ev)
		return
	}
	if ev.Op == Written {
		if i, ok := c.pending[ev.Path]; ok && i >= c.base {
			if op := c.backlog[i-c.base].Op; op == Written || op == Created {
				c.coalesced++
				return
			}
		}
	}
	if len(c.backlog) >= c.maxTable {
		c.dropped += uint64(len(c.backlog)) + 1
		c.droppedTotal += uint64(len(c.backlog)) + 1
		c.reset()
		c.overflow, c.overflowAt, c.lastIn = true, now, now
		return
	}
	i := c.base + len(c.backlog)
	c.backlog = append(c.backlog, ev)
	switch {
	case ev.Op == Renamed && ev.Kind == KindDir:
		clear(c.pending)
	case ev.Op == Renamed:
		c.pending[ev.OldPath] = i
		c.pending[ev.Path] = i
	case ev.Op != Rescan:
		c.pending[ev.Path] = i
	}
}

// maxOverflow bounds how long a flood delays its Rescan.
const maxOverflow = time.Second

// tick publishes what is due at now: queued events the rate now allows,
// writes whose window ended, and the Rescan after a flood.
func (c *coalescer) tick(now time.Time) {
	c.refill(now)
	if n := min(len(c.backlog), int(c.tokens)); n > 0 {
		c.out = append(c.out, c.backlog[:n]...)
		c.tokens -= float64(n)
		c.base += n
		c.backlog = c.backlog[n:]
		if len(c.backlog) == 0 {
			c.backlog = nil
			clear(c.pending)
		}
	}
	for len(c.expiry) > 0 && !now.Before(c.expiry[0].at.Add(c.window)) {
		r := c.expiry[0]
		c.expiry = c.expiry[1:]
		e := c.recent[r.path]
		if e == nil || e.gen != r.gen {
			continue
		}
		if !e.dirty {
			delete(c.recent, r.path)
			continue
		}
		e.at, e.emitted, e.dirty = now, true, false
		c.arm(r.path, e)
		c.emit(now, Event{Op: Written, Path: r.path, Kind: KindFile})
	}
	if len(c.expiry) == 0 {
		c.expiry = nil
	}
	if c.overflow && (!now.Before(c.lastIn.Add(c.window)) || !now.Before(c.overflowAt.Add(maxOverflow))) {
		c.overflow = false
		c.out = append(c.out, c.overflowRescan())
	}
}

// deadline returns when tick must next run, or false when nothing waits.
func (c *coalescer) deadline() (time.Time, bool) {
	var t time.Time
	set := func(u time.Time) {
		if t.IsZero() || u.Before(t) {
			t = u
		}
	}
	if c.overflow {
		set(c.lastIn.Add(c.window))
		set(c.overflowAt.Add(maxOverflow))
	}
	if len(c.backlog) > 0 {
		need := (1 - c.tokens) / c.rate
		set(c.refilled.Add(time.Duration(max(need, 0) * float64(time.Second))))
	}
	if len(c.expiry) > 0 {
		set(c.expiry[0].at.Add(c.window))
	}
	return t, !t.IsZero()
}

// drain makes everything waiting ready at once, whatever the rate: for a
// feed about to end.
func (c *coalescer) drain(now time.Time) {
	c.flushAll(now)
	c.out = append(c.out, c.backlog...)
	c.base += len(c.backlog)
	c.backlog = nil
	clear(c.pending)
	if c.overflow {
		c.overflow = false
		c.out = append(c.out, c.overflowRescan())
	}
}

func (c *coalescer) overflowRescan() Event {
	ev := Event{Op: Rescan, Path: ".", Note: fmt.Sprintf("too many events at once: %d dropped", c.dropped)}
	c.dropped = 0
	return ev
}
