//go:build linux

package grep

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFdReaderNonRegular: a file descriptor that turns out not to be a
// regular file (here a FIFO with data waiting, as if swapped in after the
// listing) gives at most one read of data; a regular file is read whole.
func TestFdReaderNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	fd, err := unix.Open(fifo, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(strings.Repeat("x", 40<<10))); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.LimitReader(&fdReader{fd: fd}, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) > 32<<10 {
		t.Fatalf("read %d bytes from a FIFO, want one read's worth (io.ReadAll reads 512 first)", len(got))
	}

	big := strings.Repeat("0123456789abcdef", 20<<10)
	p := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	rfd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	got, err = io.ReadAll(&fdReader{fd: rfd})
	if err != nil || string(got) != big {
		t.Fatalf("regular file: %d bytes, %v", len(got), err)
	}
}
