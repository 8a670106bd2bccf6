package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

// tenantFile is where the sticky tests keep a tenant's file: one directory
// per tenant under tenants/, the layout the migration tool expects.
func tenantFile(key string) string { return "tenants/" + key + "/notes.txt" }

// stickySetup starts two daemons, each with its own workspace (as replicas
// with their own volumes), and writes one file for each of 40 tenants
// through a pool made by mk. It returns the daemons and each key's owner.
func stickySetup(t *testing.T, mk func(*testing.T, []*testDaemon) *agentbe.Pool[agentbe.RemoteConfig]) ([]*testDaemon, *agentbe.Pool[agentbe.RemoteConfig], map[string]string) {
	t.Helper()
	ctx := context.Background()
	daemons := []*testDaemon{startDaemon(t, ""), startDaemon(t, "")}
	p := mk(t, daemons)
	owner := map[string]string{}
	for i := 0; i < 40; i++ {
		key := fmt.Sprint("tenant-", i)
		err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
			owner[key] = remoteAddr(b)
			return b.Write(ctx, tenantFile(key), []byte("hello "+key))
		})
		must(t, err)
		if owner[key] != agentbe.ShardFor(key, []string{daemons[0].addr, daemons[1].addr}) {
			t.Fatalf("%s on %s, not on its rendezvous shard", key, owner[key])
		}
	}
	return daemons, p, owner
}

func remoteAddr(b agentbe.Backend) string {
	r := b.(*agentbe.Remote)
	return fmt.Sprint(r.Host(), ":", r.Port())
}

// TestPoolStickyDownDaemon: with one of two daemons down, its tenants are
// refused with an error naming it while the other daemon's tenants work;
// no tenant gets a workspace on the other daemon (its files never split);
// once the daemon is back its tenants find their files.
func TestPoolStickyDownDaemon(t *testing.T) {
	ctx := context.Background()
	daemons, p, owner := stickySetup(t, func(t *testing.T, d []*testDaemon) *agentbe.Pool[agentbe.RemoteConfig] {
		return newRemotePool(t, d, func(c *agentbe.PoolConfig[agentbe.RemoteConfig]) { c.ShardRetry = 100 * time.Millisecond })
	})
	victim, other := daemons[1], daemons[0]
	victim.kill()
	refused := 0
	for key, o := range owner {
		// The first try may get the pooled Remote of the dead daemon, whose
		// read fails; the next ones are the pool's refusals (the first dials,
		// the second fails fast).
		for try := 0; try < 3; try++ {
			err := p.With(ctx, key, nil, func(b agentbe.Backend) error {
				if remoteAddr(b) != o {
					return fmt.Errorf("served by %s, its shard is %s", remoteAddr(b), o)
				}
				got, err := b.Read(ctx, tenantFile(key))
				if err == nil && string(got) != "hello "+key {
					err = fmt.Errorf("read %q", got)
				}
				return err
			})
			switch {
			case o == other.addr && err != nil:
				t.Fatalf("%s on the live daemon: %v", key, err)
			case o == victim.addr && err == nil:
				t.Fatalf("%s served while its daemon is down", key)
			case o == victim.addr && try == 0:
				if !errors.Is(err, agentbe.ErrConnectionClosed) {
					t.Fatalf("%s: %v", key, err)
				}
			case o == victim.addr:
				var se *agentbe.ShardError
				if !errors.Is(err, agentbe.ErrConnectionClosed) || agentbe.CodeOf(err) != agentbe.CodeConnectionClosed ||
					!errors.As(err, &se) || se.Shard != victim.addr || !strings.Contains(err.Error(), victim.addr) {
					t.Fatalf("%s: %v (code %s), want CONNECTION_CLOSED naming %s", key, err, agentbe.CodeOf(err), victim.addr)
				}
				refused++
			}
		}
	}
	if refused == 0 {
		t.Fatal("no tenant on the killed daemon")
	}
	checkNoSplit(t, daemons, owner)
	victim.start()
	for key, o := range owner {
		if o != victim.addr {
			continue
		}
		var got []byte
		eventually(t, key+" served again", func() bool {
			return p.With(ctx, key, nil, func(b agentbe.Backend) error {
				var err error
				got, err = b.Read(ctx, tenantFile(key))
				return err
			}) == nil
		})
		if string(got) != "hello "+key {
			t.Errorf("%s read %q", key, got)
		}
	}
	checkNoSplit(t, daemons, owner)
}

// checkNoSplit asserts every tenant's directory exists on its owner's disk
// and on no other.
func checkNoSplit(t *testing.T, daemons []*testDaemon, owner map[string]string) {
	t.Helper()
	for key, o := range owner {
		for _, d := range daemons {
			_, err := os.Lstat(filepath.Join(d.root, "tenants", key))
			switch {
			case d.addr == o && err != nil:
				t.Errorf("%s: its directory on %s: %v", key, d.addr, err)
			case d.addr != o && err == nil:
				t.Errorf("%s has a directory on %s too (owner %s)", key, d.addr, o)
			}
		}
	}
}

// TestPoolFailoverMovesTenant: with Failover (stateless uses), a down
// daemon's tenant is served by the other daemon instead, in a workspace
// that does not have its files: the split the default prevents.
func TestPoolFailoverMovesTenant(t *testing.T) {
	ctx := context.Background()
	daemons, p, owner := stickySetup(t, failoverPool)
	victim, other := daemons[1], daemons[0]
	victim.kill()
	moved := 0
	for key, o := range owner {
		if o != victim.addr {
			continue
		}
		var err error
		for try := 0; try < 3; try++ { // the first fails on the dead link
			if err = p.With(ctx, key, nil, func(b agentbe.Backend) error {
				_, err := b.Read(ctx, tenantFile(key))
				if remoteAddr(b) != other.addr {
					return fmt.Errorf("served by %s: %v", remoteAddr(b), err)
				}
				if !errors.Is(err, os.ErrNotExist) {
					return fmt.Errorf("its file on the other daemon: %v", err)
				}
				return b.Write(ctx, tenantFile(key), []byte("new"))
			}); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if _, err := os.Stat(filepath.Join(other.root, "tenants", key)); err != nil {
			t.Errorf("%s: nothing written on %s: %v", key, other.addr, err)
		}
		moved++
	}
	if moved == 0 {
		t.Fatal("no tenant on the killed daemon")
	}
}
