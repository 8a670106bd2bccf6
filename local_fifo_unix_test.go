//go:build unix

package agentbe

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFOInWorkspaceNeverHangs: a FIFO planted in the workspace with
// nobody at the other end neither blocks Read, Open nor Touch (the
// operations that open an existing entry in place): reads refuse it as not
// a regular file and Touch fails at once.
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
		_, err := l.Read(ctx, "fifo")
		return err
	}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Read: %v, want ErrNotRegular", err)
	}
	if err := within("Open", func() error {
		rc, err := l.Open(ctx, "fifo")
		if err == nil {
			io.Copy(io.Discard, rc)
			rc.Close()
		}
		return err
	}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open: %v, want ErrNotRegular", err)
	}
	if err := within("Touch", func() error { return l.Touch(ctx, "fifo") }); err == nil {
		t.Error("Touch of a FIFO without a reader succeeded")
	}
}
