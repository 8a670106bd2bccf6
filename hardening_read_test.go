package agentbe

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadOfSparseFileIsBounded: Local.Read sized its buffer from Stat, so a
// 64 GiB sparse file (truncate -s 64G, which any agent can run) killed the
// process. Read now fails with an error naming the limit, before
// allocating; Open still streams the file; FS's ReadFile is bounded too.
func TestReadOfSparseFileIsBounded(t *testing.T) {
	ctx := context.Background()
	for _, limit := range []int64{0, 1 << 20} {
		l := ctLocal(t, LocalConfig{MaxReadBytes: limit})
		p := filepath.Join(l.RootDir(), "big")
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, 64<<30); err != nil {
			t.Fatal(err)
		}
		want := limit
		if want == 0 {
			want = DefaultMaxReadBytes
		}
		var err error
		n := allocatedBy(func() { _, err = l.Read(ctx, "big") })
		if !errors.Is(err, ErrTooLarge) || CodeOf(err) != CodeReadFailed ||
			!strings.Contains(err.Error(), "68719476736 bytes exceeds the read limit of "+itoa(want)+" bytes (MaxReadBytes)") {
			t.Errorf("limit %d: Read = %v", limit, err)
		}
		if n > 1<<20 {
			t.Errorf("limit %d: refusing the read allocated %d bytes", limit, n)
		}
		if _, err := fs.ReadFile(FS(l), "big"); !errors.Is(err, ErrTooLarge) {
			t.Errorf("fs.ReadFile = %v", err)
		}
		rc, err := l.Open(ctx, "big")
		if err != nil {
			t.Fatal(err)
		}
		if n, err := io.CopyN(io.Discard, rc, 4<<20); n != 4<<20 || err != nil {
			t.Errorf("Open streams %d bytes: %v", n, err)
		}
		rc.Close()
	}
}

// TestReadLimitBoundary: a file of exactly the limit reads; one byte more
// fails, even when Stat cannot know (a file growing while it is read is
// covered by the same loop).
func TestReadLimitBoundary(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{MaxReadBytes: 1000})
	l.Write(ctx, "ok", make([]byte, 1000))
	l.Write(ctx, "over", make([]byte, 1001))
	if b, err := l.Read(ctx, "ok"); err != nil || len(b) != 1000 {
		t.Errorf("Read at the limit: %d, %v", len(b), err)
	}
	if _, err := l.Read(ctx, "over"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read over the limit: %v", err)
	}
	s, err := l.Scope("sub", ScopeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxReadBytes() != 1000 {
		t.Errorf("scope limit %d", s.MaxReadBytes())
	}
	// readAllLimited with no size hint (a pipe, a procfs file).
	r := io.LimitReader(zeroReader{}, 5000)
	if _, err := readAllLimited(r, -1, 4999); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than the read limit of 4999") {
		t.Errorf("unsized over the limit: %v", err)
	}
	if b, err := readAllLimited(io.LimitReader(zeroReader{}, 5000), -1, 5000); err != nil || len(b) != 5000 {
		t.Errorf("unsized at the limit: %d %v", len(b), err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestMemoryReadLimit: Memory.Read is bounded the same way.
func TestMemoryReadLimit(t *testing.T) {
	ctx := context.Background()
	m, err := NewMemory(MemoryConfig{MaxReadBytes: 10, Initial: map[string][]byte{"a": []byte("0123456789"), "b": []byte("0123456789x")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Read(ctx, "a"); err != nil {
		t.Error(err)
	}
	if _, err := m.Read(ctx, "b"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "limit of 10 bytes") {
		t.Errorf("Read over the limit: %v", err)
	}
	rc, err := m.Open(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(rc); string(b) != "0123456789x" {
		t.Errorf("Open: %q", b)
	}
	if _, err := NewMemory(MemoryConfig{MaxReadBytes: -1}); CodeOf(err) != CodeInvalidConfiguration {
		t.Errorf("negative limit: %v", err)
	}
	if m2, _ := NewMemory(MemoryConfig{}); m2.MaxReadBytes() != DefaultMaxReadBytes {
		t.Errorf("default limit %d", m2.MaxReadBytes())
	}
}

// TestReadRefusesNonRegularFiles: a FIFO held open by a writer blocked Read
// for the writer's lifetime and a character device was read forever. Read
// and Open refuse anything but regular files (and directories, which fail
// with EISDIR when read, as before), at once.
func TestReadRefusesNonRegularFiles(t *testing.T) {
	ctx := context.Background()
	l := ctLocal(t, LocalConfig{})
	fifo := filepath.Join(l.RootDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never leaves
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ln, err := net.Listen("unix", filepath.Join(l.RootDir(), "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	names := []string{"fifo", "sock"}
	if err := syscall.Mknod(filepath.Join(l.RootDir(), "zero"), syscall.S_IFCHR|0o666, 1<<8|5); err == nil {
		names = append(names, "zero")
	} else if os.Getuid() == 0 {
		t.Fatalf("mknod as root: %v", err)
	}
	for _, name := range names {
		done := make(chan error, 2)
		go func() {
			_, err := l.Read(ctx, name)
			done <- err
		}()
		go func() {
			rc, err := l.Open(ctx, name)
			if err == nil {
				rc.Close()
			}
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if name != "sock" && !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s: %v, want ErrNotRegular", name, err)
				}
				if err == nil {
					t.Errorf("%s: read", name)
				}
			case <-time.After(time.Minute):
				t.Fatalf("reading %s blocks", name)
			}
		}
	}
	if _, err := l.Read(ctx, "."); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Read of a directory: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// allocatedBy returns the bytes allocated while fn ran.
func allocatedBy(fn func()) uint64 {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
