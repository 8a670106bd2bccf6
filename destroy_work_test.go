package agentbe

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbe/agent-backend/internal/sandbox"
)

// TestDestroyKillsRunningExec: a command started before Destroy is killed
// by it (its whole group: the delayed write never happens) and its Exec
// returns a DESTROYED error, in every mode.
func TestDestroyKillsRunningExec(t *testing.T) {
	modes := []Isolation{IsolationNone, IsolationSoftware}
	if _, err := sandbox.NewBwrap(); err == nil || os.Getenv("CI") != "" {
		modes = append(modes, IsolationBwrap)
	}
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			ws := t.TempDir()
			l := newIsoLocal(t, ws, mode, false)
			started := filepath.Join(ws, "started")
			done := make(chan error, 1)
			go func() {
				_, err := l.Exec(context.Background(), "touch started; (sleep 1; echo late > late) & sleep 30", ExecOptions{})
				done <- err
			}()
			waitFor(t, func() bool { _, err := os.Stat(started); return err == nil })
			begin := time.Now()
			mustOK(t, l.Destroy(context.Background()))
			select {
			case err := <-done:
				if CodeOf(err) != CodeDestroyed || !errors.Is(err, ErrDestroyed) {
					t.Fatalf("Exec after Destroy: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Exec still running 10 s after Destroy")
			}
			time.Sleep(time.Until(begin.Add(1500 * time.Millisecond)))
			if _, err := os.Stat(filepath.Join(ws, "late")); err == nil {
				t.Fatal("a command of the destroyed backend wrote to the workspace")
			}
		})
	}
}

// TestDestroyAbortsOpenWriter: a writer open at Destroy fails with
// ErrDestroyed on its next Write and on Close, and leaves nothing behind.
func TestDestroyAbortsOpenWriter(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	l := newIsoLocal(t, ws, IsolationNone, false)
	mustOK(t, l.Write(ctx, "f.txt", []byte("old")))
	w, err := l.Create(ctx, "f.txt")
	mustOK(t, err)
	if _, err := w.Write([]byte("new")); err != nil {
		t.Fatal(err)
	}
	mustOK(t, l.Destroy(ctx))
	if _, err := w.Write([]byte("more")); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Write after Destroy: %v", err)
	}
	if err := w.Close(); !errors.Is(err, ErrDestroyed) || CodeOf(err) != CodeDestroyed {
		t.Errorf("Close after Destroy: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f.txt")); string(b) != "old" {
		t.Errorf("content %q", b)
	}
	ents, _ := os.ReadDir(ws)
	if len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 10 s")
}

// TestDestroyClosesOpenReader: a reader open at Destroy fails with
// ErrDestroyed on its next read; closed readers stay untracked.
func TestDestroyClosesOpenReader(t *testing.T) {
	ctx := context.Background()
	l := newIsoLocal(t, t.TempDir(), IsolationNone, false)
	mustOK(t, l.Write(ctx, "f.txt", []byte("0123456789")))
	for i := 0; i < 100; i++ {
		rc, err := l.Open(ctx, "f.txt")
		mustOK(t, err)
		mustOK(t, rc.Close())
	}
	rc, err := l.Open(ctx, "f.txt")
	mustOK(t, err)
	buf := make([]byte, 4)
	if _, err := rc.Read(buf); err != nil || string(buf) != "0123" {
		t.Fatalf("first read %q %v", buf, err)
	}
	sc, ok := rc.(syscall.Conn)
	if !ok {
		t.Fatal("a Local reader gives no descriptor (sendfile)")
	}
	if _, err := sc.SyscallConn(); err != nil {
		t.Fatalf("SyscallConn: %v", err)
	}
	mustOK(t, l.Destroy(ctx))
	if _, err := rc.Read(buf); !errors.Is(err, ErrDestroyed) || CodeOf(err) != CodeDestroyed {
		t.Errorf("read after Destroy: %v", err)
	}
	if _, err := sc.SyscallConn(); !errors.Is(err, ErrDestroyed) {
		t.Errorf("SyscallConn after Destroy: %v", err)
	}
	if err := rc.Close(); !errors.Is(err, ErrDestroyed) {
		t.Errorf("close after Destroy: %v", err)
	}
}

// TestMemoryCreateIsBounded: a Create larger than MaxReadBytes fails as it
// is written (io.Copy included) and stores nothing.
func TestMemoryCreateIsBounded(t *testing.T) {
	ctx := context.Background()
	m, err := NewMemory(MemoryConfig{MaxReadBytes: 1000})
	mustOK(t, err)
	w, err := m.Create(ctx, "big")
	mustOK(t, err)
	n, err := io.Copy(w, strings.NewReader(strings.Repeat("x", 5000)))
	if !errors.Is(err, ErrTooLarge) || n > 1000 {
		t.Fatalf("copy of 5000 bytes: %d, %v", n, err)
	}
	if err := w.Close(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Close: %v", err)
	}
	if ok, _ := m.Exists(ctx, "big"); ok {
		t.Error("an oversized Create was stored")
	}
	w, _ = m.Create(ctx, "ok")
	io.Copy(w, strings.NewReader(strings.Repeat("y", 1000)))
	mustOK(t, w.Close())
}

// TestMemoryExistsLogsFailures: a missing key is logged as a success
// (false is an answer), an escape or a destroyed backend as a failure.
func TestMemoryExistsLogsFailures(t *testing.T) {
	ctx := context.Background()
	rec := &OpRecorder{}
	m, err := NewMemory(MemoryConfig{Logger: rec, LogMode: LogVerbose})
	mustOK(t, err)
	m.Exists(ctx, "missing")
	m.Exists(ctx, "../escape")
	m.Destroy(ctx)
	m.Exists(ctx, "after")
	var got []bool
	for _, e := range rec.Entries() {
		if e.Op == "exists" {
			got = append(got, e.Success)
		}
	}
	if len(got) != 3 || !got[0] || got[1] || got[2] {
		t.Errorf("exists outcomes logged %v, want [true false false]", got)
	}
}
