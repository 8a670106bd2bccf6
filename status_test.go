package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestStatusString(t *testing.T) {
	cases := []struct {
		s    Status
		want string
	}{
		{StatusConnected, "connected"},
		{StatusConnecting, "connecting"},
		{StatusDisconnected, "disconnected"},
		{StatusReconnecting, "reconnecting"},
		{StatusDestroyed, "destroyed"},
		{Status(99), "unknown"},
		{Status(-1), "unknown"},
	}
	for _, c := range cases {
		if got := c.s.String(); got != c.want {
			t.Errorf("Status(%d).String() = %q, want %q", int(c.s), got, c.want)
		}
	}
}

// ctCloser counts Close calls and can block in Close until released.
type ctCloser struct {
	n       atomic.Int32
	err     error
	block   chan struct{} // if set, Close waits for it to be closed
	entered chan struct{} // if set, closed when Close starts
	order   *[]string
	mu      *sync.Mutex
	name    string
}

func (c *ctCloser) Close() error {
	c.n.Add(1)
	if c.order != nil {
		c.mu.Lock()
		*c.order = append(*c.order, c.name)
		c.mu.Unlock()
	}
	if c.entered != nil {
		close(c.entered)
	}
	if c.block != nil {
		<-c.block
	}
	return c.err
}

// ctRootBackends returns fresh root backends of every local kind.
func ctRootBackends(t *testing.T) map[string]Backend {
	return map[string]Backend{
		"local":  ctLocal(t, LocalConfig{}),
		"memory": ctMemory(t, MemoryConfig{}),
	}
}

// ctTransitions records status callbacks.
type ctTransitions struct {
	mu  sync.Mutex
	got []string
}

func (r *ctTransitions) fn(old, new Status) {
	r.mu.Lock()
	r.got = append(r.got, old.String()+"->"+new.String())
	r.mu.Unlock()
}

func (r *ctTransitions) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

func TestStatusStartsConnected(t *testing.T) {
	for name, b := range ctRootBackends(t) {
		if got := b.Status(); got != StatusConnected {
			t.Errorf("%s: initial status %v, want connected", name, got)
		}
		s := ctScope(t, b, "sub")
		if got := s.Status(); got != StatusConnected {
			t.Errorf("%s scope: initial status %v, want connected", name, got)
		}
	}
}

func TestStatusDestroyTransition(t *testing.T) {
	for name, b := range ctRootBackends(t) {
		var a, c, gone ctTransitions
		b.OnStatusChange(a.fn)
		unsub := b.OnStatusChange(gone.fn)
		b.OnStatusChange(c.fn)
		unsub()
		unsub() // unsubscribing twice is harmless
		var seen Status = -1
		b.OnStatusChange(func(_, _ Status) { seen = b.Status() }) // no deadlock, sees the new status

		if err := b.Destroy(context.Background()); err != nil {
			t.Fatalf("%s: Destroy: %v", name, err)
		}
		if err := b.Destroy(context.Background()); err != nil {
			t.Fatalf("%s: second Destroy: %v", name, err)
		}
		if got := b.Status(); got != StatusDestroyed {
			t.Errorf("%s: status after Destroy %v", name, got)
		}
		want := []string{"connected->destroyed"}
		for label, r := range map[string]*ctTransitions{"first": &a, "third": &c} {
			if got := r.list(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%s: %s subscriber saw %q, want %q", name, label, got, want)
			}
		}
		if got := gone.list(); len(got) != 0 {
			t.Errorf("%s: unsubscribed callback fired: %q", name, got)
		}
		if seen != StatusDestroyed {
			t.Errorf("%s: callback read Status() = %v, want destroyed", name, seen)
		}
	}
}

func TestStatusConcurrentDestroy(t *testing.T) {
	for name, b := range ctRootBackends(t) {
		var calls atomic.Int32
		b.OnStatusChange(func(_, _ Status) { calls.Add(1) })
		cl := &ctCloser{}
		b.Track(cl)
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = b.Destroy(context.Background())
			}()
		}
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Errorf("%s: callbacks fired %d times, want 1", name, n)
		}
		if n := cl.n.Load(); n != 1 {
			t.Errorf("%s: closer closed %d times, want 1", name, n)
		}
	}
}

