package e2e_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	agentbe "github.com/agentbe/agent-backend"
)

// remotePool spreads keys over the daemons' addresses, sticky: each key is
// served by its own daemon only. Each shard's Remote pins that daemon's
// host key and works in its workspace.
func remotePool(t *testing.T, daemons []*testDaemon) *agentbe.Pool[agentbe.RemoteConfig] {
	return newRemotePool(t, daemons, nil)
}

// failoverPool is remotePool with PoolConfig.Failover: a down daemon's keys
// move to the others.
func failoverPool(t *testing.T, daemons []*testDaemon) *agentbe.Pool[agentbe.RemoteConfig] {
	return newRemotePool(t, daemons, func(c *agentbe.PoolConfig[agentbe.RemoteConfig]) { c.Failover = true })
}

func newRemotePool(t *testing.T, daemons []*testDaemon, mod func(*agentbe.PoolConfig[agentbe.RemoteConfig])) *agentbe.Pool[agentbe.RemoteConfig] {
	t.Helper()
	shards := make([]string, len(daemons))
	byAddr := map[string]*testDaemon{}
	keys := map[string]ssh.HostKeyCallback{}
	for i, d := range daemons {
		shards[i] = d.addr
		byAddr[d.addr] = d
		keys[d.addr] = d.pinned(t)
	}
	cfg := agentbe.PoolConfig[agentbe.RemoteConfig]{
		Defaults: agentbe.RemoteConfig{KeepaliveInterval: -1, OperationTimeout: 60 * time.Second,
			Reconnect: agentbe.ReconnectConfig{Disabled: true}},
		Shards: shards,
		Place: func(c agentbe.RemoteConfig, shard string) agentbe.RemoteConfig {
			c.Host, c.Port = splitHostPort(shard)
			c.HostKeyCallback = keys[shard]
			c.RootDir = byAddr[shard].root
			return c
		},
		New: func(ctx context.Context, c agentbe.RemoteConfig) (agentbe.Backend, error) {
			r, err := agentbe.NewRemote(c)
			if err != nil {
				return nil, err
			}
			if err := r.Connect(ctx); err != nil {
				r.Destroy(ctx)
				return nil, err
			}
			return r, nil
		},
		ShardRetry: time.Minute,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := agentbe.NewPool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// TestPoolFailoverAcrossDaemons: with Failover, 300 keys over three real
// daemons; one daemon dies; only its keys move, their operations fail fast
// once, then work on the new owner. (The daemons share one workspace here:
// a moved key's backend starts wherever it lands.)
func TestPoolFailoverAcrossDaemons(t *testing.T) {
	ctx := context.Background()
	daemons := startDaemons(t, 3)
	// One root path for all: each daemon's workspace is mounted at it in
	// production; here the Remote's RootDir must be the daemon's own.
	for _, d := range daemons[1:] {
		d.kill()
		d.root = daemons[0].root
		d.start()
	}
	before := runtime.NumGoroutine()
	p := failoverPool(t, daemons)
	owner := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := 0; i < 300; i++ {
		key := fmt.Sprint("tenant-", i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
				r := b.(*agentbe.Remote)
				mu.Lock()
				owner[key] = fmt.Sprint(r.Host(), ":", r.Port())
				mu.Unlock()
				return b.Write(ctx, "keys/"+key, []byte(key))
			})
			if err != nil {
				t.Error(key, err)
			}
		}()
	}
	wg.Wait()
	count := map[string]int{}
	for _, o := range owner {
		count[o]++
	}
	for _, d := range daemons {
		if c := count[d.addr]; c < 60 {
			t.Errorf("daemon %s got %d of 300 keys", d.addr, c)
		}
	}
	victim := daemons[1]
	victim.kill()
	moved, failedFast := 0, 0
	for key, o := range owner {
		start := time.Now()
		err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
			_, err := b.Read(ctx, "keys/"+key)
			return err
		})
		if o != victim.addr {
			if err != nil {
				t.Fatalf("%s on a live daemon failed: %v", key, err)
			}
			continue
		}
		if err != nil {
			if time.Since(start) > time.Second {
				t.Errorf("%s failed slowly (%v)", key, time.Since(start))
			}
			failedFast++
		}
		err = p.With(ctx, key, nil, func(b agentbe.Backend) error {
			r := b.(*agentbe.Remote)
			if fmt.Sprint(r.Host(), ":", r.Port()) == victim.addr {
				return fmt.Errorf("still routed to the dead daemon")
			}
			return b.Write(ctx, "keys/"+key, []byte(key))
		})
		if err != nil {
			t.Fatalf("%s after the move: %v", key, err)
		}
		moved++
	}
	if moved != count[victim.addr] || moved == 0 {
		t.Errorf("moved %d keys, the dead daemon owned %d", moved, count[victim.addr])
	}
	t.Logf("keys per daemon %v; %d moved, %d failed once", count, moved, failedFast)
	if err := p.Close(ctx); err != nil {
		t.Error(err)
	}
	checkGoroutinesBack(t, before, 10)
}

// checkGoroutinesBack waits up to 10 s for the goroutine count to fall back
// to at most before+slack, and reports an error if it does not.
func checkGoroutinesBack(t *testing.T, before, slack int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+slack && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+slack {
		t.Errorf("goroutines %d after Close, %d before", n, before)
	}
}

// TestPoolRemoteNoDuplicates: 100 goroutines on 10 keys build exactly 10
// Remotes, i.e. 10 connections reach the daemon; Close leaves no goroutine.
func TestPoolRemoteNoDuplicates(t *testing.T) {
	ctx := context.Background()
	d := startDaemon(t, "")
	before := runtime.NumGoroutine()
	p := remotePool(t, []*testDaemon{d})
	var wg sync.WaitGroup
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				key := fmt.Sprint("k", (g+i)%10)
				if err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
					_, err := b.Exists(ctx, "x")
					return err
				}); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	d.mu.Lock()
	conns := len(d.conns)
	d.mu.Unlock()
	if conns != 10 {
		t.Errorf("%d connections reached the daemon for 10 keys", conns)
	}
	if s := p.Stats(); s.Total != 10 || s.Active != 0 {
		t.Errorf("stats %+v", s)
	}
	must(t, p.Close(ctx))
	checkGoroutinesBack(t, before, 5)
}

// TestRemoteStatusBeforeError: when a file operation fails because the
// daemon died, the status is no longer connected by the time the error is
// returned: a Pool routes the next operation by it (this raced with the
// link's watcher and sent keys back to a dead daemon).
func TestRemoteStatusBeforeError(t *testing.T) {
	ctx := context.Background()
	for round := 0; round < 20; round++ {
		d := startDaemon(t, "")
		r := d.remote(t, func(c *agentbe.RemoteConfig) {
			c.KeepaliveInterval = -1
			c.Reconnect = agentbe.ReconnectConfig{Disabled: true}
		})
		must(t, r.Write(ctx, "f", []byte("x")))
		d.kill()
		if _, err := r.Read(ctx, "f"); err == nil {
			t.Fatal("read from a dead daemon")
		}
		if s := r.Status(); s == agentbe.StatusConnected {
			t.Fatalf("round %d: status %v right after the failure", round, s)
		}
	}
}
