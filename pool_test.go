package agentbe

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memPool is a pool of Memory backends counting what it built.
func memPool(t *testing.T, cfg PoolConfig[MemoryConfig]) (*Pool[MemoryConfig], *atomic.Int32) {
	t.Helper()
	var built atomic.Int32
	if cfg.New == nil {
		cfg.New = func(ctx context.Context, c MemoryConfig) (Backend, error) {
			built.Add(1)
			time.Sleep(time.Millisecond) // widen the window for duplicate builds
			return NewMemory(c)
		}
	}
	p, err := NewPool(cfg)
	mustOK(t, err)
	t.Cleanup(func() { p.Close(context.Background()) })
	return p, &built
}

func TestPoolOneBackendPerKey(t *testing.T) {
	before := runtime.NumGoroutine()
	p, built := memPool(t, PoolConfig[MemoryConfig]{})
	ctx := context.Background()
	var wg sync.WaitGroup
	backends := make([]sync.Map, 10)
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				key := fmt.Sprint((g + i) % 10)
				l, err := p.Acquire(ctx, key, nil)
				if err != nil {
					t.Error(err)
					return
				}
				backends[(g+i)%10].Store(l.Backend, true)
				if err := p.Release(l); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if n := built.Load(); n != 10 {
		t.Errorf("built %d backends for 10 keys", n)
	}
	for i := range backends {
		n := 0
		backends[i].Range(func(any, any) bool { n++; return true })
		if n != 1 {
			t.Errorf("key %d had %d backends", i, n)
		}
	}
	if s := p.Stats(); s != (PoolStats{Total: 10, Active: 0, Idle: 10}) {
		t.Errorf("stats %+v", s)
	}
	mustOK(t, p.Close(ctx))
	if s := p.Stats(); s.Total != 0 {
		t.Errorf("after Close: %+v", s)
	}
	if _, err := p.Acquire(ctx, "k", nil); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func TestPoolLeases(t *testing.T) {
	ctx := context.Background()
	p, built := memPool(t, PoolConfig[MemoryConfig]{})
	a, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	b, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	if a.Backend != b.Backend {
		t.Fatal("same key, different backends")
	}
	if s := p.Stats(); s != (PoolStats{Total: 1, Active: 1}) {
		t.Errorf("stats %+v", s)
	}
	mustOK(t, p.Release(a))
	if err := p.Release(a); !errors.Is(err, ErrLeaseReleased) {
		t.Errorf("second release: %v", err)
	}
	if err := p.Release(&Lease{}); !errors.Is(err, ErrLeaseReleased) {
		t.Errorf("unknown lease: %v", err)
	}
	mustOK(t, p.Release(b))
	if s := p.Stats(); s != (PoolStats{Total: 1, Idle: 1}) {
		t.Errorf("stats %+v", s)
	}

	// Unkeyed: fresh each time, destroyed on release.
	u1, err := p.Acquire(ctx, "", nil)
	mustOK(t, err)
	u2, err := p.Acquire(ctx, "", nil)
	mustOK(t, err)
	if u1.Backend == u2.Backend || built.Load() != 3 {
		t.Fatal("unkeyed acquisitions shared a backend")
	}
	mustOK(t, p.Release(u1))
	if u1.Status() != StatusDestroyed {
		t.Error("unkeyed backend not destroyed on release")
	}
	mustOK(t, p.Release(u2))

	// A destroyed pooled backend is replaced.
	c, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	mustOK(t, c.Destroy(ctx))
	mustOK(t, p.Release(c))
	d, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	if d.Backend == c.Backend || d.Status() != StatusConnected {
		t.Error("destroyed backend handed out again")
	}
	mustOK(t, p.Release(d))
}

func TestPoolWithReleasesOnErrorAndPanic(t *testing.T) {
	ctx := context.Background()
	p, _ := memPool(t, PoolConfig[MemoryConfig]{})
	boom := errors.New("boom")
	if err := p.With(ctx, "k", nil, func(Backend) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("With: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic swallowed")
			}
		}()
		p.With(ctx, "k", nil, func(Backend) error { panic("x") })
	}()
	if s := p.Stats(); s.Active != 0 || s.Idle != 1 {
		t.Errorf("lease kept after error/panic: %+v", s)
	}
}

