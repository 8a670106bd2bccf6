package watch

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Defaults for the zero Config.
const (
	DefaultRingSize   = 4096
	DefaultRingBytes  = 1 << 20
	DefaultMaxWatches = 8192
	DefaultWindow     = 50 * time.Millisecond
	DefaultMaxTable   = 4096
	DefaultRate       = 20000
	DefaultLinger     = 30 * time.Second
	DefaultMaxFeeds   = 64
)

// Config bounds a feed. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// RingSize is how many recent events a feed keeps for Since and for
	// subscribers that fall behind.
	RingSize int
	// RingBytes bounds the memory those events hold (paths included);
	// the oldest go first when either bound is reached.
	RingBytes int
	// MaxWatches bounds the directories one feed watches (one inotify
	// watch each, the watched directory included).
	MaxWatches int
	// Budget, when set, is shared by several feeds (say, a tenant's) and
	// bounds their watches together, in addition to MaxWatches.
	Budget *Budget
	// Window is the coalescing window: a file written again within it
	// after a Written event is reported once more at the window's end,
	// however many writes there were.
	Window time.Duration
	// MaxTable bounds the coalescing tables (paths written recently,
	// events waiting for the rate limit, special entries remembered for
	// their kind). When events wait beyond it the feed drops them and
	// reports a Rescan instead.
	MaxTable int
	// Rate bounds the events a feed publishes per second (and the burst
	// it publishes at once); events beyond it wait, coalesced.
	Rate int
	// Linger is how long a Hub keeps a feed nobody holds any more, so
	// that a subscriber reconnecting within it resumes from its cursor.
	// Negative means no lingering. Package-level Open ignores it.
	Linger time.Duration
	// MaxFeeds bounds the feeds a Hub runs at once, lingering ones
	// included (each holds an inotify instance, of which the kernel gives
	// a user 128 by default). At the bound, Open stops the feed that has
	// lingered longest to start a new one, or fails with ErrWatchLimit
	// when every feed is held. Package-level Open ignores it.
	MaxFeeds int
}

// withDefaults returns c with every zero field set to its default.
func (c *Config) withDefaults() Config {
	var out Config
	if c != nil {
		out = *c
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&out.RingSize, DefaultRingSize)
	def(&out.RingBytes, DefaultRingBytes)
	def(&out.MaxWatches, DefaultMaxWatches)
	def(&out.MaxTable, DefaultMaxTable)
	def(&out.Rate, DefaultRate)
	def(&out.MaxFeeds, DefaultMaxFeeds)
	if out.Window <= 0 {
		out.Window = DefaultWindow
	}
	if out.Linger == 0 {
		out.Linger = DefaultLinger
	}
	return out
}

// A Budget is a number of watches shared by the feeds given it, for
// example all the feeds of one tenant. A budget may have a parent (a
// scope's budget under its tenant's): a watch then counts against both.
// Its methods are safe for concurrent use.
type Budget struct {
	max    int64
	parent *Budget
	used   atomic.Int64
}

// NewBudget returns a budget of max watches (max > 0) under parent, which
// may be nil.
func NewBudget(max int, parent *Budget) *Budget {
	if max <= 0 {
		panic(fmt.Sprintf("watch: NewBudget(%d): max must be positive", max))
	}
	return &Budget{max: int64(max), parent: parent}
}

// Max returns the budget's size.
func (b *Budget) Max() int { return int(b.max) }

// Used returns the watches currently counted against b.
func (b *Budget) Used() int { return int(b.used.Load()) }

// acquire counts n watches against b and its ancestors, or none when any
// of them would exceed its size. A nil budget always succeeds.
func (b *Budget) acquire(n int64) bool {
	for x := b; x != nil; x = x.parent {
		if x.used.Add(n) > x.max {
			for y := b; y != x.parent; y = y.parent {
				y.used.Add(-n)
			}
			return false
		}
	}
	return true
}

// release gives back n watches acquired earlier.
func (b *Budget) release(n int64) {
	for x := b; x != nil; x = x.parent {
		x.used.Add(-n)
	}
}
