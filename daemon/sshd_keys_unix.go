//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"path/filepath"

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
// home: each component is opened relative to its parent's descriptor and
// without following a symbolic link (O_NOFOLLOW on a single component, so
// there is no path for the user to redirect), and ownership and mode are
// set on the opened descriptors (fchown, fchmod), never by name. A link,
// a FIFO, a file with another link to it or owned by someone else than the
// user or root is refused: otherwise a planted ~/.ssh -> /etc would have
// root chmod and chown what it points to.
func writeAuthorizedKeys(home string, uid, gid int, keys []byte) error {
	hfd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("daemon: home %s: %w", home, err)
	}
	defer unix.Close(hfd)
	if err := unix.Mkdirat(hfd, ".ssh", 0o700); err != nil && err != unix.EEXIST {
		return fmt.Errorf("daemon: %s: %w", filepath.Join(home, ".ssh"), err)
	}
	dfd, err := openOwned(hfd, ".ssh", unix.O_RDONLY|unix.O_DIRECTORY, 0, unix.S_IFDIR, uid)
	if err != nil {
		return fmt.Errorf("daemon: %s: %w", filepath.Join(home, ".ssh"), err)
	}
	defer unix.Close(dfd)
	if err := unix.Fchown(dfd, uid, gid); err != nil {
		return fmt.Errorf("daemon: %s: %w", filepath.Join(home, ".ssh"), err)
	}
	if err := unix.Fchmod(dfd, 0o700); err != nil {
		return fmt.Errorf("daemon: %s: %w", filepath.Join(home, ".ssh"), err)
	}
	ak := filepath.Join(home, ".ssh", "authorized_keys")
	// O_NONBLOCK: a FIFO planted there fails at once instead of blocking
	// the start; it is refused below anyway.
	ffd, err := openOwned(dfd, "authorized_keys", unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NONBLOCK|unix.O_NOCTTY,
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

// openOwned opens name in the directory dirfd without following a link
// and returns the descriptor if it is of type kind (unix.S_IFDIR or
// unix.S_IFREG), has one link, and belongs to uid or root.
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
