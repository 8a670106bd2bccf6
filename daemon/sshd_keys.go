package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/agentbe/agent-backend/internal/wspath"
	"golang.org/x/sys/unix"
)

// ErrKeysLink is wrapped by the error of a conventional-SSH start that
// found a symbolic link, or anything but a directory or a regular file of
// the user's, where ~/.ssh or ~/.ssh/authorized_keys goes.
var ErrKeysLink = errors.New("daemon: refusing to follow a link or special file in the user's ~/.ssh")

// writeAuthorizedKeys appends keys to home/.ssh/authorized_keys, creating
// .ssh (0700) and the file (0600) where missing, and hands both to uid:gid.
//
// It runs as root in a directory the user owns, so it trusts no name below
// home: .ssh is created and opened by the walk that never follows a link
// (wspath.MkdirNoFollow), authorized_keys is opened relative to .ssh's
// descriptor without following a link (O_NOFOLLOW on a single component,
// so there is no path for the user to redirect), and ownership and mode
// are set on the opened descriptors (fchown, fchmod), never by name. A
// link, a FIFO, a file with another link to it or owned by someone else
// than the user or root is refused: otherwise a planted ~/.ssh -> /etc
// would have root chmod and chown what it points to.
func writeAuthorizedKeys(home string, uid, gid int, keys []byte) error {
	hr, err := os.OpenRoot(home)
	if err != nil {
		return fmt.Errorf("daemon: home %s: %w", home, err)
	}
	defer hr.Close()
	dotSSH := filepath.Join(home, ".ssh")
	d, err := openSSHDir(hr, uid)
	if err != nil {
		return fmt.Errorf("daemon: %s: %w", dotSSH, err)
	}
	defer d.Close()
	if err := d.Chown(uid, gid); err != nil {
		return fmt.Errorf("daemon: %s: %w", dotSSH, err)
	}
	if err := d.Chmod(0o700); err != nil {
		return fmt.Errorf("daemon: %s: %w", dotSSH, err)
	}
	ak := filepath.Join(dotSSH, "authorized_keys")
	// O_NONBLOCK: a FIFO planted there fails at once instead of blocking
	// the start; it is refused below anyway.
	ffd, err := openOwned(int(d.Fd()), "authorized_keys", unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOCTTY,
		0o600, unix.S_IFREG, uid)
	if err != nil {
		return fmt.Errorf("daemon: %s: %w", ak, err)
	}
	defer unix.Close(ffd)
	for b := keys; len(b) > 0; {
		n, err := unix.Write(ffd, b)
		if err != nil {
			return fmt.Errorf("daemon: %s: %w", ak, err)
		}
		b = b[n:]
	}
	if err := unix.Fchown(ffd, uid, gid); err != nil {
		return fmt.Errorf("daemon: %s: %w", ak, err)
	}
	if err := unix.Fchmod(ffd, 0o600); err != nil {
		return fmt.Errorf("daemon: %s: %w", ak, err)
	}
	return nil
}

// openSSHDir creates (0700) and opens .ssh in home without following a
// link, and returns it if it is a directory that belongs to uid or root.
func openSSHDir(home *os.Root, uid int) (*os.File, error) {
	sr, err := wspath.MkdirNoFollow(home, ".ssh", 0o700)
	if errors.Is(err, wspath.ErrLink) || errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("%w (%v)", ErrKeysLink, err)
	}
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	d, err := sr.Open(".")
	if err != nil {
		return nil, err
	}
	fi, err := d.Stat()
	if err != nil {
		d.Close()
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != uint32(uid) && st.Uid != 0 {
		d.Close()
		return nil, fmt.Errorf("%w (mode %v, owner %d)", ErrKeysLink, fi.Mode(), st.Uid)
	}
	return d, nil
}

// openOwned opens name in the directory dirfd without following a link
// and returns the descriptor if it is of type kind (unix.S_IFREG, or
// unix.S_IFDIR), has one link (a regular file), and belongs to uid or root.
func openOwned(dirfd int, name string, flags int, mode uint32, kind uint32, uid int) (int, error) {
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.ENXIO {
		return -1, fmt.Errorf("%w (%v)", ErrKeysLink, err)
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	ok := uint32(st.Mode)&unix.S_IFMT == kind && (st.Uid == uint32(uid) || st.Uid == 0)
	if kind == unix.S_IFREG {
		ok = ok && uint64(st.Nlink) == 1
	}
	if !ok {
		unix.Close(fd)
		return -1, fmt.Errorf("%w (mode %o, owner %d, %d links)", ErrKeysLink, st.Mode, st.Uid, st.Nlink)
	}
	return fd, nil
}
