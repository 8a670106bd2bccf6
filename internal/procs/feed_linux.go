package procs

import (
	"os"

	"golang.org/x/sys/unix"
)

// Feed returns the read end of a pipe that yields data then EOF, for a
// child to read (bwrap's --args and --seccomp). Data larger than a pipe
// buffer is written by a goroutine that ends when the reader has read it
// all or has closed its end (EPIPE).
//
// It is a plain pipe: os.Pipe registers both ends with the netpoller
// (epoll_ctl on creation and close, O_NONBLOCK set and then cleared again
// when the end is handed to the child), which made the two pipes of a
// bwrap launch cost about 55 µs of CPU per Exec (pprof); here it is pipe2,
// write and close.
func Feed(data []byte) (*os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, err
	}
	r := os.NewFile(uintptr(p[0]), "|feed")
	if len(data) <= feedMax {
		err := writeAll(p[1], data)
		unix.Close(p[1])
		if err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
	// The write blocks this goroutine's thread until the reader has taken
	// it all or has closed its end (EPIPE).
	go func() {
		_ = writeAll(p[1], data)
		unix.Close(p[1])
	}()
	return r, nil
}

// feedMax is what Feed writes before the reader starts: one page, the
// capacity every pipe has (a user over pipe-user-pages-soft gets pipes of
// a single page), so the write never blocks.
const feedMax = 4096

// writeAll writes all of data to fd with plain write calls.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}
