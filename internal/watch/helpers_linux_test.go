package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitLimit bounds how long a test waits for an event that must come; it
// is a hang guard, not a timing assertion.
const waitLimit = 20 * time.Second

// tree returns a fresh directory and an *os.Root on it.
func tree(t testing.TB) (string, *os.Root) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return dir, r
}

// open starts a feed of dir in r, closed at the end of the test.
func open(t testing.TB, r *os.Root, dir string, cfg *Config) *Feed {
	t.Helper()
	f, err := Open(r, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// collector accumulates a feed's events.
type collector struct {
	t   testing.TB
	sub *Subscription
	evs []Event
	err error // the error that ended the subscription
}

func collect(t testing.TB, f *Feed) *collector {
	return &collector{t: t, sub: f.Subscribe(0)}
}

// next returns the next event or fails the test after waitLimit.
func (c *collector) next() (Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	ev, err := c.sub.Next(ctx)
	if err == nil {
		c.evs = append(c.evs, ev)
	}
	return ev, err
}

// until reads events until one matches pred, and returns it.
func (c *collector) until(what string, pred func(Event) bool) Event {
	c.t.Helper()
	for {
		ev, err := c.next()
		if err != nil {
			c.t.Fatalf("waiting for %s: %v; got %s", what, err, c.dump())
		}
		if pred(ev) {
			return ev
		}
	}
}

// untilOp waits for the event op on path.
func (c *collector) untilOp(op Op, path string) Event {
	c.t.Helper()
	return c.until(op.String()+" "+path, func(e Event) bool { return e.Op == op && e.Path == path })
}

// rest reads every event up to the end of the feed (which the caller
// closed) and returns the error that ended it.
func (c *collector) rest() error {
	c.t.Helper()
	for {
		_, err := c.next()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				c.t.Fatalf("feed did not end: %s", c.dump())
			}
			return err
		}
	}
}

func (c *collector) dump() string {
	var b strings.Builder
	for _, e := range c.evs {
		b.WriteString("\n\t")
		b.WriteString(e.String())
	}
	return b.String()
}

// has reports whether an event matches pred.
func (c *collector) has(pred func(Event) bool) bool {
	for _, e := range c.evs {
		if pred(e) {
			return true
		}
	}
	return false
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func join(dir string, elems ...string) string {
	return filepath.Join(append([]string{dir}, elems...)...)
}

// waitUntil polls cond until it holds (a hang guard, not a timing
// assertion).
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
