package agentbe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPoolStickyRefusesDownShard: by default a key whose shard is down is
// refused with an error naming the shard (CONNECTION_CLOSED), its backend
// is never built on another shard, the other shards' keys are served, and
// the key is served by its own shard again once that shard is back.
func TestPoolStickyRefusesDownShard(t *testing.T) {
	ctx := context.Background()
	shards := []string{"/s1", "/s2", "/s3"}
	var mu sync.Mutex
	dead := map[string]bool{}
	builds := map[string][]string{} // shard → RootDirs of the backends built there
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Shards:     shards,
		Place:      func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		ShardRetry: 50 * time.Millisecond,
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			mu.Lock()
			defer mu.Unlock()
			builds[c.RootDir] = append(builds[c.RootDir], c.RootDir)
			if dead[c.RootDir] {
				return nil, errors.New("connection refused")
			}
			return NewMemory(c)
		},
	})
	owner := map[string]string{}
	held := map[string]*Lease{}
	for i := 0; i < 300; i++ {
		k := fmt.Sprint("k", i)
		l, err := p.Acquire(ctx, k, nil)
		mustOK(t, err)
		if l.RootDir() != rendezvous(k, shards) {
			t.Fatalf("%s on %s, rendezvous says %s", k, l.RootDir(), rendezvous(k, shards))
		}
		owner[k] = l.RootDir()
		held[k] = l
	}
	mu.Lock()
	dead["/s2"] = true
	before := map[string]int{}
	for s, b := range builds {
		before[s] = len(b)
	}
	mu.Unlock()
	refused := 0
	for k, o := range owner {
		l := held[k]
		if o != "/s2" {
			mustOK(t, p.Release(l))
			continue
		}
		// Its backend dies as a killed daemon's Remote would.
		mustOK(t, l.Backend.Destroy(ctx))
		mustOK(t, p.Release(l))
		_, err := p.Acquire(ctx, k, nil)
		checkShardDown(t, err, k, "/s2")
		refused++
	}
	if refused == 0 {
		t.Fatal("no key on /s2")
	}
	mu.Lock()
	for _, s := range []string{"/s1", "/s3"} {
		if len(builds[s]) != before[s] {
			t.Errorf("%d backends built on %s while /s2 was down", len(builds[s])-before[s], s)
		}
	}
	// The first refusal tried /s2; the others failed fast without dialling.
	if n := len(builds["/s2"]) - before["/s2"]; n != 1 {
		t.Errorf("%d builds on the down shard for %d refusals", n, refused)
	}
	mu.Unlock()
	for k, o := range owner {
		if o == "/s2" {
			continue
		}
		l, err := p.Acquire(ctx, k, nil)
		mustOK(t, err)
		if l.RootDir() != o {
			t.Errorf("%s moved from %s to %s", k, o, l.RootDir())
		}
		mustOK(t, p.Release(l))
	}
	// /s2 comes back: once ShardRetry has passed its keys are served there.
	mu.Lock()
	dead["/s2"] = false
	mu.Unlock()
	for k, o := range owner {
		if o != "/s2" {
			continue
		}
		var l *Lease
		waitFor(t, func() bool {
			var err error
			l, err = p.Acquire(ctx, k, nil)
			if err != nil && !errors.Is(err, ErrConnectionClosed) {
				t.Fatalf("%s: %v", k, err)
			}
			return err == nil
		})
		if l.RootDir() != "/s2" {
			t.Errorf("%s came back on %s", k, l.RootDir())
		}
		mustOK(t, p.Release(l))
	}
}

// checkShardDown asserts err is Acquire's refusal of key because shard is
// down.
func checkShardDown(t *testing.T, err error, key, shard string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: acquired while its shard %s is down", key, shard)
	}
	if !errors.Is(err, ErrConnectionClosed) || CodeOf(err) != CodeConnectionClosed {
		t.Errorf("%s: %v (code %q), want CONNECTION_CLOSED", key, err, CodeOf(err))
	}
	var se *ShardError
	if !errors.As(err, &se) || se.Shard != shard || se.Key != key || !se.Down {
		t.Errorf("%s: no ShardError naming %s: %#v", key, shard, se)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("shard %q is down", shard)) {
		t.Errorf("%s: the message does not name the shard: %v", key, err)
	}
}

