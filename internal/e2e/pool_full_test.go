package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	agentbe "github.com/agentbe/agent-backend"
	"github.com/agentbe/agent-backend/daemon"
)

// smallDaemon is a daemon that accepts at most maxSSH SSH connections;
// full, when not nil, is told (once per 503) that it turned one away.
func smallDaemon(t *testing.T, maxSSH int, full chan<- struct{}) *testDaemon {
	t.Helper()
	root := t.TempDir()
	var log slog.Handler = slog.DiscardHandler
	if full != nil {
		log = status503{full}
	}
	srv, err := daemon.New(daemon.Config{RootDir: root, Isolation: agentbe.IsolationNone,
		Logger: slog.New(log), MaxSSHConns: maxSSH,
		SSHHostKeyPath: filepath.Join(root, "..", "hostkey-"+filepath.Base(root))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		srv.Close()
	})
	return &testDaemon{t: t, root: root, addr: ln.Addr().String(), srv: srv}
}

// status503 is a log handler that reports every access-log record of a
// 503 answer.
type status503 struct{ c chan<- struct{} }

func (h status503) Enabled(context.Context, slog.Level) bool { return true }
func (h status503) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h status503) WithGroup(string) slog.Handler            { return h }
func (h status503) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "status" && a.Value.Kind() == slog.KindInt64 && a.Value.Int64() == 503 {
			select {
			case h.c <- struct{}{}:
			default:
			}
			return false
		}
		return true
	})
	return nil
}

// TestRemoteDaemonFull: a daemon at its SSH connection cap is busy, not
// dead: connecting is retried a few times, then fails with ErrDaemonFull
// and its own code, not CONNECTION_CLOSED.
func TestRemoteDaemonFull(t *testing.T) {
	ctx := context.Background()
	d := smallDaemon(t, 1, nil)
	holder := d.remote(t, nil)
	must(t, holder.Connect(ctx))
	r := d.remote(t, func(c *agentbe.RemoteConfig) { c.Reconnect.Disabled = true })
	err := r.Connect(ctx)
	if !errors.Is(err, agentbe.ErrDaemonFull) || errors.Is(err, agentbe.ErrConnectionClosed) {
		t.Fatalf("connect to a full daemon: %v", err)
	}
	if c := agentbe.CodeOf(err); c != agentbe.CodeDaemonFull {
		t.Errorf("code %q", c)
	}
	if !strings.Contains(err.Error(), "daemon full") {
		t.Errorf("error does not say the daemon is full: %v", err)
	}
	if s := r.Status(); s != agentbe.StatusDisconnected {
		t.Errorf("status %v", s)
	}
	// An operation reports the same.
	if _, err := r.Exists(ctx, "x"); !errors.Is(err, agentbe.ErrDaemonFull) {
		t.Errorf("operation on a full daemon: %v", err)
	}
	// A dead daemon is still CONNECTION_CLOSED.
	rd := d.remote(t, func(c *agentbe.RemoteConfig) { c.Port = freeClosedPort(t) })
	if err := rd.Connect(ctx); errors.Is(err, agentbe.ErrDaemonFull) || agentbe.CodeOf(err) != agentbe.CodeConnectionClosed {
		t.Errorf("connect to nothing: %v (%s)", err, agentbe.CodeOf(err))
	}
}

// freeClosedPort returns a loopback port nothing listens on.
func freeClosedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// TestRemoteDaemonFullRetries: a connection slot that frees up after the
// daemon said 503 is taken by the retry (after Retry-After), without the
// caller seeing an error.
func TestRemoteDaemonFullRetries(t *testing.T) {
	ctx := context.Background()
	full := make(chan struct{}, 1)
	d := smallDaemon(t, 1, full)
	holder := d.remote(t, nil)
	must(t, holder.Connect(ctx))
	r := d.remote(t, nil)
	res := make(chan error, 1)
	go func() { res <- r.Connect(ctx) }()
	select {
	case <-full:
	case err := <-res:
		t.Fatalf("connect returned before the daemon said 503: %v", err)
	}
	must(t, holder.Destroy(ctx))
	must(t, <-res)
	must(t, r.Write(ctx, "f", []byte("x")))
}

// TestPoolDaemonFullKeepsKeys: a key whose daemon is full fails with
// ErrDaemonFull and stays on that daemon (it is not marked down, its keys
// do not move); once a slot frees, the key is served there.
func TestPoolDaemonFullKeepsKeys(t *testing.T) {
	ctx := context.Background()
	full := smallDaemon(t, 1, nil)
	other := startDaemon(t, "")
	other.kill()
	other.root = full.root
	other.start()
	p := remotePool(t, []*testDaemon{full, other})
	owner := func(l *agentbe.Lease) string {
		r := l.Backend.(*agentbe.Remote)
		return fmt.Sprint(r.Host(), ":", r.Port())
	}
	var first *agentbe.Lease // holds the full daemon's one slot
	var onOther []string
	busyKey := ""
	for i := 0; busyKey == "" && i < 200; i++ {
		key := fmt.Sprint("t", i)
		l, err := p.Acquire(ctx, key, nil)
		switch {
		case err != nil:
			var se *agentbe.ShardError
			if !errors.Is(err, agentbe.ErrDaemonFull) || agentbe.CodeOf(err) != agentbe.CodeDaemonFull ||
				errors.Is(err, agentbe.ErrConnectionClosed) || !errors.As(err, &se) || se.Shard != full.addr || se.Down {
				t.Fatalf("%s: %v (code %s), want DAEMON_FULL naming %s", key, err, agentbe.CodeOf(err), full.addr)
			}
			busyKey = key
		case owner(l) == full.addr && first == nil:
			first = l
		default:
			if owner(l) != other.addr {
				t.Fatalf("%s on %s while the daemon is full", key, owner(l))
			}
			onOther = append(onOther, key)
			must(t, p.Release(l))
		}
	}
	if busyKey == "" || first == nil {
		t.Fatal("no key landed on the full daemon")
	}
	// Still full: the key fails again rather than moving.
	if _, err := p.Acquire(ctx, busyKey, nil); !errors.Is(err, agentbe.ErrDaemonFull) {
		t.Fatalf("second acquire of %s: %v", busyKey, err)
	}
	// Free the slot (the pool's own backend for the first key).
	must(t, first.Destroy(ctx))
	must(t, p.Release(first))
	l, err := p.Acquire(ctx, busyKey, nil)
	must(t, err)
	if owner(l) != full.addr {
		t.Errorf("%s moved to %s", busyKey, owner(l))
	}
	must(t, l.Write(ctx, "k", []byte("v")))
	must(t, p.Release(l))
	// Keys of the other daemon never moved.
	var wg sync.WaitGroup
	for _, key := range onOther {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := p.Acquire(ctx, key, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if owner(l) != other.addr {
				t.Errorf("%s moved to %s", key, owner(l))
			}
			p.Release(l)
		}()
	}
	wg.Wait()
}
