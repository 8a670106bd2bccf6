package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestKernelQueueOverflow stops the reader, makes more events than the
// kernel queues (fs.inotify.max_queued_events, read, never changed), and
// checks that the overflow surfaces as a Rescan of the whole tree and
// that the feed follows the tree again afterwards, directories created
// meanwhile included.
func TestKernelQueueOverflow(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	must(t, err)
	limit, err := strconv.Atoi(strings.TrimSpace(string(b)))
	must(t, err)
	if limit > 1<<17 {
		t.Skipf("max_queued_events is %d: too many files to create", limit)
	}

	dir, r := tree(t)
	mkdir(t, join(dir, "flood"))
	var gate sync.Mutex
	testHooks.beforeRead = func() { gate.Lock(); gate.Unlock() }
	// A ring large enough for the events before the overflow, which the
	// collector reads more slowly than the feed publishes them.
	f := open(t, r, ".", &Config{RingSize: 1 << 16, RingBytes: 64 << 20})
	testHooks.beforeRead = nil
	c := collect(t, f)

	gate.Lock()
	// Each new empty file queues IN_CREATE and IN_CLOSE_WRITE.
	for i := range limit/2 + 100 {
		fd, err := os.Create(join(dir, "flood", strconv.Itoa(i)))
		must(t, err)
		fd.Close()
	}
	mkdir(t, join(dir, "during", "deep"))
	gate.Unlock()

	e := c.until("rescan", func(e Event) bool { return e.Op == Rescan })
	if e.Path != "." || !strings.Contains(e.Note, "overflow") {
		t.Fatalf("got %s", e)
	}
	write(t, join(dir, "during", "deep", "after"), "a")
	c.untilOp(Created, "during/deep/after")
	if n := f.Stats().Watches; n != 4 {
		t.Fatalf("watches after the resync: %d, want 4", n)
	}
}

// TestFloodBecomesRescan: more events than the rate and the waiting room
// allow are dropped for one Rescan, published after them; the feed goes
// on normally afterwards.
func TestFloodBecomesRescan(t *testing.T) {
	dir, r := tree(t)
	f := open(t, r, ".", &Config{Rate: 5, MaxTable: 8})
	c := collect(t, f)
	for i := range 100 {
		write(t, join(dir, fmt.Sprintf("f%03d", i)), "x")
	}
	e := c.until("rescan", func(e Event) bool { return e.Op == Rescan })
	if e.Path != "." || !strings.Contains(e.Note, "dropped") {
		t.Fatalf("got %s", e)
	}
	if s := f.Stats(); s.Dropped == 0 || s.Rescans == 0 {
		t.Fatalf("stats %+v", s)
	}
	write(t, join(dir, "after"), "a")
	c.untilOp(Created, "after")
	if len(c.evs) > 40 {
		t.Fatalf("%d events for a flood bounded at 5/s with 8 waiting:%s", len(c.evs), c.dump())
	}
}

