//go:build linux

package sftpjail

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// splicePipeSize is the capacity asked for the session's splice pipe. A
// pipe holds one page reference per slot, and a READ of maxData bytes at an
// unaligned offset spans 65 pages: 512 KiB (128 slots) takes any READ
// whole.
const splicePipeSize = 512 << 10

// sendBufferSize is what the session asks for its output's buffer (the
// kernel caps it at net.core.wmem_max, or for a pipe at fs.pipe-max-size):
// with room for several READ replies queued, the client never waits for
// the server between two of them.
const sendBufferSize = 4 << 20

// splicer sends the data of READ replies from the file to the session's
// output with splice(2): page-cache pages go through a pipe into the
// output without being copied into user space and out again, which is
// most of the work of a READ served from a pipe or socket.
//
// WRITE data is not spliced the other way (input to pipe to file): the
// page-cache copy is most of its cost either way, and measured against
// reading it into a buffer it was slower.
type splicer struct {
	out    syscall.RawConn
	pr, pw int // pipe, both ends blocking; empty between requests
	hdr    []byte
}

// newSplicer returns a splicer writing to w, or nil when w is not a file
// descriptor (a pipe or socket) or no pipe can be made. It also grows w's
// buffer, so replies queue up while the client catches up.
func newSplicer(w io.Writer) *splicer {
	out := rawConn(w)
	if out == nil {
		return nil
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil
	}
	if n, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, splicePipeSize); err != nil || n < splicePipeSize {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil
	}
	out.Control(func(fd uintptr) { growSendBuffer(int(fd)) })
	return &splicer{out: out, pr: p[0], pw: p[1], hdr: make([]byte, 0, 13)}
}

// rawConn returns the descriptor behind v when v is a file or a socket.
// Concrete types only: a wrapper that embeds a file but writes elsewhere
// (the read end of a pipe pair, say) has the method too.
func rawConn(v any) syscall.RawConn {
	var sc syscall.Conn
	switch v := v.(type) {
	case *os.File:
		sc = v
	case *net.UnixConn:
		sc = v
	case *net.TCPConn:
		sc = v
	default:
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

func (sp *splicer) close() {
	syscall.Close(sp.pr)
	syscall.Close(sp.pw)
}

// growSendBuffer raises the send buffer of a socket, or the capacity of a
// pipe, to sendBufferSize when it is smaller. Failures leave it as it is.
func growSendBuffer(fd int) {
	n, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	if err == nil {
		if n < sendBufferSize {
			syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, sendBufferSize)
		}
		return
	}
	if n, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0); err == nil && n < sendBufferSize {
		// Beyond fs.pipe-max-size an unprivileged process gets EPERM: ask
		// for the largest size allowed without privilege instead.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, sendBufferSize); err != nil {
			if b, err := os.ReadFile("/proc/sys/fs/pipe-max-size"); err == nil {
				if max, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil && max > n {
					unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, max)
				}
			}
		}
	}
}

// spliceRead serves READ on a regular file by splicing, writing the reply
// itself. It reports false, having sent nothing, when the file cannot be
// spliced from; the caller then reads it the ordinary way.
func (s *session) spliceRead(id uint32, h *handle, off uint64, n int) bool {
	sp := s.spl
	if off > 1<<62 {
		return false
	}
	rc, err := h.f.SyscallConn()
	if err != nil {
		return false
	}
	start := time.Now()
	got := 0
	var rerr error
	rc.Control(func(fd uintptr) {
		o := int64(off)
		for got < n {
			// Nonblocking on the pipe side only: a READ spanning more
			// pages than the pipe has slots ends short instead of
			// blocking, which the protocol allows.
			m, err := syscall.Splice(int(fd), &o, sp.pw, nil, n-got, unix.SPLICE_F_NONBLOCK)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				if err != syscall.EAGAIN || got == 0 {
					rerr = err
				}
				return
			}
			if m == 0 {
				return
			}
			got += int(m)
		}
	})
	s.noteDuration(time.Since(start))
	if got == 0 {
		switch {
		case rerr == nil:
			s.send(statusPacket(id, statusEOF, "EOF"))
		case rerr == syscall.EINVAL || rerr == syscall.ENOSYS:
			h.regular = false // this file cannot be spliced from: not again
			return false
		default:
			s.send(errPacket(id, "read", h.name, rerr))
		}
		return true
	}

	b := startPacket(sp.hdr, fxpData)
	b = appendU32(b, id)
	b = appendU32(b, uint32(got))
	putU32(b, uint32(len(b)-4+got))
	sp.hdr = b

	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		// The header leaves with any replies still buffered, in one write.
		if _, w.err = w.bw.Write(b); w.err == nil {
			w.err = w.bw.Flush()
		}
	}
	if w.err == nil {
		w.err = sp.toOutput(got)
	}
	if w.err != nil {
		sp.drain()
	}
	return true
}

// toOutput moves n bytes from the pipe to the output. An output that
// cannot be spliced to (a terminal, say) gets them copied instead.
func (sp *splicer) toOutput(n int) error {
	var serr error
	err := sp.out.Write(func(fd uintptr) bool {
		for n > 0 {
			m, err := syscall.Splice(sp.pr, nil, int(fd), nil, n, 0)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false // wait until the output is writable
			case err != nil:
				serr = err
				return true
			}
			n -= int(m)
		}
		return true
	})
	if err == nil {
		err = serr
	}
	if errors.Is(err, syscall.EINVAL) {
		return sp.copyOutput(n)
	}
	return err
}

// copyOutput moves n bytes from the pipe to the output through a buffer.
func (sp *splicer) copyOutput(n int) error {
	bp := getBuf()
	defer putBuf(bp)
	buf := (*bp)[:cap(*bp)]
	for n > 0 {
		m, err := syscall.Read(sp.pr, buf[:min(n, len(buf))])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if m == 0 {
			return io.ErrUnexpectedEOF
		}
		n -= m
		if err := writeAll(sp.out, buf[:m]); err != nil {
			return err
		}
	}
	return nil
}

func writeAll(out syscall.RawConn, p []byte) error {
	var werr error
	err := out.Write(func(fd uintptr) bool {
		for len(p) > 0 {
			m, err := syscall.Write(int(fd), p)
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return false
			case err != nil:
				werr = err
				return true
			}
			p = p[m:]
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return err
}

// drain empties the pipe after a failed write, so nothing stale precedes
// a later reply (the session ends on a write error, but stay tidy).
func (sp *splicer) drain() {
	var buf [4096]byte
	syscall.SetNonblock(sp.pr, true)
	defer syscall.SetNonblock(sp.pr, false)
	for {
		if n, err := syscall.Read(sp.pr, buf[:]); n <= 0 || err != nil {
			return
		}
	}
}
