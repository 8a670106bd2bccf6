package watch

import (
	"errors"
	"os"
	"path"
	"strings"
	"sync/atomic"

	"github.com/agentbe/agent-backend/internal/wspath"
	"golang.org/x/sys/unix"
)

// openat2Unusable is set once openat2 turns out to be missing (an old
// kernel) or forbidden (a seccomp profile); openBeneath then walks.
var openat2Unusable atomic.Bool

// openBeneath opens rel (clean, relative, "." for dirfd itself) below the
// directory dirfd, following no symbolic link on the way or at the end:
// the kernel refuses one with ELOOP (or ENOTDIR for a link where a
// directory is needed), and refuses ".." out of dirfd.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	flags |= unix.O_CLOEXEC | unix.O_NOFOLLOW
	if !openat2Unusable.Load() {
		how := unix.OpenHow{
			Flags:   uint64(flags),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for tries := 0; ; tries++ {
			fd, err := unix.Openat2(dirfd, rel, &how)
			switch {
			case err == nil:
				return fd, nil
			case err == unix.EINTR, err == unix.EAGAIN && tries < 8: // EAGAIN: a rename raced the lookup
				continue
			case err == unix.ENOSYS, err == unix.EPERM, err == unix.E2BIG:
				openat2Unusable.Store(true)
			default:
				return -1, err
			}
			break
		}
	}
	return walkBeneath(dirfd, rel, flags)
}

// walkBeneath is openBeneath one element at a time, for kernels without
// openat2.
func walkBeneath(dirfd int, rel string, flags int) (int, error) {
	if rel == "." {
		return unix.Openat(dirfd, ".", flags, 0)
	}
	elems := strings.Split(rel, "/")
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for i, el := range elems {
		if el == ".." || el == "" || el == "." {
			return -1, unix.EXDEV
		}
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(elems)-1 {
			f = flags
		}
		fd, err := unix.Openat(cur, el, f, 0)
		if err == unix.ENOTDIR {
			var st unix.Stat_t
			if unix.Fstatat(cur, el, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = fd
	}
	fd := cur
	cur = dirfd
	return fd, nil
}

// openWatchDir opens dir inside root for a feed, following no link, and
// returns it with its device and inode numbers. Errors name dir only.
func openWatchDir(root *os.Root, dir string) (*os.File, uint64, uint64, error) {
	dir = path.Clean(dir)
	if path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: wspath.ErrEscape}
	}
	rf, err := root.Open(".")
	if err != nil {
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: errors.Unwrap(err)}
	}
	defer rf.Close()
	rc, err := rf.SyscallConn()
	if err != nil {
		return nil, 0, 0, err
	}
	fd := -1
	var oerr error
	rc.Control(func(rfd uintptr) {
		fd, oerr = openBeneath(int(rfd), dir, unix.O_RDONLY|unix.O_DIRECTORY)
	})
	switch {
	case oerr == unix.ELOOP:
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: ErrSymlink}
	case oerr == unix.ENOTDIR:
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: ErrNotDir}
	case oerr == unix.EXDEV:
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: wspath.ErrEscape}
	case oerr != nil:
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: oerr}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, 0, 0, &os.PathError{Op: "watch", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), st.Dev, st.Ino, nil
}
