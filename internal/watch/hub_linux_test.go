package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHubSharesFeeds: opens of one directory share a feed (through
// different roots and paths), sequence numbers belong to the feed, and a
// subscriber that comes back within the linger resumes with its cursor.
func TestHubSharesFeeds(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "ws"))
	r2, err := os.OpenRoot(join(dir, "ws"))
	must(t, err)
	defer r2.Close()
	h := NewHub(&Config{Linger: time.Hour})
	defer h.Close()

	a, err := h.Open(r, "ws", nil)
	must(t, err)
	b, err := h.Open(r2, ".", nil)
	must(t, err)
	if a.ID() != b.ID() {
		t.Fatal("two feeds for one directory")
	}
	other, err := h.Open(r, "ws", NewBudget(100, nil))
	must(t, err)
	if other.ID() == a.ID() {
		t.Fatal("a feed shared across budgets")
	}
	other.Close()

	ca := collect(t, a)
	write(t, join(dir, "ws", "one"), "1")
	ca.untilOp(Created, "one")
	cursor := ca.sub.Cursor()
	a.Close()
	if _, err := a.Since(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Since on a closed handle: %v", err)
	}
	if _, err := a.Wait(context.Background(), 0, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait on a closed handle: %v", err)
	}
	write(t, join(dir, "ws", "two"), "2")
	cb := collect(t, b)
	cb.untilOp(Created, "two")
	b.Close() // nobody holds the feed now: it lingers

	write(t, join(dir, "ws", "three"), "3")
	c, err := h.Open(r, "ws", nil)
	must(t, err)
	defer c.Close()
	if c.ID() != a.ID() {
		t.Fatal("the feed did not linger")
	}
	s := c.Subscribe(cursor)
	cc := &collector{t: t, sub: s}
	cc.untilOp(Created, "three")
	for _, e := range cc.evs {
		if e.Seq <= cursor {
			t.Fatalf("resumed before the cursor: %s", e)
		}
	}
	if !cc.has(isOp(Created, "two")) {
		t.Fatalf("event lost across the reconnect:%s", cc.dump())
	}
}

// TestHubLingerEnds: with no linger the feed stops with its last handle;
// an ended feed is replaced by the next Open; Close of the hub ends every
// feed and refuses new ones.
func TestHubLingerEnds(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "w"))
	h := NewHub(&Config{Linger: -1})
	a, err := h.Open(r, "w", nil)
	must(t, err)
	id := a.ID()
	a.Close()
	<-a.Done()
	b, err := h.Open(r, "w", nil)
	must(t, err)
	if b.ID() == id {
		t.Fatal("a stopped feed was reused")
	}
	must(t, os.Remove(join(dir, "w")))
	<-b.Done()
	mkdir(t, join(dir, "w"))
	c, err := h.Open(r, "w", nil)
	must(t, err)
	if c.ID() == b.ID() {
		t.Fatal("an ended feed was reused")
	}
	b.Close()
	h.Close()
	<-c.Done()
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("after hub Close: %v", c.Err())
	}
	if _, err := h.Open(r, "w", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Open after Close: %v", err)
	}
	c.Close()
}

// TestConcurrentSubscribers: many subscribers (half joining mid-way,
// catching up with Since) and several writers; every subscriber sees the
// same events with the same sequence numbers. Run with -race.
func TestConcurrentSubscribers(t *testing.T) {
	dir, r := tree(t)
	h := NewHub(nil)
	defer h.Close()
	f, err := h.Open(r, ".", nil)
	must(t, err)
	defer f.Close()

	const writers, files, subs = 4, 50, 8
	total := writers * files
	results := make([][]Event, subs)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := h.Open(r, ".", nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer g.Close()
			<-start
			s := g.Subscribe(0)
			n := 0
			if i%2 == 1 {
				// Joins mid-way: catches up with Since, then follows.
				for g.Seq() < uint64(10*i) {
					time.Sleep(time.Millisecond)
				}
				evs, err := g.Since(0)
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = evs
				for _, e := range evs {
					if e.Op == Created {
						n++
					}
				}
				s = g.Subscribe(evs[len(evs)-1].Seq)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			for n < total {
				e, err := s.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				results[i] = append(results[i], e)
				if e.Op == Created {
					n++
				}
			}
		}()
	}
	close(start)
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			d := join(dir, fmt.Sprintf("w%d", w))
			os.Mkdir(d, 0o755)
			for i := range files - 1 {
				os.WriteFile(join(d, fmt.Sprint(i)), nil, 0o644)
			}
		}()
	}
	ww.Wait()
	wg.Wait()
	for i := 1; i < subs; i++ {
		n := min(len(results[i]), len(results[0]))
		if n < total {
			t.Fatalf("subscriber %d saw %d events", i, len(results[i]))
		}
		for j := range n {
			if results[i][j].Seq != results[0][j].Seq || results[i][j].Path != results[0][j].Path {
				t.Fatalf("subscriber %d saw %s where 0 saw %s", i, results[i][j], results[0][j])
			}
		}
	}
}