func TestPoolIdleSweepAndOverrides(t *testing.T) {
	ctx := context.Background()
	var got []MemoryConfig
	var mu sync.Mutex
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Defaults:      MemoryConfig{RootDir: "/default"},
		IdleTimeout:   20 * time.Millisecond,
		SweepInterval: 5 * time.Millisecond,
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
			return NewMemory(c)
		},
	})
	l, err := p.Acquire(ctx, "a", &MemoryConfig{RootDir: "/tenant-a"})
	mustOK(t, err)
	if l.RootDir() != "/tenant-a" {
		t.Errorf("override not applied: %q", l.RootDir())
	}
	l2, err := p.Acquire(ctx, "b", nil)
	mustOK(t, err)
	if l2.RootDir() != "/default" {
		t.Errorf("defaults not applied: %q", l2.RootDir())
	}
	time.Sleep(60 * time.Millisecond)
	if s := p.Stats(); s.Total != 2 {
		t.Errorf("held backends swept: %+v", s)
	}
	mustOK(t, p.Release(l))
	mustOK(t, p.Release(l2))
	waitFor(t, func() bool { return p.Stats().Total == 0 })
	if l.Status() != StatusDestroyed {
		t.Error("swept backend not destroyed")
	}
}

func TestMergeNonZero(t *testing.T) {
	type cfg struct {
		A string
		B int
		C map[string]string
		d int
	}
	got := mergeNonZero(cfg{A: "a", B: 1, C: map[string]string{"x": "1"}, d: 4}, cfg{B: 2, d: 9})
	if got.A != "a" || got.B != 2 || got.C["x"] != "1" || got.d != 4 {
		t.Errorf("%+v", got)
	}
	if mergeNonZero(3, 0) != 3 || mergeNonZero(3, 5) != 5 {
		t.Error("non-struct merge")
	}
}

func TestRendezvousMovesOnlyTheRemovedShare(t *testing.T) {
	nodes := []string{"a:1", "b:1", "c:1", "d:1", "e:1"}
	owner := map[string]string{}
	count := map[string]int{}
	for i := 0; i < 1000; i++ {
		k := fmt.Sprint("tenant-", i)
		owner[k] = rendezvous(k, nodes)
		count[owner[k]]++
	}
	for _, n := range nodes {
		if count[n] < 120 || count[n] > 280 {
			t.Errorf("node %s owns %d of 1000 keys", n, count[n])
		}
	}
	rest := []string{"a:1", "b:1", "d:1", "e:1"} // c removed
	for k, o := range owner {
		now := rendezvous(k, rest)
		if o != "c:1" && now != o {
			t.Fatalf("key %s moved from %s to %s though its node stayed", k, o, now)
		}
	}
	more := append(append([]string(nil), nodes...), "f:1")
	for k, o := range owner {
		if now := rendezvous(k, more); now != o && now != "f:1" {
			t.Fatalf("adding a node moved %s from %s to %s", k, o, now)
		}
	}
}

// TestPoolFailoverSkipsDeadShards: with Failover, the keys of a dead shard
// move to the live ones, and only they do.
func TestPoolFailoverSkipsDeadShards(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	dead := map[string]bool{}
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Failover:   true,
		Shards:     []string{"/s1", "/s2", "/s3"},
		Place:      func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		ShardRetry: time.Hour,
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			mu.Lock()
			defer mu.Unlock()
			if dead[c.RootDir] {
				return nil, errors.New("connection refused")
			}
			return NewMemory(c)
		},
	})
	owner := map[string]string{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprint("k", i)
		l, err := p.Acquire(ctx, k, nil)
		mustOK(t, err)
		owner[k] = l.RootDir()
		mustOK(t, p.Release(l))
	}
	victim := owner["k0"]
	mu.Lock()
	dead[victim] = true
	mu.Unlock()
	for k, o := range owner {
		l, err := p.Acquire(ctx, k, nil)
		mustOK(t, err)
		if o != victim && l.RootDir() != o {
			t.Fatalf("%s moved from a live shard %s to %s", k, o, l.RootDir())
		}
		if o == victim {
			// Its backend still works in memory; make it unusable as a
			// killed daemon's Remote would be (behind the pool's back: a
			// Lease.Destroy is no sign of a dead shard), then the next
			// acquire moves.
			mustOK(t, l.Backend.Destroy(ctx))
			mustOK(t, p.Release(l))
			l2, err := p.Acquire(ctx, k, nil)
			mustOK(t, err)
			if l2.RootDir() == victim {
				t.Fatalf("%s stayed on the dead shard", k)
			}
			mustOK(t, p.Release(l2))
			continue
		}
		mustOK(t, p.Release(l))
	}
}