// TestWritesCoalesced: many writes to one file through one descriptor
// make a few Written events, the last after the last write.
func TestWritesCoalesced(t *testing.T) {
	dir, r := tree(t)
	write(t, join(dir, "log"), "")
	f := open(t, r, ".", nil)
	c := collect(t, f)
	fd, err := os.OpenFile(join(dir, "log"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	const writes = 2000
	for i := range writes {
		fmt.Fprintf(fd, "line %d\n", i)
	}
	must(t, fd.Close())
	write(t, join(dir, "marker"), "m")
	c.untilOp(Created, "marker")
	f.Close()
	c.rest()
	n := 0
	for _, e := range c.evs {
		if e.Path == "log" {
			if e.Op != Written {
				t.Fatalf("got %s", e)
			}
			n++
		}
	}
	if n == 0 || n > writes/10 {
		t.Fatalf("%d Written events for %d writes:%s", n, writes, c.dump())
	}
}

// TestWatchLimits: a tree larger than the feed's limit or budget is
// refused; a directory that appears beyond the limit is reported as a
// Rescan of it; a shared budget counts the watches of several feeds and
// gets them back when they close.
func TestWatchLimits(t *testing.T) {
	dir, r := tree(t)
	for _, d := range []string{"a/b", "c"} {
		mkdir(t, join(dir, d))
	}
	if _, err := Open(r, ".", &Config{MaxWatches: 3}); !errors.Is(err, ErrWatchLimit) {
		t.Fatalf("Open with 3 watches for 4 directories: %v", err)
	}
	tenant := NewBudget(6, nil)
	scope := NewBudget(5, tenant)
	f := open(t, r, ".", &Config{Budget: scope})
	if scope.Used() != 4 || tenant.Used() != 4 {
		t.Fatalf("used %d/%d, want 4/4", scope.Used(), tenant.Used())
	}
	c := collect(t, f)
	mkdir(t, join(dir, "d1"))
	c.untilOp(Created, "d1")
	mkdir(t, join(dir, "d2"))
	c.untilOp(Created, "d2")
	e := c.until("rescan of d2", func(e Event) bool { return e.Op == Rescan })
	if e.Path != "d2" || !strings.Contains(e.Note, "limit") {
		t.Fatalf("got %s", e)
	}
	// Another feed under the same tenant gets only what is left.
	if _, err := Open(r, "a", &Config{Budget: NewBudget(10, tenant)}); !errors.Is(err, ErrWatchLimit) {
		t.Fatalf("second feed beyond the tenant's budget: %v", err)
	}
	if tenant.Used() != 5 {
		t.Fatalf("a refused feed kept watches: %d", tenant.Used())
	}
	f.Close()
	c.rest()
	if scope.Used() != 0 || tenant.Used() != 0 {
		t.Fatalf("after close: used %d/%d", scope.Used(), tenant.Used())
	}
	g := open(t, r, "a", &Config{Budget: NewBudget(10, tenant)})
	if tenant.Used() != 2 {
		t.Fatalf("tenant used %d, want 2", tenant.Used())
	}
	g.Close()
}

// TestCursor: Since and subscribers with cursors inside and outside the
// window.
func TestCursor(t *testing.T) {
	dir, r := tree(t)
	f := open(t, r, ".", &Config{RingSize: 8})
	for i := range 5 {
		mkdir(t, join(dir, fmt.Sprintf("d%d", i)))
	}
	waitUntil(t, "5 events", func() bool { return f.Seq() == 5 })
	evs, err := f.Since(0)
	if err != nil || len(evs) != 5 {
		t.Fatalf("Since(0) = %v, %v", evs, err)
	}
	if evs, err := f.Since(3); err != nil || len(evs) != 2 || evs[0].Seq != 4 {
		t.Fatalf("Since(3) = %v, %v", evs, err)
	}
	if evs, err := f.Since(5); err != nil || len(evs) != 0 {
		t.Fatalf("Since(5) = %v, %v", evs, err)
	}
	if _, err := f.Since(6); !errors.Is(err, ErrCursorTooOld) {
		t.Fatalf("Since(ahead) = %v", err)
	}
	for i := 5; i < 20; i++ {
		mkdir(t, join(dir, fmt.Sprintf("d%d", i)))
	}
	waitUntil(t, "20 events", func() bool { return f.Seq() == 20 })
	if _, err := f.Since(0); !errors.Is(err, ErrCursorTooOld) {
		t.Fatalf("Since(0) after 20 events in 8 = %v", err)
	}
	if evs, err := f.Since(12); err != nil || len(evs) != 8 || evs[0].Seq != 13 {
		t.Fatalf("Since(12) = %v, %v", evs, err)
	}
	if _, err := f.Since(11); !errors.Is(err, ErrCursorTooOld) {
		t.Fatalf("Since(11) = %v", err)
	}
	ctx := context.Background()
	if _, err := f.Subscribe(2).Next(ctx); !errors.Is(err, ErrCursorTooOld) {
		t.Fatalf("Next from an old cursor = %v", err)
	}
	s := f.Subscribe(f.Seq())
	mkdir(t, join(dir, "new"))
	if e, err := s.Next(ctx); err != nil || e.Path != "new" || e.Seq != 21 || s.Cursor() != 21 {
		t.Fatalf("Next = %v, %v", e, err)
	}
	if st := f.Stats(); st.Seq != 21 || st.Oldest != 14 {
		t.Fatalf("stats %+v", st)
	}
}
