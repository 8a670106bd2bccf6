package agentbe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/testenv"
)

// ctOpenFDs counts this process's open file descriptors.
func ctOpenFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(ents)
}

// ctSettledGoroutines polls until the goroutine count drops to at most
// limit, and returns the last count. Polling only waits for goroutines that
// are already finishing; nothing about speed is asserted.
func ctSettledGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 500 && n > limit; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// ctCheckNoLeak runs round once to warm up (lazily opened runtime files),
// then n times, and fails if file descriptors or goroutines grew.
func ctCheckNoLeak(t *testing.T, n int, round func(i int)) {
	t.Helper()
	round(-1)
	runtime.GC()
	fds := ctOpenFDs(t)
	gs := runtime.NumGoroutine()
	for i := range n {
		round(i)
	}
	runtime.GC()
	if got := ctSettledGoroutines(gs); got > gs {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutines grew from %d to %d:\n%s", gs, got, buf)
	}
	if got := ctOpenFDs(t); got > fds {
		links := []string{}
		ents, _ := os.ReadDir("/proc/self/fd")
		for _, e := range ents {
			l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
			links = append(links, e.Name()+"->"+l)
		}
		t.Errorf("open file descriptors grew from %d to %d after %d rounds: %s", fds, got, n, strings.Join(links, " "))
	}
}

// TestLeakLocalFileOps: reads, writes, streams, abandoned writers and failing
// operations leave no descriptor, goroutine or temporary file behind.
func TestLeakLocalFileOps(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	big := bytes.Repeat([]byte("x"), 256<<10)
	ctCheckNoLeak(t, 30, func(i int) {
		p := fmt.Sprintf("d%d/f.txt", i%3)
		if err := l.Write(ctx, p, big); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Read(ctx, p); err != nil {
			t.Fatal(err)
		}
		rc, err := l.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, rc)
		rc.Close()

		w, err := l.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(big)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		// Abandoned writer: ctx cancelled before Close.
		cctx, cancel := context.WithCancel(ctx)
		w, err = l.Create(cctx, p)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("never committed"))
		cancel()
		if err := w.Close(); !errors.Is(err, context.Canceled) {
			t.Fatalf("abandoned Close = %v", err)
		}

		// Failing operations.
		l.Read(ctx, "missing")
		l.Read(ctx, "../escape")
		l.Write(ctx, "../escape", big)
		l.Write(ctx, p+"/below-a-file", big)
		l.ReadDir(ctx, p)
		l.Open(ctx, "missing")
		l.Remove(ctx, "missing", RemoveOptions{})
		l.Rename(ctx, "missing", "x")
		l.Touch(ctx, "t/t")
		l.Stat(ctx, "t/t")
		l.Exists(ctx, "nope")
		l.ReadDir(ctx, ".")
		l.Mkdir(ctx, "m/n")
		l.Remove(ctx, "m", RemoveOptions{Recursive: true})

		// Through the io/fs view.
		f, err := FS(l).Open(p)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, f)
		f.Close()
		fs.WalkDir(FS(l), ".", func(string, fs.DirEntry, error) error { return nil })
	})
	// No temporary files were left by the abandoned or failed writers.
	filepath.WalkDir(l.RootDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	for i := range 3 {
		got, err := l.Read(ctx, fmt.Sprintf("d%d/f.txt", i))
		if err != nil || !bytes.Equal(got, big) {
			t.Errorf("d%d/f.txt corrupted by an abandoned writer (%d bytes, %v)", i, len(got), err)
		}
	}
}

// TestLeakLocalExec: successful, failing, timed-out and cancelled commands
// leave no descriptor, goroutine or process behind.
func TestLeakLocalExec(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{Isolation: IsolationSoftware})
	marker := testenv.SleepMarker()
	ctCheckNoLeak(t, 8, func(i int) {
		if out, err := l.Exec(ctx, "echo hi", ExecOptions{}); err != nil || string(out) != "hi\n" {
			t.Fatalf("Exec = %q, %v", out, err)
		}
		var sb strings.Builder
		if _, err := l.Exec(ctx, "cat", ExecOptions{Stdin: strings.NewReader("in"), Stdout: &sb}); err != nil || sb.String() != "in" {
			t.Fatalf("streamed Exec = %q, %v", sb.String(), err)
		}
		if _, err := l.Exec(ctx, "echo bad >&2; exit 7", ExecOptions{}); exitErrorOf(err) == nil {
			t.Fatalf("failing Exec = %v", err)
		}
		if _, err := l.Exec(ctx, "   ", ExecOptions{}); !errors.Is(err, ErrEmptyCommand) {
			t.Fatalf("empty Exec = %v", err)
		}
		if _, err := l.Exec(ctx, "true", ExecOptions{Dir: "no/such/dir"}); err == nil {
			t.Fatal("Exec in a missing dir succeeded")
		}
		// A timed-out command with a background grandchild holding the
		// output pipe: the whole group must die.
		_, err := l.Exec(ctx, "sleep "+marker+" & sleep "+marker, ExecOptions{Timeout: 50 * time.Millisecond})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("timed-out Exec = %v", err)
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			time.Sleep(20 * time.Millisecond)
			cancel()
		}()
		_, err = l.Exec(cctx, "sleep "+marker, ExecOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled Exec = %v", err)
		}
		cancel()
	})
	var left []string
	for i := 0; i < 200; i++ { // the kernel reaps killed processes asynchronously
		if left = testenv.ProcessesWith(marker); len(left) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("processes left behind: %q", left)
	}
}

// TestLeakNewLocalDestroy: creating and destroying backends releases their
// workspace handle.
func TestLeakNewLocalDestroy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ctCheckNoLeak(t, 50, func(i int) {
		l, err := NewLocal(LocalConfig{RootDir: dir, Isolation: IsolationNone})
		if err != nil {
			t.Fatal(err)
		}
		l.Write(ctx, "f", []byte("x"))
		s, _ := l.Scope("s", ScopeOptions{})
		s.Write(ctx, "g", []byte("y")) // opens the scope's own root
		l.Destroy(ctx)
		l.Destroy(ctx)
		m, _ := NewMemory(MemoryConfig{})
		m.Write(ctx, "k", nil)
		m.Destroy(ctx)
		if _, err := NewLocal(LocalConfig{RootDir: filepath.Join(dir, "f")}); err == nil {
			t.Fatal("NewLocal on a file succeeded")
		}
	})
}

// TestLeakScopeCycle: a long-lived backend serving many short-lived scopes
// (one per tenant request) must not accumulate their handles: destroying a
// scope has to release what it opened.
func TestLeakScopeCycle(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	ctCheckNoLeak(t, 50, func(i int) {
		s, err := l.Scope(fmt.Sprintf("tenants/t%d", i%5), ScopeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Scope("nested", ScopeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Write(ctx, "f", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(ctx, "nested/f"); err != nil {
			t.Fatal(err)
		}
		n.Destroy(ctx)
		s.Destroy(ctx)
	})
	if n := l.scopes.len(); n != 0 {
		t.Errorf("root still tracks %d destroyed scopes", n)
	}
	if n := len(l.life.closers); n > 1 {
		t.Errorf("root tracks %d closers after all scopes were destroyed, want 1 (its own root)", n)
	}
}