// TestPoolFailoverBuildFailureMovesKey: with Failover, the first
// acquisition of a key whose daemon is down fails fast; the next one lands
// on a live daemon.
func TestPoolFailoverBuildFailureMovesKey(t *testing.T) {
	ctx := context.Background()
	shards := []string{"/s1", "/s2", "/s3"}
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Failover: true,
		Shards:   shards,
		Place:    func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			if c.RootDir == "/s2" {
				return nil, errors.New("connection refused")
			}
			return NewMemory(c)
		},
	})
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("t", i); rendezvous(k, shards) == "/s2" {
			key = k
		}
	}
	if _, err := p.Acquire(ctx, key, nil); err == nil {
		t.Fatal("acquire on a dead shard succeeded")
	}
	l, err := p.Acquire(ctx, key, nil)
	mustOK(t, err)
	if l.RootDir() == "/s2" {
		t.Fatal("key stayed on the dead shard")
	}
	mustOK(t, p.Release(l))
}

// flaky is a Memory whose status a test can flip to disconnected without
// destroying it, as a Remote whose daemon went away.
type flaky struct {
	*Memory
	down atomic.Bool
}

func (f *flaky) Status() Status {
	if f.down.Load() {
		return StatusDisconnected
	}
	return f.Memory.Status()
}

