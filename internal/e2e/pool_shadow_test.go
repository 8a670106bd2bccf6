package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

func remoteOwner(l *agentbe.Lease) string {
	r := l.Backend.(*agentbe.Remote)
	return fmt.Sprint(r.Host(), ":", r.Port())
}

// TestPoolReplacesLeasedBackendWithoutDestroyingIt: a daemon restarts under
// a held lease; another Acquire of the key gets a new backend, and the
// holder's Remote is not destroyed under it: it reconnects on its next
// operation, Stats counts it until it is released, then it is destroyed.
func TestPoolReplacesLeasedBackendWithoutDestroyingIt(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	before := runtime.NumGoroutine()
	p := remotePool(t, []*testDaemon{d})
	l1, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	must(t, l1.Write(ctx, "f", []byte("x")))
	d.kill()
	d.start()
	eventually(t, "the Remote sees the restart", func() bool { return l1.Status() != agentbe.StatusConnected })
	l2, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	if l2.Backend == l1.Backend {
		t.Fatal("a disconnected backend was handed out again")
	}
	if s := p.Stats(); s != (agentbe.PoolStats{Total: 2, Active: 2}) {
		t.Errorf("stats with the replaced backend still held: %+v", s)
	}
	if _, err := l1.Read(ctx, "f"); err != nil {
		t.Fatalf("the holder of the replaced backend: %v", err)
	}
	must(t, p.Release(l1))
	if s := l1.Status(); s != agentbe.StatusDestroyed {
		t.Errorf("replaced backend after its last release: %v", s)
	}
	if s := p.Stats(); s != (agentbe.PoolStats{Total: 1, Active: 1}) {
		t.Errorf("stats after the release: %+v", s)
	}
	if _, err := l2.Read(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	must(t, p.Release(l2))
	must(t, p.Close(ctx))
	checkGoroutinesBack(t, before, 5)
}

// TestPoolSweepMarksDeadDaemonDown: with Failover, Sweep removing the
// backend of a dead daemon takes the daemon out of the rendezvous as
// Acquire does, so the key's next Acquire lands on a live daemon instead of
// failing once.
func TestPoolSweepMarksDeadDaemonDown(t *testing.T) {
	ctx := context.Background()
	a, b := startDaemon(t, ""), startDaemon(t, "")
	b.kill()
	b.root = a.root
	b.start()
	p := failoverPool(t, []*testDaemon{a, b})
	var onB *agentbe.Lease
	key := ""
	for i := 0; key == ""; i++ {
		k := fmt.Sprint("t", i)
		l, err := p.Acquire(ctx, k, nil)
		must(t, err)
		if remoteOwner(l) == b.addr {
			key, onB = k, l
		}
		must(t, p.Release(l))
	}
	b.kill()
	eventually(t, "the Remote sees its daemon die", func() bool { return onB.Status() != agentbe.StatusConnected })
	if n := p.Sweep(); n != 1 {
		t.Errorf("Sweep removed %d backends", n)
	}
	if s := onB.Status(); s != agentbe.StatusDestroyed {
		t.Errorf("swept backend: %v", s)
	}
	l, err := p.Acquire(ctx, key, nil)
	if err != nil {
		t.Fatalf("acquire after the sweep: %v", err)
	}
	if o := remoteOwner(l); o != a.addr {
		t.Errorf("%s went to %s", key, o)
	}
	must(t, p.Release(l))
}

// TestPoolSweepShadowsLeasedDeadBackend: Sweep also takes a dead backend
// that is still leased out of the pool (as Acquire would), without
// destroying it under its holder.
func TestPoolSweepShadowsLeasedDeadBackend(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	p := remotePool(t, []*testDaemon{d})
	l1, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	d.kill()
	d.start()
	eventually(t, "the Remote sees the restart", func() bool { return l1.Status() != agentbe.StatusConnected })
	if n := p.Sweep(); n != 1 {
		t.Errorf("Sweep removed %d backends", n)
	}
	if _, err := l1.Exists(ctx, "f"); err != nil {
		t.Fatalf("holder after the sweep: %v", err)
	}
	l2, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	if l2.Backend == l1.Backend {
		t.Error("swept backend handed out again")
	}
	must(t, p.Release(l1))
	must(t, p.Release(l2))
	if s := l1.Status(); s != agentbe.StatusDestroyed {
		t.Errorf("swept backend after its release: %v", s)
	}
}

// TestPoolLeaseDestroyShadows: Lease.Destroy takes the backend out of the
// pool and ends the lease; other holders keep using it until they release
// it, then it is destroyed. The next Acquire builds a new one.
func TestPoolLeaseDestroyShadows(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	before := runtime.NumGoroutine()
	p := remotePool(t, []*testDaemon{d})
	l1, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	l2, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	old := l2.Backend
	must(t, l1.Destroy(ctx))
	if err := l2.Write(ctx, "f", []byte("x")); err != nil {
		t.Fatalf("another holder after Lease.Destroy: %v", err)
	}
	if s := old.Status(); s != agentbe.StatusConnected {
		t.Errorf("backend destroyed while held: %v", s)
	}
	l3, err := p.Acquire(ctx, "k", nil)
	must(t, err)
	if l3.Backend == old {
		t.Fatal("a destroyed lease's backend was handed out again")
	}
	if s := p.Stats(); s != (agentbe.PoolStats{Total: 2, Active: 2}) {
		t.Errorf("stats %+v", s)
	}
	must(t, l1.Destroy(ctx)) // idempotent
	must(t, p.Release(l1))   // the lease ended with Destroy
	must(t, p.Release(l2))
	if s := old.Status(); s != agentbe.StatusDestroyed {
		t.Errorf("backend after its last lease: %v", s)
	}
	if err := l2.Destroy(ctx); !errors.Is(err, agentbe.ErrLeaseReleased) {
		t.Errorf("Destroy of a released lease: %v", err)
	}
	if _, err := l3.Read(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	must(t, l3.Destroy(ctx)) // the only holder: destroyed at once
	if s := l3.Status(); s != agentbe.StatusDestroyed {
		t.Errorf("backend of the last lease after Destroy: %v", s)
	}
	if s := p.Stats(); s != (agentbe.PoolStats{}) {
		t.Errorf("stats %+v", s)
	}
	must(t, p.Close(ctx))
	checkGoroutinesBack(t, before, 5)
}
