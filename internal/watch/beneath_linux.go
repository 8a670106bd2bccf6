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

// openWatchDir checks that dir, inside root, is a directory reached
// without following any link, and returns it as a target for a feed.
// Errors name dir only.
func openWatchDir(root *os.Root, dir string) (*target, error) {
	dir = path.Clean(dir)
	if path.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, "../") {
		return nil, &os.PathError{Op: "watch", Path: dir, Err: wspath.ErrEscape}
	}
	anchor, err := root.Open(".")
	if err != nil {
		return nil, &os.PathError{Op: "watch", Path: dir, Err: errors.Unwrap(err)}
	}
	afd := fdOf(anchor)
	fd, oerr := openBeneath(afd, dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if oerr == unix.ENOTDIR {
		// A link at the end is refused as "not a directory" too.
		if lfd, err := openBeneath(afd, dir, unix.O_PATH); err == nil {
			var st unix.Stat_t
			if unix.Fstat(lfd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				oerr = unix.ELOOP
			}
			unix.Close(lfd)
		}
	}
	if oerr != nil {
		anchor.Close()
		switch oerr {
		case unix.ELOOP:
			oerr = ErrSymlink
		case unix.ENOTDIR:
			oerr = ErrNotDir
		case unix.EXDEV:
			oerr = wspath.ErrEscape
		}
		return nil, &os.PathError{Op: "watch", Path: dir, Err: oerr}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		anchor.Close()
		return nil, &os.PathError{Op: "watch", Path: dir, Err: err}
	}
	return &target{anchor: anchor, dir: dir, dev: st.Dev, ino: st.Ino}, nil
}

// fdOf returns f's descriptor without switching it to blocking mode.
func fdOf(f *os.File) int {
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(x uintptr) { fd = int(x) })
	}
	return fd
}
