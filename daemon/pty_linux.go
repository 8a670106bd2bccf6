//go:build linux

package daemon

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY allocates a pseudo-terminal from /dev/ptmx (no cgo): the master,
// non-blocking so that closing it ends a pending Read, and the slave,
// opened through TIOCGPTPEER (or /dev/pts/N on older kernels) without
// becoming anyone's controlling terminal.
func openPTY() (master, slave *os.File, err error) {
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

// setWinsize applies a terminal size to the pty.
func setWinsize(f *os.File, cols, rows uint32) error {
	ws := &unix.Winsize{Col: clampDim(cols), Row: clampDim(rows)}
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

func clampDim(v uint32) uint16 {
	if v == 0 {
		return 0
	}
	if v > 0xffff {
		return 0xffff
	}
	return uint16(v)
}

// ptySupported reports whether this platform can allocate a pty.
const ptySupported = true
