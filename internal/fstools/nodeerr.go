package fstools

import (
	"errors"
	"io/fs"
	"syscall"
)

// nodeErrnoText holds Node's (libuv's) description of the errno codes a file
// tool can meet; the official server passes these messages through verbatim.
var nodeErrnoText = map[syscall.Errno][2]string{
	syscall.ENOENT:       {"ENOENT", "no such file or directory"},
	syscall.EISDIR:       {"EISDIR", "illegal operation on a directory"},
	syscall.ENOTDIR:      {"ENOTDIR", "not a directory"},
	syscall.EEXIST:       {"EEXIST", "file already exists"},
	syscall.ELOOP:        {"ELOOP", "too many symbolic links encountered"},
	syscall.EINVAL:       {"EINVAL", "invalid argument"},
	syscall.EACCES:       {"EACCES", "permission denied"},
	syscall.EPERM:        {"EPERM", "operation not permitted"},
	syscall.ENOTEMPTY:    {"ENOTEMPTY", "directory not empty"},
	syscall.EXDEV:        {"EXDEV", "cross-device link not permitted"},
	syscall.ENAMETOOLONG: {"ENAMETOOLONG", "name too long"},
	syscall.EBUSY:        {"EBUSY", "resource busy or locked"},
	syscall.ENOSPC:       {"ENOSPC", "no space left on device"},
	syscall.EROFS:        {"EROFS", "read-only file system"},
	syscall.EMFILE:       {"EMFILE", "too many open files"},
	syscall.EIO:          {"EIO", "i/o error"},
	syscall.EFBIG:        {"EFBIG", "file too large"},
	syscall.EDQUOT:       {"EDQUOT", "disk quota exceeded"},
}

// errnoOf extracts the errno an error carries, falling back to the fs
// sentinels for backends (Memory) whose errors carry no errno.
func errnoOf(err error) (syscall.Errno, bool) {
	var en syscall.Errno
	if errors.As(err, &en) {
		return en, true
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT, true
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST, true
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES, true
	}
	return 0, false
}

// nodeError is a file tool failure worded the way Node's fs errors are:
// "CODE: description, syscall 'path'" (or "... 'from' -> 'to'", or with no
// path at all). The paths are always workspace paths.
type nodeError struct {
	code, desc, syscall string
	path, dest          string
	err                 error // the cause, for errors.Is
}

func (e *nodeError) Error() string {
	s := e.code + ": " + e.desc + ", " + e.syscall
	if e.path != "" {
		s += " '" + e.path + "'"
	}
	if e.dest != "" {
		s += " -> '" + e.dest + "'"
	}
	return s
}

func (e *nodeError) Unwrap() error { return e.err }

// toolError is a failure whose message is fixed text (the official
// server's "Access denied - …", "Parent directory does not exist: …", …).
type toolError struct {
	msg string
	err error
}

func (e *toolError) Error() string { return e.msg }
func (e *toolError) Unwrap() error { return e.err }

// nodeErr words err as Node would for syscall on path (and dest for
// rename). Errors carrying no known errno keep their own message (backend
// errors name workspace paths only).
func nodeErr(err error, syscall, path, dest string) error {
	if err == nil {
		return nil
	}
	var ne *nodeError
	var te *toolError
	if errors.As(err, &ne) || errors.As(err, &te) {
		return err
	}
	if en, ok := errnoOf(err); ok {
		if t, ok := nodeErrnoText[en]; ok {
			return &nodeError{code: t[0], desc: t[1], syscall: syscall, path: path, dest: dest, err: err}
		}
	}
	return &toolError{msg: err.Error(), err: err}
}

// isErrno reports whether err carries errno en (or its fs sentinel).
func isErrno(err error, en syscall.Errno) bool {
	got, ok := errnoOf(err)
	return ok && got == en
}

// eisdirRead is what Node reports when a directory is read as a file.
func eisdirRead(err error) error {
	return &nodeError{code: "EISDIR", desc: "illegal operation on a directory", syscall: "read", err: err}
}