func TestStatusTrackedClosers(t *testing.T) {
	for name, b := range ctRootBackends(t) {
		var mu sync.Mutex
		var order []string
		c1 := &ctCloser{name: "c1", order: &order, mu: &mu}
		c2 := &ctCloser{name: "c2", order: &order, mu: &mu, err: errors.New("c2 failed")}
		c3 := &ctCloser{name: "c3", order: &order, mu: &mu}
		b.Track(c1)
		b.Track(c2)
		b.Track(nil) // ignored
		b.Track(c3)
		for _, c := range []*ctCloser{c1, c2, c3} {
			if c.n.Load() != 0 {
				t.Errorf("%s: %s closed before Destroy", name, c.name)
			}
		}
		err := b.Destroy(context.Background())
		if err == nil || !strings.Contains(err.Error(), "c2 failed") {
			t.Errorf("%s: Destroy = %v, want the closer's error", name, err)
		}
		if err := b.Destroy(context.Background()); err != nil {
			t.Errorf("%s: second Destroy = %v", name, err)
		}
		for _, c := range []*ctCloser{c1, c2, c3} {
			if n := c.n.Load(); n != 1 {
				t.Errorf("%s: %s closed %d times, want 1", name, c.name, n)
			}
		}
		if got := strings.Join(order, ","); got != "c3,c2,c1" {
			t.Errorf("%s: close order %s, want last registered first", name, got)
		}
		late := &ctCloser{}
		b.Track(late)
		if n := late.n.Load(); n != 1 {
			t.Errorf("%s: closer tracked after Destroy closed %d times, want 1 (at once)", name, n)
		}
		_ = b.Destroy(context.Background())
		if n := late.n.Load(); n != 1 {
			t.Errorf("%s: late closer closed %d times after another Destroy", name, n)
		}
	}
}

// TestStatusTrackDuringDestroy registers a closer while Destroy is busy
// closing the others: it must be closed too (by Destroy or at once), never
// dropped.
func TestStatusTrackDuringDestroy(t *testing.T) {
	for name, b := range ctRootBackends(t) {
		slow := &ctCloser{block: make(chan struct{}), entered: make(chan struct{})}
		b.Track(slow)
		done := make(chan error)
		go func() { done <- b.Destroy(context.Background()) }()
		<-slow.entered // Destroy is now closing
		late := &ctCloser{}
		b.Track(late)
		close(slow.block)
		<-done
		if n := late.n.Load(); n != 1 {
			t.Errorf("%s: closer tracked while Destroy was running closed %d times, want 1", name, n)
		}
	}
}

// ctOps lists every Backend operation; each returns the error it got.
func ctOps() map[string]func(ctx context.Context, b Backend) error {
	return map[string]func(ctx context.Context, b Backend) error{
		"Read":  func(ctx context.Context, b Backend) error { _, err := b.Read(ctx, "f.txt"); return err },
		"Write": func(ctx context.Context, b Backend) error { return b.Write(ctx, "f.txt", []byte("x")) },
		"Open": func(ctx context.Context, b Backend) error {
			rc, err := b.Open(ctx, "f.txt")
			if err == nil {
				rc.Close()
			}
			return err
		},
		"Create": func(ctx context.Context, b Backend) error {
			w, err := b.Create(ctx, "new.txt")
			if err == nil {
				return w.Close()
			}
			return err
		},
		"ReadDir":  func(ctx context.Context, b Backend) error { _, err := b.ReadDir(ctx, "."); return err },
		"Mkdir":    func(ctx context.Context, b Backend) error { return b.Mkdir(ctx, "d") },
		"Exists":   func(ctx context.Context, b Backend) error { _, err := b.Exists(ctx, "f.txt"); return err },
		"Stat":     func(ctx context.Context, b Backend) error { _, err := b.Stat(ctx, "f.txt"); return err },
		"Lstat":    func(ctx context.Context, b Backend) error { _, err := b.Lstat(ctx, "f.txt"); return err },
		"Remove":   func(ctx context.Context, b Backend) error { return b.Remove(ctx, "f.txt", RemoveOptions{}) },
		"Rename":   func(ctx context.Context, b Backend) error { return b.Rename(ctx, "f.txt", "g.txt") },
		"Touch":    func(ctx context.Context, b Backend) error { return b.Touch(ctx, "t.txt") },
		"RealPath": func(ctx context.Context, b Backend) error { _, err := b.RealPath(ctx, "f.txt"); return err },
		"Exec": func(ctx context.Context, b Backend) error {
			_, err := b.Exec(ctx, "echo hi", ExecOptions{})
			return err
		},
		"Scope": func(ctx context.Context, b Backend) error { _, err := b.Scope("sub", ScopeOptions{}); return err },
	}
}

