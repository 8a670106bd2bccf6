package wspath

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// ErrLink is wrapped (together with ErrEscape) by the errors of
// OpenNoFollow and MkdirNoFollow for a path that goes through a symbolic
// link, or whose directory was replaced while it was opened.
var ErrLink = errors.New("scope path goes through a symbolic link")

// linkError is the error of a walk that met a link.
type linkError struct{ msg string }

func (e *linkError) Error() string   { return e.msg + ": " + ErrLink.Error() }
func (e *linkError) Unwrap() []error { return []error{ErrLink, ErrEscape} }

// OpenNoFollow opens directory rel (clean, relative) below r one component
// at a time, refusing any component that is a symbolic link: whoever can
// write a parent directory (another tenant, a user in their own home) could
// otherwise point it at someone else's files, and os.Root follows links
// that stay inside r. Each component is checked with Lstat, opened, and
// the opened directory compared with what Lstat saw, so a swap between the
// two is refused as well.
//
// This walk is the one rule for every directory the module opens on a
// path somebody else may write: a scope's root, the SFTP server's scope,
// the conventional sshd's ~/.ssh. Errors name rel, never a host path.
func OpenNoFollow(r *os.Root, rel string) (*os.Root, error) {
	cur := r
	closeCur := func() {
		if cur != r {
			cur.Close()
		}
	}
	for _, name := range strings.Split(rel, "/") {
		fi, err := cur.Lstat(name)
		if err != nil {
			closeCur()
			return nil, &fs.PathError{Op: "scope", Path: rel, Err: underlying(err)}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			closeCur()
			return nil, &linkError{msg: "scope " + rel}
		}
		if !fi.IsDir() {
			closeCur()
			return nil, &fs.PathError{Op: "scope", Path: rel, Err: syscall.ENOTDIR}
		}
		next, err := cur.OpenRoot(name)
		if err != nil {
			closeCur()
			return nil, &fs.PathError{Op: "scope", Path: rel, Err: underlying(err)}
		}
		closeCur()
		cur = next
		if got, err := cur.Stat("."); err != nil || !os.SameFile(fi, got) {
			cur.Close()
			return nil, &linkError{msg: "scope " + rel + " changed while it was opened"}
		}
	}
	return cur, nil
}

// MkdirNoFollow creates directory rel (clean, relative; "." is r itself)
// below r and its missing parents with mode perm, like MkdirAll but
// refusing, as OpenNoFollow does, any component that is a symbolic link
// (creating a directory must not create directories wherever a planted
// link points), and returns it opened.
func MkdirNoFollow(r *os.Root, rel string, perm fs.FileMode) (*os.Root, error) {
	if rel == "." {
		return r.OpenRoot(".")
	}
	cur := r
	for _, name := range strings.Split(rel, "/") {
		if err := cur.Mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			if cur != r {
				cur.Close()
			}
			return nil, &fs.PathError{Op: "mkdir", Path: rel, Err: underlying(err)}
		}
		next, err := OpenNoFollow(cur, name)
		if cur != r {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// underlying is the innermost cause of a path error (without the path,
// which names a component relative to some root).
func underlying(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
