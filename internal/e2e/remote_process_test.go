package e2e_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	agentbe "github.com/agentbe/agent-backend"
)

func remoteFollowUntil(t *testing.T, p *agentbe.Process, since uint64, want string) (string, uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got strings.Builder
	found := errors.New("found")
	err := p.Follow(ctx, since, func(e agentbe.OutputEntry) error {
		got.Write(e.Data)
		since = e.Seq
		if strings.Contains(got.String(), want) {
			return found
		}
		return nil
	})
	if err != found {
		t.Fatalf("Follow: %v before %q; got %q", err, want, got.String())
	}
	return got.String(), since
}

func TestRemoteProcesses(t *testing.T) {
	d := startDaemon(t, "tok")
	r := d.remote(t, nil)
	ctx := context.Background()
	p, err := r.StartProcess(ctx, "echo out; echo err >&2; exit 3", agentbe.ProcessOptions{})
	must(t, err)
	in, err := p.Wait(ctx)
	if err != nil || in.Running || in.ExitCode != 3 {
		t.Fatalf("wait = %+v, %v", in, err)
	}
	es, err := p.Output(ctx, 0)
	must(t, err)
	var all string
	for _, e := range es {
		all += string(e.Data)
	}
	if len(es) != 2 || es[0].Seq != 1 || !strings.Contains(all, "out\n") || !strings.Contains(all, "err\n") {
		t.Errorf("output = %+v", es)
	}
	n := 0
	if err := p.Follow(ctx, 0, func(agentbe.OutputEntry) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("follow of an exited process = %v, %d", err, n)
	}

	c, err := r.StartProcess(ctx, "cat", agentbe.ProcessOptions{Args: []string{}})
	must(t, err)
	if _, err := c.WriteContext(ctx, []byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	remoteFollowUntil(t, c, 0, "hello\n")
	if ps, err := r.Processes(ctx); err != nil || len(ps) != 2 {
		t.Errorf("list = %+v, %v", ps, err)
	}
	if err := r.RemoveProcess(ctx, c.ID()); !errors.Is(err, agentbe.ErrProcessRunning) {
		t.Errorf("remove running: %v", err)
	}
	must(t, c.Stop(ctx))
	if in, _ := c.Wait(ctx); in.Running || in.ExitCode != -1 {
		t.Errorf("stopped = %+v", in)
	}
	must(t, r.RemoveProcess(ctx, c.ID()))
	if _, err := r.Process(ctx, c.ID()); !errors.Is(err, agentbe.ErrProcessNotFound) {
		t.Errorf("removed: %v", err)
	}
	if _, err := r.StartProcess(ctx, "rm -rf /", agentbe.ProcessOptions{}); !errors.Is(err, agentbe.ErrDangerous) {
		t.Errorf("dangerous: %v", err)
	}

	// PTY with resize.
	sh, err := r.StartProcess(ctx, "sh", agentbe.ProcessOptions{Args: []string{"-i"}, TTY: true, Cols: 70, Rows: 20})
	must(t, err)
	sh.WriteContext(ctx, []byte("stty size\n"))
	_, seq := remoteFollowUntil(t, sh, 0, "20 70")
	must(t, sh.Resize(ctx, 90, 30))
	sh.WriteContext(ctx, []byte("stty size\n"))
	remoteFollowUntil(t, sh, seq, "30 90")
	must(t, sh.Kill(ctx))
}

// TestRemoteProcessScopes: a Remote scope's processes are invisible to
// another scope and to the root.
func TestRemoteProcessScopes(t *testing.T) {
	d := startDaemon(t, "tok")
	r := d.remote(t, nil)
	ctx := context.Background()
	a, _ := r.Scope("a", agentbe.ScopeOptions{})
	b, _ := r.Scope("b", agentbe.ScopeOptions{})
	p, err := a.StartProcess(ctx, "cat", agentbe.ProcessOptions{})
	must(t, err)
	defer p.Kill(ctx)
	for name, x := range map[string]agentbe.ProcessRunner{"b": b, "root": r} {
		if ps, _ := x.Processes(ctx); len(ps) != 0 {
			t.Errorf("%s lists %+v", name, ps)
		}
		if _, err := x.Process(ctx, p.ID()); !errors.Is(err, agentbe.ErrProcessNotFound) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ps, _ := a.Processes(ctx); len(ps) != 1 {
		t.Errorf("a lists %+v", ps)
	}
}

// TestRemoteProcessReattach: every connection to the daemon is cut while a
// Follow streams (as when the client's network dies); Follow re-attaches
// from its last sequence and delivers everything, in order, once.
func TestRemoteProcessReattach(t *testing.T) {
	d := startDaemon(t, "tok")
	r := d.remote(t, nil)
	ctx := context.Background()
	p, err := r.StartProcess(ctx, "cat", agentbe.ProcessOptions{})
	must(t, err)
	write := func(s string) {
		for i := 0; ; i++ {
			_, err := p.WriteContext(ctx, []byte(s))
			if err == nil {
				return
			}
			if !errors.Is(err, agentbe.ErrConnectionClosed) || i > 20 {
				t.Fatalf("write %q: %v", s, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var mu sync.Mutex
	var got strings.Builder
	var seqs []uint64
	seen := func() string { mu.Lock(); defer mu.Unlock(); return got.String() }
	done := make(chan error, 1)
	go func() {
		done <- p.Follow(ctx, 0, func(e agentbe.OutputEntry) error {
			mu.Lock()
			defer mu.Unlock()
			got.Write(e.Data)
			seqs = append(seqs, e.Seq)
			return nil
		})
	}()
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !strings.HasSuffix(seen(), want); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %q: got %q", want, seen())
			}
		}
	}
	for i, w := range []string{"one\n", "two\n", "three\n"} {
		write(w)
		waitFor(w)
		if i < 2 {
			d.dropConns() // the stream breaks mid-way
			write("gap" + w)
		}
	}
	must(t, p.Kill(ctx))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Follow: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Follow did not end with the process")
	}
	if want := "one\ngapone\ntwo\ngaptwo\nthree\n"; got.String() != want {
		t.Errorf("read %q, want %q", got.String(), want)
	}
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Errorf("sequences %v", seqs)
			break
		}
	}
}