// TestPoolStickyDeadBackendIsNoDownShard: in a sticky pool, a pooled
// backend that lost its connection (swept or replaced on Acquire) does not
// take its shard out of service: the next Acquire builds on the same shard.
func TestPoolStickyDeadBackendIsNoDownShard(t *testing.T) {
	ctx := context.Background()
	shards := []string{"/s1", "/s2"}
	var mu sync.Mutex
	var built []*flaky
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Shards:     shards,
		Place:      func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		ShardRetry: time.Hour,
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
	for round, viaSweep := range []bool{true, false} {
		l, err := p.Acquire(ctx, "tenant", nil)
		mustOK(t, err)
		mustOK(t, p.Release(l))
		mu.Lock()
		built[len(built)-1].down.Store(true)
		mu.Unlock()
		if viaSweep && p.Sweep() != 1 {
			t.Fatal("Sweep left the dead backend")
		}
		l, err = p.Acquire(ctx, "tenant", nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if l.RootDir() != rendezvous("tenant", shards) {
			t.Errorf("moved to %s", l.RootDir())
		}
		mustOK(t, p.Release(l))
	}
}

// TestPoolStickyFullShardKeepsCode: a full daemon's refusal names the shard
// and keeps DAEMON_FULL; it is not a down shard.
func TestPoolStickyFullShardKeepsCode(t *testing.T) {
	ctx := context.Background()
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Shards: []string{"/s1", "/s2"},
		Place:  func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			return nil, &Error{Code: CodeDaemonFull, Op: "connect", Err: ErrDaemonFull}
		},
	})
	_, err := p.Acquire(ctx, "tenant", nil)
	var se *ShardError
	if !errors.Is(err, ErrDaemonFull) || CodeOf(err) != CodeDaemonFull || errors.Is(err, ErrConnectionClosed) {
		t.Fatalf("%v (code %q)", err, CodeOf(err))
	}
	if !errors.As(err, &se) || se.Down || se.Shard != rendezvous("tenant", []string{"/s1", "/s2"}) {
		t.Errorf("shard error %#v", se)
	}
}

// TestPoolShardRetryDefaults: a sticky pool retries a down shard after 5 s
// by default, a failover pool after 30 s.
func TestPoolShardRetryDefaults(t *testing.T) {
	for _, tc := range []struct {
		failover bool
		want     time.Duration
	}{{false, 5 * time.Second}, {true, 30 * time.Second}} {
		p, _ := memPool(t, PoolConfig[MemoryConfig]{Failover: tc.failover})
		if p.cfg.ShardRetry != tc.want {
			t.Errorf("failover %v: ShardRetry %v", tc.failover, p.cfg.ShardRetry)
		}
	}
}

// TestPoolNextShardsRefusesMovingKeys: with NextShards, the keys whose
// shard changes are refused (CONNECTION_CLOSED, a ShardError with Moving)
// without building anything, and the others are served by their shard.
func TestPoolNextShardsRefusesMovingKeys(t *testing.T) {
	ctx := context.Background()
	from := []string{"/s1", "/s2", "/s3"}
	to := append(append([]string(nil), from...), "/s4")
	var mu sync.Mutex
	built := map[string]int{}
	p, _ := memPool(t, PoolConfig[MemoryConfig]{
		Shards:     from,
		NextShards: to,
		Place:      func(c MemoryConfig, shard string) MemoryConfig { c.RootDir = shard; return c },
		New: func(ctx context.Context, c MemoryConfig) (Backend, error) {
			mu.Lock()
			built[c.RootDir]++
			mu.Unlock()
			return NewMemory(c)
		},
	})
	moving := 0
	for i := 0; i < 200; i++ {
		k := fmt.Sprint("k", i)
		l, err := p.Acquire(ctx, k, nil)
		if rendezvous(k, from) == rendezvous(k, to) {
			mustOK(t, err)
			if l.RootDir() != rendezvous(k, from) {
				t.Errorf("%s on %s", k, l.RootDir())
			}
			mustOK(t, p.Release(l))
			continue
		}
		moving++
		var se *ShardError
		if !errors.Is(err, ErrTenantMoving) || !errors.Is(err, ErrConnectionClosed) || CodeOf(err) != CodeConnectionClosed ||
			!errors.As(err, &se) || !se.Moving || se.Shard != rendezvous(k, from) || !strings.Contains(err.Error(), "/s4") {
			t.Errorf("%s: %v", k, err)
		}
	}
	if moving == 0 || built["/s4"] != 0 || built["/s1"]+built["/s2"]+built["/s3"] != 200-moving {
		t.Errorf("%d moving keys; built %v", moving, built)
	}
	if _, err := NewPool(PoolConfig[MemoryConfig]{New: p.cfg.New, NextShards: to}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NextShards without Shards: %v", err)
	}
}