// TestNoLeaks: opening and closing feeds (alone, through a hub, ended by
// their directory's removal) leaves no descriptor and no goroutine.
func TestNoLeaks(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "a", "b"))
	// Warm up what the runtime opens once (the poller).
	f := open(t, r, ".", nil)
	f.Close()
	<-f.Done()

	fds, gs := countFDs(t), runtime.NumGoroutine()
	for i := range 20 {
		f, err := Open(r, ".", nil)
		must(t, err)
		s := f.Subscribe(0)
		write(t, join(dir, "a", "b", fmt.Sprint(i)), "x")
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		_, err = s.Next(ctx)
		cancel()
		must(t, err)
		f.Close()
		<-f.Done()

		h := NewHub(&Config{Linger: time.Hour})
		g, err := h.Open(r, "a", nil)
		must(t, err)
		g.Close()
		h.Close()
		<-g.Done()

		mkdir(t, join(dir, "gone", "sub"))
		e, err := Open(r, "gone", nil)
		must(t, err)
		must(t, os.RemoveAll(join(dir, "gone")))
		<-e.Done()
		e.Close()
	}
	waitUntil(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= gs })
	if n := countFDs(t); n != fds {
		t.Fatalf("descriptors: %d before, %d after", fds, n)
	}
}

func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents)
}

// TestRaceRenameOverDir: a directory renamed over an empty one, and
// renames racing a new directory's listing, leave the feed consistent:
// later changes carry the right paths.
func TestRaceRenameOverDir(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "src", "in"))
	mkdir(t, join(dir, "dst"))
	f := open(t, r, ".", nil)
	c := collect(t, f)
	must(t, syscall.Rename(join(dir, "src"), join(dir, "dst"))) // os.Rename refuses a directory target
	c.untilOp(Renamed, "dst")
	write(t, join(dir, "dst", "in", "x"), "x")
	c.untilOp(Created, "dst/in/x")
	waitUntil(t, "the replaced directory's watch to go", func() bool { return f.Stats().Watches == 3 })
	for i := range 20 {
		run(t, dir, fmt.Sprintf("mkdir r%d && mv r%d q%d && mkdir r%d && echo > r%d/f && echo > q%d/g", i, i, i, i, i, i))
	}
	write(t, join(dir, "r19", "last"), "l")
	c.untilOp(Created, "r19/last")
	f.Close()
	c.rest()
	for _, e := range c.evs {
		if strings.HasSuffix(e.Path, "/g") && !strings.HasPrefix(e.Path, "q") {
			t.Fatalf("a file of q reported elsewhere: %s%s", e, c.dump())
		}
		if strings.HasSuffix(e.Path, "/f") && !strings.HasPrefix(e.Path, "r") {
			t.Fatalf("a file of r reported elsewhere: %s%s", e, c.dump())
		}
	}
}

// TestHubConcurrentOpen: opens racing for a directory nobody watches yet
// end up on one feed, and the feeds started in vain are stopped.
func TestHubConcurrentOpen(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "w", "sub"))
	h := NewHub(&Config{Linger: -1})
	defer h.Close()
	fds := countFDs(t)
	const n = 8
	feeds := make([]*Feed, n)
	var wg sync.WaitGroup
	for i := range feeds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := h.Open(r, "w", nil)
			if err != nil {
				t.Error(err)
				return
			}
			feeds[i] = f
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, f := range feeds[1:] {
		if f.ID() != feeds[0].ID() {
			t.Fatal("concurrent opens got different feeds")
		}
	}
	if got := countFDs(t) - fds; got != 2 {
		t.Fatalf("%d descriptors for one feed, want 2 (feeds started in vain not stopped?)", got)
	}
	for _, f := range feeds {
		f.Close()
	}
	<-feeds[0].Done()
	if got := countFDs(t); got != fds {
		t.Fatalf("descriptors: %d before, %d after", fds, got)
	}
}

// TestHubMaxFeeds: a full hub stops the feed that lingered longest to
// start a new one, and refuses one when every feed is held.
func TestHubMaxFeeds(t *testing.T) {
	dir, r := tree(t)
	for _, d := range []string{"a", "b", "c"} {
		mkdir(t, join(dir, d))
	}
	h := NewHub(&Config{MaxFeeds: 2, Linger: time.Hour})
	defer h.Close()
	a, err := h.Open(r, "a", nil)
	must(t, err)
	b, err := h.Open(r, "b", nil)
	must(t, err)
	if _, err := h.Open(r, "c", nil); !errors.Is(err, ErrWatchLimit) {
		t.Fatalf("third feed with two held: %v", err)
	}
	a.Close() // lingers
	c, err := h.Open(r, "c", nil)
	must(t, err)
	defer c.Close()
	defer b.Close()
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the lingering feed was not stopped")
	}
	// The evicted feed's directory gets a new feed (another ID).
	b.Close()
	a2, err := h.Open(r, "a", nil)
	must(t, err)
	defer a2.Close()
	if a2.ID() == a.ID() {
		t.Fatal("the evicted feed was reused")
	}
}
