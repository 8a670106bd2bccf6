//go:build linux

package agentbe

import (
	"errors"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// openat2Unusable is set once openat2 turns out to be missing (an old
// kernel) or forbidden (a container's seccomp profile).
var openat2Unusable atomic.Bool

// openBeneath opens rel (clean, relative) below the directory dir with one
// openat2 call that the kernel confines to dir: with RESOLVE_BENEATH no
// "..", absolute path or symbolic link may resolve outside it, and
// RESOLVE_NO_MAGICLINKS refuses /proc-style links. It replaces os.Root's
// walk (an openat and a close per directory on the way) on the common
// path; measured on a 1 KiB read two levels down, the walk was a quarter
// of read_text_file's cost.
//
// ok is false whenever openat2 does not simply succeed: an absolute link
// (which the jail maps onto the workspace), a missing file, a kernel or
// sandbox without openat2. The caller then takes the os.Root path, which
// gives the exact answer and error; nothing is decided here but success.
func openBeneath(dir *os.File, name, rel string, flags int) (f *os.File, ok bool) {
	if dir == nil || openat2Unusable.Load() {
		return nil, false
	}
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, false
	}
	how := unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	fd := -1
	cerr := rc.Control(func(dfd uintptr) {
		for {
			fd, err = unix.Openat2(int(dfd), rel, &how)
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return nil, false
	}
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			openat2Unusable.Store(true)
		}
		return nil, false
	}
	return os.NewFile(uintptr(fd), name), true
}
