package watch

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// pausedFeed opens a feed whose reader waits at gate before each read.
func pausedFeed(t *testing.T, r *os.Root, dir string, cfg *Config) (*Feed, *sync.Mutex) {
	t.Helper()
	gate := new(sync.Mutex)
	testHooks.beforeRead = func() { gate.Lock(); gate.Unlock() }
	f := open(t, r, dir, cfg)
	testHooks.beforeRead = nil
	return f, gate
}

// TestQueuedEventsFromOutside: a directory moved out of the tree while
// the reader is stopped keeps its watch until the reader sees the move;
// the events queued meanwhile by changes in it, now outside, never
// surface.
func TestQueuedEventsFromOutside(t *testing.T) {
	dir, r := tree(t)
	outside := t.TempDir()
	mkdir(t, join(dir, "sub", "deeper"))
	f, gate := pausedFeed(t, r, ".", nil)
	c := collect(t, f)

	gate.Lock()
	must(t, os.Rename(join(dir, "sub"), join(outside, "sub")))
	write(t, join(outside, "sub", "canary"), "c")
	write(t, join(outside, "sub", "deeper", "canary"), "c")
	must(t, os.Mkdir(join(outside, "sub", "canarydir"), 0o755))
	must(t, os.Remove(join(outside, "sub", "canary")))
	write(t, join(dir, "marker"), "m")
	gate.Unlock()

	c.untilOp(Created, "marker")
	f.Close()
	c.rest()
	for _, e := range c.evs {
		if strings.Contains(e.Path, "canary") {
			t.Fatalf("an event from outside surfaced: %s%s", e, c.dump())
		}
		if e.Op == Rescan {
			t.Fatalf("the feed lost track of a plain move:%s", c.dump())
		}
	}
	if !c.has(isOp(Removed, "sub")) {
		t.Fatalf("the move out was not reported:%s", c.dump())
	}
}

// TestScopeSwap: the watched directory (a scope) is swapped with a
// sibling by someone outside it; the feed ends (its directory moved) and
// nothing from the sibling surfaces, even when the swap happens while the
// reader is stopped.
func TestScopeSwap(t *testing.T) {
	dir, r := tree(t)
	mkdir(t, join(dir, "a", "asub"))
	mkdir(t, join(dir, "b", "bsub"))
	mkdir(t, join(dir, "b", "newdir"))
	write(t, join(dir, "b", "newdir", "canary"), "c")
	f, gate := pausedFeed(t, r, "a", nil)
	c := collect(t, f)

	gate.Lock()
	write(t, join(dir, "a", "asub", "mine"), "m")
	mkdir(t, join(dir, "a", "newdir")) // looked at after the swap
	must(t, os.Rename(join(dir, "a"), join(dir, "x")))
	must(t, os.Rename(join(dir, "b"), join(dir, "a")))
	write(t, join(dir, "a", "canary"), "c")
	write(t, join(dir, "a", "bsub", "canary"), "c")
	must(t, os.Mkdir(join(dir, "a", "canarydir"), 0o755))
	gate.Unlock()

	err := c.rest()
	if !errors.Is(err, ErrRootGone) {
		t.Fatalf("ended with %v:%s", err, c.dump())
	}
	for _, e := range c.evs {
		if strings.Contains(e.Path, "canary") || strings.Contains(e.Path, "bsub") {
			t.Fatalf("an event from the sibling surfaced: %s%s", e, c.dump())
		}
	}
	if !c.has(isOp(Created, "asub/mine")) {
		t.Fatalf("the change before the swap was lost:%s", c.dump())
	}
}

// TestDirectoryReplacedByLink: a new directory replaced by a link to a
// canary before the feed looks at it is never followed.
func TestDirectoryReplacedByLink(t *testing.T) {
	dir, r := tree(t)
	canary := t.TempDir()
	mkdir(t, join(canary, "sub"))
	f, gate := pausedFeed(t, r, ".", nil)
	c := collect(t, f)
	for i := range 20 {
		gate.Lock()
		d := fmt.Sprintf("d%d", i)
		mkdir(t, join(dir, d))
		must(t, os.Remove(join(dir, d)))
		must(t, os.Symlink(canary, join(dir, d)))
		gate.Unlock()
		c.until("link "+d, func(e Event) bool { return e.Path == d && e.Kind == KindSymlink })
		write(t, join(canary, fmt.Sprintf("canary%d", i)), "c")
		write(t, join(canary, "sub", fmt.Sprintf("canary%d", i)), "c")
	}
	// Racing for real, without the gate, through a shell.
	run(t, dir, "for i in 1 2 3 4 5 6 7 8 9 10; do mkdir r$i && rmdir r$i && ln -s "+canary+" r$i; done")
	for i := range 10 {
		write(t, join(canary, fmt.Sprintf("race%d", i)), "c")
		write(t, join(canary, "sub", fmt.Sprintf("race%d", i)), "c")
	}
	write(t, join(dir, "marker"), "m")
	c.untilOp(Created, "marker")
	f.Close()
	c.rest()
	for _, e := range c.evs {
		if strings.Contains(e.Path, "canary") || strings.Contains(e.Path, "race") || strings.Contains(e.Path, "/sub") {
			t.Fatalf("a change behind a link surfaced: %s%s", e, c.dump())
		}
	}
	if f.Stats().Watches != 0 {
		t.Fatal("watches left after close")
	}
}