// TestPoolCancelledBuildIsNoDeadShard: an Acquire whose caller gave up
// while the backend was being built says nothing about the shard: the key
// stays where rendezvous puts it. A shard whose daemon is full keeps its
// keys too.
func TestPoolCancelledBuildIsNoDeadShard(t *testing.T) {
	shards := []string{"/s1", "/s2", "/s3"}
	var block, full atomic.Bool
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Shards:     shards,
		Place:      func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		ShardRetry: time.Hour,
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			if block.Load() {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			if full.Load() {
				return nil, &Error{Code: CodeDaemonFull, Op: "connect", Err: ErrDaemonFull}
			}
			return NewMemory(c)
		},
	})
	key := "tenant"
	home := rendezvous(key, shards)
	ctx, cancel := context.WithCancel(context.Background())
	block.Store(true)
	go func() { // cancel once the build is under way
		for p.Stats().Total == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := p.Acquire(ctx, key, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	block.Store(false)
	full.Store(true)
	if _, err := p.Acquire(context.Background(), key, nil); !errors.Is(err, ErrDaemonFull) {
		t.Fatalf("acquire on a full shard: %v", err)
	}
	full.Store(false)
	l, err := p.Acquire(context.Background(), key, nil)
	mustOK(t, err)
	if l.RootDir() != home {
		t.Errorf("%s moved from %s to %s", key, home, l.RootDir())
	}
	// Lease.Destroy is no sign of a dead shard either.
	mustOK(t, l.Destroy(context.Background()))
	l, err = p.Acquire(context.Background(), key, nil)
	mustOK(t, err)
	if l.RootDir() != home {
		t.Errorf("after Lease.Destroy %s moved from %s to %s", key, home, l.RootDir())
	}
	mustOK(t, p.Release(l))
}

// TestPoolCloseDestroysShadowedBackends: Close destroys a backend taken out
// of the pool but still leased, and its later release is harmless.
func TestPoolCloseDestroysShadowedBackends(t *testing.T) {
	ctx := context.Background()
	p, _ := memPool(t, PoolConfig[MemoryConfig]{})
	l1, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	l2, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	mustOK(t, l1.Destroy(ctx))
	if s := l2.Status(); s != StatusConnected {
		t.Fatalf("held backend: %v", s)
	}
	mustOK(t, p.Close(ctx))
	if s := l2.Status(); s != StatusDestroyed {
		t.Errorf("shadowed backend after Close: %v", s)
	}
	mustOK(t, p.Release(l2))
	if s := p.Stats(); s != (PoolStats{}) {
		t.Errorf("stats after Close: %+v", s)
	}
	if err := p.Release(&Lease{}); !errors.Is(err, ErrLeaseReleased) {
		t.Errorf("foreign lease: %v", err)
	}
	if err := (&Lease{}).Destroy(ctx); !errors.Is(err, ErrLeaseReleased) {
		t.Errorf("Destroy of a lease of no pool: %v", err)
	}
	q, _ := memPool(t, PoolConfig[MemoryConfig]{})
	lq, err := q.Acquire(ctx, "k", nil)
	mustOK(t, err)
	if err := p.Release(lq); !errors.Is(err, ErrLeaseReleased) {
		t.Errorf("release of another pool's lease: %v", err)
	}
	mustOK(t, q.Release(lq))
}

// TestPoolFaultsNeverDestroyHeldBackends: goroutines acquire, use and
// release keys while others mark backends down (as a lost daemon does),
// destroy their leases and sweep. No operation under a lease ever finds
// its backend destroyed; once all is released and the pool closed, every
// backend built is destroyed and no goroutine is left.
func TestPoolFaultsNeverDestroyHeldBackends(t *testing.T) {
	before := runtime.NumGoroutine()
	var mu sync.Mutex
	var built []*flaky
	p, err := NewPool(PoolConfig[MemoryConfig]{
		SweepInterval: time.Millisecond,
		IdleTimeout:   time.Millisecond,
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			m, err := NewMemory(c)
			if err != nil {
				return nil, err
			}
			f := &flaky{Memory: m}
			mu.Lock()
			built = append(built, f)
			mu.Unlock()
			return f, nil
		},
	})
	mustOK(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				key := fmt.Sprint("k", (g+i)%4)
				l, err := p.Acquire(ctx, key, nil)
				if err != nil {
					t.Error(err)
					return
				}
				switch (g*7 + i) % 5 {
				case 0:
					l.Backend.(*flaky).down.Store(true)
				case 1:
					p.Sweep()
				}
				if err := l.Write(ctx, "f", []byte("x")); err != nil {
					t.Errorf("write under a lease: %v", err)
				}
				if (g+i)%6 == 0 {
					err = l.Destroy(ctx)
				} else {
					err = p.Release(l)
				}
				if err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if s := p.Stats(); s.Active != 0 {
		t.Errorf("stats after every release: %+v", s)
	}
	mustOK(t, p.Close(ctx))
	mu.Lock()
	for i, f := range built {
		if f.Memory.Status() != StatusDestroyed {
			t.Errorf("backend %d of %d not destroyed", i, len(built))
		}
	}
	mu.Unlock()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

// TestPoolBuildPanicFreesKey: a New (or Merge, Place) that panics passes
// the panic to its caller and leaves the key free: neither the goroutines
// waiting for that build nor later ones hang on it.
func TestPoolBuildPanicFreesKey(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			if calls.Add(1) == 1 {
				<-release
				panic("boom")
			}
			return NewMemory(c)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		p.Acquire(ctx, "k", nil)
	}()
	for p.Stats().Total == 0 { // the build is under way
		time.Sleep(time.Millisecond)
	}
	waiter := make(chan error, 1)
	go func() {
		l, err := p.Acquire(ctx, "k", nil)
		if err == nil {
			err = p.Release(l)
		}
		waiter <- err
	}()
	close(release)
	if r := <-panicked; r != "boom" {
		t.Errorf("recovered %v", r)
	}
	mustOK(t, <-waiter)
	l, err := p.Acquire(ctx, "k", nil)
	mustOK(t, err)
	mustOK(t, p.Release(l))
	if s := p.Stats(); s != (PoolStats{Total: 1, Idle: 1}) {
		t.Errorf("stats %+v", s)
	}
}
