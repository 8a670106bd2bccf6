//go:build unix

package agentbe

import (
	"context"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFOInWorkspaceNeverHangs: a FIFO planted in the workspace with
// nobody at the other end neither blocks Read, Open nor Touch (the
// operations that open an existing entry in place): reads see it empty and
// Touch fails at once.
func TestFIFOInWorkspaceNeverHangs(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := newTestLocal(t, dir)
	ctx := context.Background()
	within := func(name string, fn func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- fn() }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("%s on a FIFO without a writer blocks", name)
			return nil
		}
	}
	if err := within("Read", func() error {
		data, err := l.Read(ctx, "fifo")
		if err == nil && len(data) != 0 {
			t.Errorf("Read: %q", data)
		}
		return err
	}); err != nil {
		t.Errorf("Read: %v", err)
	}
	if err := within("Open", func() error {
		rc, err := l.Open(ctx, "fifo")
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		if len(data) != 0 {
			t.Errorf("Open: read %q", data)
		}
		return err
	}); err != nil {
		t.Errorf("Open: %v", err)
	}
	if err := within("Touch", func() error { return l.Touch(ctx, "fifo") }); err == nil {
		t.Error("Touch of a FIFO without a reader succeeded")
	}
}