// TestStatusOpsAfterDestroy checks that every operation fails with
// ErrDestroyed once the backend (or the scope, or an ancestor scope) is
// destroyed, and that nothing was touched.
func TestStatusOpsAfterDestroy(t *testing.T) {
	ctx := context.Background()
	type target struct {
		b       Backend
		destroy func()
		dir     string // host dir for Local, to check nothing was written
	}
	mk := map[string]func(t *testing.T) target{
		"local": func(t *testing.T) target {
			l := ctLocal(t, LocalConfig{})
			ctFill(t, l, map[string]string{"f.txt": "x"})
			return target{l, func() { l.Destroy(ctx) }, l.RootDir()}
		},
		"memory": func(t *testing.T) target {
			m := ctMemory(t, MemoryConfig{Initial: map[string][]byte{"f.txt": []byte("x")}})
			return target{b: m, destroy: func() { m.Destroy(ctx) }}
		},
		"local-scope/root-destroyed": func(t *testing.T) target {
			l := ctLocal(t, LocalConfig{})
			s := ctScope(t, l, "s")
			ctFill(t, s, map[string]string{"f.txt": "x"})
			return target{s, func() { l.Destroy(ctx) }, s.RootDir()}
		},
		"local-scope/scope-destroyed": func(t *testing.T) target {
			l := ctLocal(t, LocalConfig{})
			s := ctScope(t, l, "s")
			ctFill(t, s, map[string]string{"f.txt": "x"})
			return target{s, func() { s.Destroy(ctx) }, s.RootDir()}
		},
		"local-nested/parent-scope-destroyed": func(t *testing.T) target {
			l := ctLocal(t, LocalConfig{})
			s := ctScope(t, l, "s")
			n := ctScope(t, s, "n")
			ctFill(t, n, map[string]string{"f.txt": "x"})
			return target{n, func() { s.Destroy(ctx) }, n.RootDir()}
		},
		"memory-scope/root-destroyed": func(t *testing.T) target {
			m := ctMemory(t, MemoryConfig{})
			s := ctScope(t, m, "s")
			ctFill(t, s, map[string]string{"f.txt": "x"})
			return target{b: s, destroy: func() { m.Destroy(ctx) }}
		},
		"memory-scope/scope-destroyed": func(t *testing.T) target {
			m := ctMemory(t, MemoryConfig{})
			s := ctScope(t, m, "s")
			ctFill(t, s, map[string]string{"f.txt": "x"})
			return target{b: s, destroy: func() { s.Destroy(ctx) }}
		},
	}
	for name, make := range mk {
		t.Run(name, func(t *testing.T) {
			for op, fn := range ctOps() {
				tg := make(t)
				tg.destroy()
				if got := tg.b.Status(); got != StatusDestroyed {
					t.Errorf("status after destroy = %v", got)
				}
				err := fn(ctx, tg.b)
				if !errors.Is(err, ErrDestroyed) {
					t.Errorf("%s after destroy = %v, want ErrDestroyed", op, err)
				} else if CodeOf(err) != CodeDestroyed {
					t.Errorf("%s after destroy: code %q, want %q", op, CodeOf(err), CodeDestroyed)
				}
				if tg.dir != "" {
					ents, _ := os.ReadDir(tg.dir)
					if len(ents) != 1 || ents[0].Name() != "f.txt" {
						var names []string
						for _, e := range ents {
							names = append(names, e.Name())
						}
						t.Errorf("%s after destroy changed the workspace: %q", op, names)
					}
				}
			}
		})
	}
}

// TestStatusCreateCloseAfterDestroy: a writer created before Destroy and
// closed after it must fail and leave no temporary file behind.
func TestStatusCreateCloseAfterDestroy(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	ctFill(t, l, map[string]string{"f.txt": "old"})
	w, err := l.Create(ctx, "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "new"); err != nil {
		t.Fatal(err)
	}
	if err := l.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close after Destroy succeeded")
	}
	ents, _ := os.ReadDir(l.RootDir())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "f.txt" {
		t.Errorf("workspace after abandoned Create: %q, want only f.txt (no temporary file)", names)
	}
	if data, _ := os.ReadFile(l.RootDir() + "/f.txt"); string(data) != "old" {
		t.Errorf("f.txt = %q, want old content", data)
	}
}

