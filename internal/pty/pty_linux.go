//go:build linux

// Package pty allocates pseudo-terminals (no cgo) for the processes the
// root package starts in PTY mode.
package pty

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Supported reports whether this platform can allocate a pty.
const Supported = true

// Open allocates a pseudo-terminal from /dev/ptmx: the master, non-blocking
// so that closing it ends a pending Read, and the slave, opened through
// TIOCGPTPEER (or /dev/pts/N on older kernels) without becoming anyone's
// controlling terminal.
func Open() (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER,
		uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
		if err != nil {
			unix.Close(mfd)
			return nil, nil, fmt.Errorf("pty number: %w", err)
		}
		fd, err := unix.Open("/dev/pts/"+strconv.Itoa(n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(mfd)
			return nil, nil, fmt.Errorf("open pty slave: %w", err)
		}
		sfd = uintptr(fd)
	}
	if err := unix.SetNonblock(mfd, true); err != nil {
		unix.Close(mfd)
		unix.Close(int(sfd))
		return nil, nil, err
	}
	return os.NewFile(uintptr(mfd), "/dev/ptmx"), os.NewFile(sfd, "pty-slave"), nil
}

// SetSize applies a terminal size (columns, rows; each clamped to
// 0..65535, where 0 is the kernel's "unknown", as SSH's pty-req sends it).
func SetSize(f *os.File, cols, rows int) error {
	ws := &unix.Winsize{Col: clamp(cols), Row: clamp(rows)}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) { ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) }); err != nil {
		return err
	}
	return ierr
}

// ForegroundGroup returns the terminal's foreground process group (in
// this process's PID namespace), or 0 when there is none.
func ForegroundGroup(master *os.File) int {
	rc, err := master.SyscallConn()
	if err != nil {
		return 0
	}
	pg := 0
	_ = rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); err == nil {
			pg = v
		}
	})
	return pg
}

func clamp(v int) uint16 {
	switch {
	case v < 0:
		return 0
	case v > 0xffff:
		return 0xffff
	}
	return uint16(v)
}