func TestStatusScopeInheritsDynamically(t *testing.T) {
	ctx := context.Background()
	for name, b := range ctRootBackends(t) {
		s := ctScope(t, b, "a")
		n := ctScope(t, s, "b")
		var sub ctTransitions
		n.OnStatusChange(sub.fn) // subscribing on a scope subscribes to the root
		if n.Status() != StatusConnected || s.Status() != StatusConnected {
			t.Fatalf("%s: scopes not connected", name)
		}
		b.Destroy(ctx)
		if got := s.Status(); got != StatusDestroyed {
			t.Errorf("%s: scope status after root Destroy = %v", name, got)
		}
		if got := n.Status(); got != StatusDestroyed {
			t.Errorf("%s: nested scope status after root Destroy = %v", name, got)
		}
		if got := sub.list(); len(got) != 1 || got[0] != "connected->destroyed" {
			t.Errorf("%s: nested-scope subscriber saw %q", name, got)
		}
	}
}

func TestStatusScopeDestroy(t *testing.T) {
	ctx := context.Background()
	for name, b := range ctRootBackends(t) {
		ctFill(t, b, map[string]string{"root.txt": "r"})
		s := ctScope(t, b, "a")
		child := ctScope(t, s, "b")
		sib := ctScope(t, b, "c")
		owner := b.(scopeOwner)
		if n := owner.scopeSet().len(); n != 2 {
			t.Fatalf("%s: parent tracks %d scopes, want 2", name, n)
		}
		if err := s.Destroy(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Destroy(ctx); err != nil {
			t.Fatalf("%s: second scope Destroy: %v", name, err)
		}
		if n := owner.scopeSet().len(); n != 1 {
			t.Errorf("%s: parent tracks %d scopes after scope Destroy, want 1", name, n)
		}
		if b.Status() != StatusConnected || sib.Status() != StatusConnected {
			t.Errorf("%s: scope Destroy affected the parent or a sibling", name)
		}
		if s.Status() != StatusDestroyed || child.Status() != StatusDestroyed {
			t.Errorf("%s: scope/child status %v/%v, want destroyed", name, s.Status(), child.Status())
		}
		if _, err := b.Read(ctx, "root.txt"); err != nil {
			t.Errorf("%s: parent unusable after scope Destroy: %v", name, err)
		}
		if err := sib.Write(ctx, "x", []byte("1")); err != nil {
			t.Errorf("%s: sibling unusable after scope Destroy: %v", name, err)
		}
		if _, err := child.Read(ctx, "x"); !errors.Is(err, ErrDestroyed) {
			t.Errorf("%s: orphaned child Read = %v, want ErrDestroyed", name, err)
		}
	}
}

// TestStatusScopeDestroyFiresCallbacks: a scope's own status moves to
// destroyed when it is destroyed, so its subscribers must hear about it
// (callbacks fire on every status transition), exactly once.
func TestStatusScopeDestroyFiresCallbacks(t *testing.T) {
	ctx := context.Background()
	for name, b := range ctRootBackends(t) {
		s := ctScope(t, b, "a")
		var sub ctTransitions
		s.OnStatusChange(sub.fn)
		s.Destroy(ctx)
		if got := sub.list(); len(got) != 1 || got[0] != "connected->destroyed" {
			t.Errorf("%s: after scope Destroy the scope subscriber saw %q, want [connected->destroyed]", name, got)
		}
		b.Destroy(ctx)
		if got := sub.list(); len(got) > 1 {
			t.Errorf("%s: after root Destroy the destroyed scope's subscriber saw %q, want one transition", name, got)
		}
	}
}

func TestStatusScopeTrackLandsOnRoot(t *testing.T) {
	ctx := context.Background()
	for name, b := range ctRootBackends(t) {
		s := ctScope(t, b, "a")
		n := ctScope(t, s, "b")
		c := &ctCloser{}
		n.Track(c)
		n.Destroy(ctx)
		s.Destroy(ctx)
		if c.n.Load() != 0 {
			t.Errorf("%s: closer tracked on a scope closed by scope Destroy", name)
		}
		b.Destroy(ctx)
		if got := c.n.Load(); got != 1 {
			t.Errorf("%s: closer tracked on a nested scope closed %d times by root Destroy, want 1", name, got)
		}
	}
}

// TestStatusDestroyDropsMemoryData: a destroyed Memory releases its data and
// a missing key after re-creation is not found (no state shared between
// instances).
func TestStatusDestroyDropsMemoryData(t *testing.T) {
	ctx := context.Background()
	m := ctMemory(t, MemoryConfig{Initial: map[string][]byte{"k": []byte("v")}})
	m.Destroy(ctx)
	if n := len(m.store.files); n != 0 {
		t.Errorf("destroyed Memory still holds %d keys", n)
	}
	m2 := ctMemory(t, MemoryConfig{})
	if _, err := m2.Read(ctx, "k"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("new Memory sees old data: %v", err)
	}
}
